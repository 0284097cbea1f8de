#!/usr/bin/env bash
# `hybridctl check connectivity` against a running lab cluster (docs/e2e.md,
# docs/connectivity.md): the probes are the lab's hello image (it serves on
# :8080 and is its own client), so the tests run for real over the lab's pod
# network. Asserts that the command exits 0, every Linux action passes,
# every Windows action is skipped because the lab has no Windows node,
# pod-to-external is skipped (off by default), nothing was "not run", and
# nothing is left behind. Then two runs with a fault injected for real: every
# probe Service's selector replaced by one that matches nothing (each
# pod-to-service action fails naming the selector), and the probe pods of
# one worker deleted in the middle of the run (a failure says so); both exit
# 1 and leave nothing behind.
#
#   hack/e2e-connectivity.sh --hybridctl BIN --kubeconfig FILE --context NAME \
#       --image IMAGE [--dns-domain DOMAIN] [--kubectl BIN] [--out DIR] [--ready-timeout 5m]
#
# IMAGE is the lab's hello as the cluster pulls it (hack/e2e.sh has it as
# $hello_image, from the demo Deployment). --out keeps connectivity.json,
# connectivity.txt (the table) and connectivity.log (progress) there.
# Exit 0 passed, 1 an assertion failed, 2 usage, 3 could not run.
set -euo pipefail

usage="usage: hack/e2e-connectivity.sh --hybridctl BIN --kubeconfig FILE --context NAME --image IMAGE [--dns-domain DOMAIN] [--kubectl BIN] [--out DIR] [--ready-timeout DURATION]"
hybridctl="" kubeconfig="" context="" image="" kubectl_bin=kubectl out="" ready=5m domain=cluster.local
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || { echo "e2e-connectivity: $1 needs a value ($usage)" >&2; exit 2; }
	case "$1" in
	--hybridctl) hybridctl=$2 ;;
	--kubeconfig) kubeconfig=$2 ;;
	--context) context=$2 ;;
	--image) image=$2 ;;
	--dns-domain) domain=$2 ;;
	--kubectl) kubectl_bin=$2 ;;
	--out) out=$2 ;;
	--ready-timeout) ready=$2 ;;
	*) echo "e2e-connectivity: unknown argument $1 ($usage)" >&2; exit 2 ;;
	esac
	shift 2
done
for v in hybridctl kubeconfig context image; do
	[ -n "${!v}" ] || { echo "e2e-connectivity: --$v is required ($usage)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "e2e-connectivity: jq is missing" >&2; exit 3; }
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

ns="hybridctl-connectivity"
kubectl() { "$kubectl_bin" --kubeconfig "$kubeconfig" --context "$context" --request-timeout 30s "$@"; }
fails=0
check() { # check DESCRIPTION COMMAND...
	if "${@:2}"; then
		printf '   ok   %s\n' "$1"
	else
		printf '   FAIL %s\n' "$1" >&2
		fails=$((fails + 1))
	fi
}

# The command itself; the whole run is bounded (--timeout), and so is the
# wait for images to be pulled on first use.
rc=0
"$hybridctl" check connectivity --kubeconfig "$kubeconfig" --context "$context" \
	--linux-image "$image" --probe-kit hello --dns-domain "$domain" --ready-timeout "$ready" --timeout 15m \
	-n "$ns" -o json >"$out/connectivity.json" 2>"$out/connectivity.log" || rc=$?
jq -r '.tests[] | [.name, .from, .to, .result, (.reason // "")] | @tsv' "$out/connectivity.json" >"$out/connectivity.txt" 2>/dev/null || true
if ! jq -e '.tests | length > 0' "$out/connectivity.json" >/dev/null 2>&1; then
	echo "e2e-connectivity: no report (exit $rc):" >&2
	cat "$out/connectivity.log" >&2
	exit 3
fi
cat "$out/connectivity.txt"

report=$out/connectivity.json
count() { jq "[.tests[] | select($1)] | length" "$report"; }
windows='(.from + .to | test("Windows|win-"))'
check "check connectivity exits 0 (got $rc; progress in $out/connectivity.log)" test "$rc" = 0
check "nothing was 'not run'" test "$(count '.notRun == true')" = 0
check "no action failed" test "$(count '.result == "fail"')" = 0
check "every Linux action passes (pod-to-external aside)" \
	test "$(count "($windows | not) and .name != \"pod-to-external\" and .result != \"pass\"")" = 0
for t in pod-to-pod-same-node pod-to-pod-across-nodes pod-to-service dns-short-name dns-fqdn dns-dotted-name node-to-pod; do
	check "$t passed from Linux" test "$(count "($windows | not) and .name == \"$t\" and .result == \"pass\"")" -ge 1
done
check "every Windows action is skipped: no Windows node in the lab" \
	test "$(count "$windows and (.result != \"skipped\" or (.reason | startswith(\"no Ready, schedulable Windows node\") | not))")" = 0
check "the Windows actions are there (linux-to-windows-pod, windows-to-linux-pod)" \
	test "$(count "$windows and (.name == \"linux-to-windows-pod\" or .name == \"windows-to-linux-pod\")")" = 2
