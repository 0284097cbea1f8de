#!/usr/bin/env bash
# Benchmarks for doctor and lint on a synthetic hybrid cluster (bench/gen).
#
#   bench/run.sh lint   [NODES PODS]   lint on the cluster as files
#   bench/run.sh doctor [NODES PODS]   doctor against the test API server loaded
#                                      with it, beside the two LIST floors
#
# Defaults: 5000 nodes, 150000 pods. Prints wall time, CPU time and peak RSS
# (GNU time). doctor needs the test control plane (hack/testenv/testenv
# build) and loads the objects first (~400 objects/s).
set -euo pipefail

cd "$(dirname "$0")/.."
what=${1:-lint}
nodes=${2:-5000}
pods=${3:-150000}
work=${BENCH_DIR:-${TMPDIR:-/tmp}/hybridctl-bench}
data=$work/cluster-$nodes-$pods
bin=$work/bin
mkdir -p "$bin"

go build -o "$bin/hybridctl" ./cmd/hybridctl
go build -o "$bin/floor" ./bench/floor
if [ ! -d "$data" ]; then
	go run ./bench/gen -o "$data" -nodes "$nodes" -pods "$pods"
fi
fmt='%e s wall, %U s user, %S s sys, %M KB peak RSS'

case $what in
lint)
	echo "lint: $nodes nodes, $pods pods as files ($(du -sh "$data" | cut -f1))"
	/usr/bin/time -f "lint: $fmt" "$bin/hybridctl" lint "$data" --fail-on none >/dev/null
	;;
doctor)
	inner=$work/doctor-inner.sh
	cat >"$inner" <<INNER
#!/usr/bin/env bash
set -euo pipefail
/usr/bin/time -f "floor paginate: $fmt" "$bin/floor" -mode paginate
/usr/bin/time -f "floor cache: $fmt" "$bin/floor" -mode cache
/usr/bin/time -f "doctor: $fmt" "$bin/hybridctl" doctor --fail-on none >/dev/null
INNER
	chmod +x "$inner"
	echo "doctor: $nodes nodes, $pods pods loaded into the test API server"
	/usr/bin/time -f "load + runs: %e s wall" hack/testenv/testenv run --calico --load "$data" -- "$inner"
	;;
*)
	echo "usage: bench/run.sh lint|doctor [NODES PODS]" >&2
	exit 2
	;;
esac
