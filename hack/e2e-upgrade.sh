#!/usr/bin/env bash
# End-to-end test of hybridctl upgrade (docs/e2e.md, docs/upgrade.md):
# applies the lab at v1.36.3 (examples/lab-linux-v1.36.yaml), runs a
# Deployment of two replicas behind a Service (with a PodDisruptionBudget)
# and a client on the control plane that requests it every second, then
# upgrades to v1.37.2 with one worker's upgrade killed halfway and a second
# run that resumes it, and asserts: every kubelet and the API server at
# v1.37.2, kube-proxy's image v1.37.2, no node cordoned, the client's
# failures under 10% and none once the Deployment is available again after
# the upgrade; a second upgrade runs no
# step; apply afterwards changes nothing; doctor's findings are the lab's
# usual ones. It prints each node's upgrade time and the client's longest
# run of failures.
#
#   hack/e2e-upgrade.sh [-f SPEC] [--to VERSION] [--no-build]
#
# Root and Linux only; HYBRIDCTL_E2E=skip skips it. Exit 0 passed, 1 an
# assertion failed, 2 usage, 3 the lab could not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# One brace group: bash reads the whole script before running it.
{

spec=examples/lab-linux-v1.36.yaml
to=v1.37.2
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-f) [ $# -ge 2 ] || { echo "e2e-upgrade: -f needs a spec" >&2; exit 2; }; spec=$2; shift 2 ;;
	--to) [ $# -ge 2 ] || { echo "e2e-upgrade: --to needs a version" >&2; exit 2; }; to=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "e2e-upgrade: unknown argument $1 (usage: hack/e2e-upgrade.sh [-f SPEC] [--to VERSION] [--no-build])" >&2; exit 2 ;;
	esac
done

e2e_name=e2e-upgrade
e2e_tools=""
# shellcheck source=hack/e2e-lib.sh
. hack/e2e-lib.sh

build_hybridctl
plan=$("$hybridctl" plan -f "$spec" -o json)
from=$(jq -r .kubernetesVersion <<<"$plan")
# The upgraded spec: the same file at the new version (same cluster name,
# so the same lab).
target="$out/upgraded.yaml"
sed "s/^\(  kubernetesVersion: \)$from\$/\1$to/" "$spec" >"$target"
check "the upgraded spec is at $to" test "$("$hybridctl" plan -f "$target" -o json | jq -r .kubernetesVersion)" = "$to"
build_releases "$from" "$to"
kubectl_bin=$("$lab" path --kubernetes-version "$to" kubectl)

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local rc=$?
	say "lab down (after exit $rc); logs in $out"
	"$lab" down -f "$spec" || rc=3
	exit "$rc"
}
trap cleanup EXIT

stage "lab up at $from"
"$lab" down -f "$spec" >/dev/null 2>&1 || true
"$lab" up -f "$spec"
stage "images of $from and $to into the lab registry; both bundles"
"$lab" push -f "$spec" >"$out/push-from.txt"
"$lab" push -f "$target" >"$out/push-to.txt"
"$lab" bundle -f "$spec" >/dev/null
"$lab" bundle -f "$target" >/dev/null
read -r -a flags <<<"$("$lab" flags -f "$spec")"
read -r -a to_flags <<<"$("$lab" flags -f "$target" --for upgrade)"
read -r -a to_apply_flags <<<"$("$lab" flags -f "$target")"
kubeconfig=$(printf '%s\n' "${flags[@]}" | sed -n '/^--kubeconfig$/{n;p}')
cluster=$(jq -r .cluster <<<"$plan")
kctl() { "$kubectl_bin" --kubeconfig "$kubeconfig" --context "$cluster" "$@"; }
key=$(printf '%s\n' "${flags[@]}" | sed -n '/^--identity$/{n;p}')
known=$(printf '%s\n' "${flags[@]}" | sed -n '/^--known-hosts$/{n;p}')
node_ssh() {
	local addr user
	addr=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan")
	user=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .ssh.user' <<<"$plan")
	ssh -q -i "$key" -o UserKnownHostsFile="$known" -o StrictHostKeyChecking=yes -o BatchMode=yes \
		-o ConnectTimeout=10 -l "$user" -- "$addr" "sudo sh -c $(printf %q "$2")"
}
mapfile -t nodes < <(jq -r '.nodes[].name' <<<"$plan")
mapfile -t workers < <(jq -r '.nodes[] | select(.role == "worker") | .name' <<<"$plan")
victim=${workers[-1]}
mapfile -t control_planes < <(jq -r '.nodes[] | select(.role == "control-plane") | .name' <<<"$plan")