check "pod-to-external skipped (off by default)" \
	test "$(count '.name == "pod-to-external" and .result == "skipped" and (.reason | startswith("off by default"))')" -ge 1
check "the probes ran on two Linux workers" \
	test "$(jq '[.probes[] | select(.os == "linux" and .ready) | .node] | unique | length' "$report")" = 2

# Nothing left: no probe anywhere, the namespaces gone or terminating.
check "no probe pod left" test -z "$(kubectl get pods -A -l app.kubernetes.io/managed-by=hybridctl-check-connectivity -o name)"
check "no probe Service left" test -z "$(kubectl get services -A -l app.kubernetes.io/managed-by=hybridctl-check-connectivity -o name)"
for n in "$ns" "$ns-host"; do
	phase=$(kubectl get namespace "$n" -o jsonpath='{.status.phase}' --ignore-not-found)
	check "namespace $n gone or terminating (${phase:-gone})" test "${phase:-Terminating}" = Terminating
done
nothing_left() { # nothing_left WHAT: the run left no probe, Service or namespace behind
	check "$1: no probe pod left" test -z "$(kubectl get pods -A -l app.kubernetes.io/managed-by=hybridctl-check-connectivity -o name)"
	check "$1: no probe Service left" test -z "$(kubectl get services -A -l app.kubernetes.io/managed-by=hybridctl-check-connectivity -o name)"
}
# faulty NAME TRIGGER ACTION ARGS...: check connectivity with ARGS in the
# background; when its progress shows TRIGGER, ACTION runs (the fault).
faulty() {
	local name=$1 trigger=$2 action=$3
	shift 3
	"$hybridctl" check connectivity --kubeconfig "$kubeconfig" --context "$context" \
		--linux-image "$image" --probe-kit hello --dns-domain "$domain" --ready-timeout "$ready" --timeout 15m \
		-n "$ns" -o json "$@" >"$out/$name.json" 2>"$out/$name.log" &
	local pid=$! fired=0
	for _ in $(seq 3000); do
		if grep -q "$trigger" "$out/$name.log" 2>/dev/null; then
			"$action" && fired=1
			break
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	frc=0
	wait "$pid" || frc=$?
	check "$name: the fault was injected" test "$fired" = 1
	report=$out/$name.json
	jq -r '.tests[] | select(.result == "fail") | "     \(.name) \(.from) → \(.to): \(.reason)"' "$report" 2>/dev/null || true
}

# A Service whose selector matches nothing: every probe Service is broken as
# soon as it exists, before the probes are ready, so no action can see it
# working.
break_services() {
	local s list ok
	for _ in $(seq 50); do # the list may still show an earlier run's Service, going away
		list=$(kubectl -n "$ns" get services -l app.kubernetes.io/managed-by=hybridctl-check-connectivity \
			-o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}')
		ok=0
		for s in $list; do
			kubectl -n "$ns" patch service "$s" --type json \
				-p '[{"op":"replace","path":"/spec/selector","value":{"hybridctl-e2e":"matches-nothing"}}]' >/dev/null 2>&1 && ok=$((ok + 1))
		done
		[ -n "$list" ] && [ "$ok" = "$(wc -w <<<"$list")" ] && return 0
		sleep 0.2
	done
	return 1
}
faulty broken-service "probe pods and" break_services --tests pod-to-service
linux_svc='.name == "pod-to-service" and ((.from + .to) | test("Windows|win-") | not)'
check "broken Service: exit 1 (got $frc)" test "$frc" = 1
check "broken Service: every Linux pod-to-service action fails" \
	test "$(count "$linux_svc and .result != \"fail\"")" = 0
check "broken Service: each failure names the selector that matches nothing" \
	test "$(count "$linux_svc and ((.reason // \"\") | contains(\"selector hybridctl-e2e=matches-nothing matches no ready pod\") | not)")" = 0
check "broken Service: nothing 'not run'" test "$(count '.notRun == true')" = 0
nothing_left "broken Service"

# A probe pod deleted in the middle of the run: once the probes are ready,
# every probe pod on one worker is deleted; the actions that use them
# afterwards fail and say so.
victim_node=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[-1:].metadata.name}')
delete_probes() {
	local pods
	pods=$(kubectl get pods -A -l app.kubernetes.io/managed-by=hybridctl-check-connectivity --field-selector "spec.nodeName=$victim_node" \
		-o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}')
	[ -n "$pods" ] || return 1
	for p in $pods; do
		kubectl -n "${p%%/*}" delete pod "${p#*/}" --wait=false --grace-period=1 >/dev/null || return 1
	done
}
faulty deleted-pod "probe pods ready" delete_probes
check "deleted pod: exit 1 (got $frc)" test "$frc" = 1
check "deleted pod: a failure says a probe pod was deleted during the run" \
	test "$(count '.result == "fail" and (.reason | test("pod .* (was|was being) deleted during the run"))')" -ge 1
check "deleted pod: nothing 'not run'" test "$(count '.notRun == true')" = 0
nothing_left "deleted pod"

[ "$fails" = 0 ] || { echo "e2e-connectivity: $fails assertions failed (reports in $out)" >&2; exit 1; }
