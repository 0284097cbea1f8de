#!/usr/bin/env bash
# Side-by-side benchmarks. Each row is a Go benchmark that measures
# hybridctl and its floor or peer in the same run, interleaved, and prints
# medians and the ratio; this script runs them and checks the targets.
#
#   bench/run.sh [all|render|lint|doctor]
#
#   render  render 1,000 nodes to disk, beside writing the same files one by
#           one and without fsync                       (target: <= 1 s)
#   lint    hybridctl lint beside kube-score v1.20.0 on the same files, in
#           flow and in block YAML (kubectl get -o yaml), at 15,000, 50,000
#           and 150,000 pods                             (>= 12x, <= 4 s, <= 250 MB)
#   doctor  doctor beside the raw protobuf LIST of pods and nodes (the least
#           any auditor must do), the watch-cache LIST and informer floors,
#           against the test API server loaded with 15,000 and 150,000 pods
#                                                        (<= 1.5x raw, <= 120 MB)
#
# HYBRIDCTL_BENCH_SIZES overrides the sizes ("NODES:PODS ...", default
# "500:15000 1667:50000 5000:150000" for lint, the first and last for
# doctor), HYBRIDCTL_BENCH_RUNS the interleaved runs of each (default 3),
# HYBRIDCTL_BENCH_PROFILE=DIR writes a CPU and a heap profile of each of
# doctor's stages there. kube-score is installed with go install from
# the module proxy into ~/.cache/hybridctl/tools. doctor needs the test
# control plane (hack/testenv/testenv build); loading 150,000 pods takes
# minutes (~400 objects/s unloaded) the first time; the loaded etcd data is
# then kept in ~/.cache/hybridctl/bench-etcd (HYBRIDCTL_BENCH_ETCD_CACHE,
# "off" to load every time) and later runs start on a copy of it. Not part
# of the test command: too long.
set -euo pipefail

cd "$(dirname "$0")/.."
what=${1:-all}
sizes=${HYBRIDCTL_BENCH_SIZES:-500:15000 1667:50000 5000:150000}
doctor_sizes=${HYBRIDCTL_BENCH_SIZES:-500:15000 5000:150000}
runs=${HYBRIDCTL_BENCH_RUNS:-3}
tools=${XDG_CACHE_HOME:-$HOME/.cache}/hybridctl/tools
kube_score_version=v1.20.0
export HYBRIDCTL_KUBE_SCORE=${HYBRIDCTL_KUBE_SCORE:-$tools/kube-score}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "bench/run.sh $what on $(nproc) cores, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

bench() {
	go test -run '^$' -timeout 0 "$@" | tee -a "$out"
}

run_render() {
	bench -bench '^BenchmarkRenderWrite1000Nodes$' -benchtime 3x ./internal/render/
}

run_lint() {
	if [ ! -x "$HYBRIDCTL_KUBE_SCORE" ]; then
		echo "installing kube-score $kube_score_version into $tools"
		GOBIN=$tools go install "github.com/zegl/kube-score/cmd/kube-score@$kube_score_version"
	fi
	for s in $sizes; do
		echo "== lint, ${s%%:*} nodes, ${s##*:} pods"
		HYBRIDCTL_BENCH_NODES=${s%%:*} HYBRIDCTL_BENCH_PODS=${s##*:} \
			bench -bench '^BenchmarkLint$' -benchtime "${runs}x" ./bench/
	done
}

run_doctor() {
	for s in $doctor_sizes; do
		echo "== doctor, ${s%%:*} nodes, ${s##*:} pods"
		HYBRIDCTL_BENCH_NODES=${s%%:*} HYBRIDCTL_BENCH_PODS=${s##*:} \
			bench -bench '^BenchmarkDoctor$' -benchtime "${runs}x" ./bench/
	done
}

case $what in
render) run_render ;;
lint) run_lint ;;
doctor) run_doctor ;;
all)
	run_render
	run_lint
	run_doctor
	;;
*)
	echo "usage: bench/run.sh [all|render|lint|doctor]" >&2
	exit 2
	;;
esac

echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== targets"
# Benchmark lines are "Name-N  runs  value unit  value unit ...".
awk '
function check(name, unit, op, target,   i) {
	for (i = 3; i < NF; i += 2) {
		if ($(i + 1) != unit) continue
		ok = (op == "<=") ? ($i + 0 <= target) : ($i + 0 >= target)
		printf "%-7s %-28s %-34s %-14s %9.3f %s %s\n", (ok ? "met" : "MISSED"), name, $1, unit, $i, op, target
	}
}
/^BenchmarkRenderWrite/ { check("render 1,000 nodes", "render-s", "<=", 1) }
/^BenchmarkLint/        { check("lint vs kube-score", "x-kube-score", ">=", 12); check("lint", "lint-s", "<=", 4); check("lint (its own process)", "lint-bin-MB", "<=", 250) }
/^BenchmarkDoctor/      { check("doctor vs raw LIST (binaries)", "x-raw-bin", "<=", 1.5); check("doctor vs raw LIST", "x-raw", "<=", 1.5); check("doctor (its own process)", "doctor-bin-MB", "<=", 120) }
' "$out"