stage "apply at $from (the lab's pod network instead of Calico)"
before_calico=$("$hybridctl" apply --help | sed -n 's/^ *[0-9][0-9]*\. \([a-z-]*\) .*/\1/p' | sed '/^calico$/,$d' | paste -sd, -)
"$hybridctl" apply -f "$spec" "${flags[@]}" --only "$before_calico" -o json >"$out/apply-1.json" || true
"$lab" podnet -f "$spec" | kctl apply -f - >/dev/null
run_rc "$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready -o json >"$out/apply-2.json"
check "the cluster at $from is applied (exit $rc)" test "$rc" = 0
[ "$rc" = 0 ] || { events <"$out/apply-2.json" | tail -n 20; exit 1; }

stage "a Deployment of two behind a Service, and a client on the control plane"
image=$(kctl -n demo get deployment hello -o jsonpath='{.spec.template.spec.containers[0].image}')
kctl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: e2e-upgrade}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-upgrade}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 5
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: web
        image: "$image"
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: e2e-upgrade}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: e2e-upgrade}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOF
kctl -n e2e-upgrade rollout status deployment/web --timeout=5m >/dev/null
web_ip=$(kctl -n e2e-upgrade get svc web -o jsonpath='{.spec.clusterIP}')
# The client is a DaemonSet on the control plane: drains leave it, so it
# sees the whole upgrade.
kctl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: client, namespace: e2e-upgrade}
spec:
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      nodeSelector: {node-role.kubernetes.io/control-plane: "", kubernetes.io/os: linux}
      tolerations: [{operator: Exists}]
      containers:
      - {name: client, image: "$image", args: [poll, "http://$web_ip/"]}
EOF
kctl -n e2e-upgrade rollout status daemonset/client --timeout=5m >/dev/null
sleep 5
check "the client reaches the Service before the upgrade" sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' --context '$cluster' -n e2e-upgrade logs daemonset/client | grep -q ' ok$'"

stage "upgrade to $to, $victim's upgrade killed halfway"
# On the victim, as soon as the upgrade runs its prepare.sh (after kubeadm
# upgrade node and the drain: the node is cordoned), that script is killed.
# shellcheck disable=SC2016 # runs on the node
node_ssh "$victim" 'for _ in $(seq 6000); do
	if pkill -KILL -f "^bash /var/lib/hybridctl/prepare.sh" && [ -e /var/lib/hybridctl/upgrade.sh ]; then echo killed; exit 0; fi
	sleep 0.1
done; exit 1' >"$out/kill.txt" 2>&1 &
killer=$!
upgrade_start=$(date +%s)
set +e
"$hybridctl" upgrade -f "$target" "${to_flags[@]}" --skip-phases calico,calico-ready --yes -o json >"$out/upgrade-1.json"
rc1=$?
kill "$killer" 2>/dev/null
wait "$killer"
killed=$?
set -e
events <"$out/upgrade-1.json"
# The killer says so once it has killed; its own exit status can be
# TERM's when the upgrade fails before its SSH session has closed.
check "$victim's prepare.sh was killed during its upgrade (killer exit $killed)" grep -qx killed "$out/kill.txt"
check "the first upgrade fails (exit 1) for $victim only" \
	test "$rc1:$(jq -r 'select(.type == "fail") | .host' "$out/upgrade-1.json" | sort -u | paste -sd, -)" = "1:$victim"
# The new kubelet restarts every static pod of the control plane (a new
# minor defaults new fields, so each manifest hashes differently); the
# control plane's step ends only once they run again.
# shellcheck disable=SC2317 # called through check
waited_for_static_pods() {
	# shellcheck disable=SC2016 # jq's own variables
	jq -e --arg n "$1" -s 'any(.[]; .type == "progress" and .host == $n and (.reason | test("^the [1-9][0-9]* static pods of " + $n + " Ready under its new kubelet")))' "$out/upgrade-1.json" >/dev/null
}
for n in "${control_planes[@]}"; do
	check "$n's step waited for its static pods under the new kubelet" waited_for_static_pods "$n"
done
check "$victim is left cordoned and marked" test \
	"$(kctl get node "$victim" -o json | jq -r '"\(.spec.unschedulable) \(.metadata.annotations["hybridctl.dev/upgrade-cordoned"])"')" = "true true"

stage "upgrade again: $victim resumes"
set +e
"$hybridctl" upgrade -f "$target" "${to_flags[@]}" --skip-phases calico,calico-ready --yes -o json >"$out/upgrade-2.json"
rc2=$?
set -e
upgrade_end=$(date +%s)
events <"$out/upgrade-2.json"
check "the second upgrade completes (exit $rc2)" test "$rc2" = 0
check "it upgraded $victim only" test \
	"$(jq -r 'select(.type == "done" and (.phase | startswith("upgrade-"))) | .host' "$out/upgrade-2.json" | paste -sd, -)" = "$victim"

stage "assertions"
nodes_json=$(kctl get nodes -o json)
for n in "${nodes[@]}"; do
	check "$n: kubelet $to, Ready, schedulable, unmarked" test "$(jq -r --arg n "$n" '.items[] | select(.metadata.name == $n) |
		"\(.status.nodeInfo.kubeletVersion) \(.status.conditions[] | select(.type == "Ready") | .status) \(.spec.unschedulable // false) \(.metadata.annotations["hybridctl.dev/upgrade-cordoned"] // "-")"' <<<"$nodes_json")" = "$to True false -"
done
check "the API server runs $to" test "$(kctl version -o json | jq -r .serverVersion.gitVersion)" = "$to"
check "kube-proxy's image is $to" test "$(kctl -n kube-system get daemonset kube-proxy -o jsonpath='{.spec.template.spec.containers[0].image}' | sed 's/.*://')" = "$to"
kctl -n e2e-upgrade logs daemonset/client >"$out/client.log" || true
total=$(awk -v s="$upgrade_start" -v e="$upgrade_end" '$1 >= s && $1 <= e' "$out/client.log" | wc -l)
failed=$(awk -v s="$upgrade_start" -v e="$upgrade_end" '$1 >= s && $1 <= e && $2 == "fail"' "$out/client.log" | wc -l)
longest=$(awk '$2 == "fail" { if (prev == $1 - 1 || prev == $1 - 2) run++; else run = 1; if (run > max) max = run; prev = $1; next } { run = 0 } END { print max + 0 }' "$out/client.log")
say "the client: $failed of $total requests failed during the upgrade; the longest run of failures: ${longest}s"
check "fewer than 10% of the client's requests failed during the upgrade ($failed of $total)" test "$((failed * 10))" -lt "$((total > 0 ? total : 1))"
# After the upgrade the Deployment settles (a replacement pod on the last
# node drained may still be starting); from then on no request fails.
check "the Deployment is available again after the upgrade" kctl -n e2e-upgrade rollout status deployment/web --timeout=2m
settled=$(date +%s)
say "settled $((settled - upgrade_end))s after the upgrade ended"
sleep 10
kctl -n e2e-upgrade logs daemonset/client >"$out/client.log" || true
check "none failed once it settled" test "$(awk -v e="$settled" '$1 > e && $2 == "fail"' "$out/client.log" | wc -l)" = 0
for f in "$out/upgrade-1.json" "$out/upgrade-2.json"; do
	jq -r 'select(.phase | strings | startswith("upgrade-")) | select(.type == "start" or .type == "done") | "\(.host) \(.type) \(.sinceStartMs)"' "$f"
done | awk '$2 == "start" { s[$1] = $3 } $2 == "done" { printf "   %s upgraded in %.0fs\n", $1, ($3 - s[$1]) / 1000 }'

stage "a second upgrade runs no step"
run_rc "$hybridctl" upgrade -f "$target" "${to_flags[@]}" --skip-phases calico,calico-ready --yes -o json >"$out/upgrade-3.json"
check "exit 0 (exit $rc), nothing done, nothing failed" test "$rc:$(jq -s '[.[] | select(.type == "done" or .type == "fail" or .type == "blocked")] | length' "$out/upgrade-3.json")" = 0:0

stage "apply at $to changes nothing"
run_rc "$hybridctl" apply -f "$target" "${to_apply_flags[@]}" --skip-phases calico,calico-ready -o json >"$out/apply-3.json"
check "apply at $to: exit 0 (exit $rc), nothing done, nothing failed" test "$rc:$(jq -s '[.[] | select(.type == "done" or .type == "fail" or .type == "blocked")] | length' "$out/apply-3.json")" = 0:0
kctl delete namespace e2e-upgrade --wait=false >/dev/null

stage "doctor"
"$hybridctl" doctor --kubeconfig "$kubeconfig" --context "$cluster" -o json --fail-on none >"$out/doctor.json" || true
jq -r '(.findings[]? | "finding \(.check) \(.name) \(.severity)"), (.skipped[]? | "skipped \(.check): \(.reason)")' \
	"$out/doctor.json" | sort -u >"$out/doctor.txt"
check "doctor reports exactly hack/e2e-doctor-expected.txt" diff -u hack/e2e-doctor-expected.txt "$out/doctor.txt"

stage "lab down"
trap - EXIT
"$lab" down -f "$spec"
check "lab down leaves nothing" "$lab" leftovers -f "$spec"
stage "done"
printf '   %s\n' "${stages[@]}"
say "$fails assertions failed; logs in $out"
[ "$fails" = 0 ]
}; exit
