#!/usr/bin/env bash
# End-to-end test in the lab (docs/e2e.md): boots the spec's Linux nodes
# with hack/lab/lab, runs `hybridctl apply` on them as a user would (with the
# lab's pod network where Calico would go), asserts the cluster through the
# API and over SSH, resets it and removes the lab.
#
#   hack/e2e.sh [-f SPEC] [--keep] [--no-build]
#
# SPEC defaults to examples/lab-linux.yaml; --keep leaves the cluster up
# after the assertions (remove it with: hack/lab/lab down -f SPEC);
# --no-build uses the artifacts already built (while a `lab build` runs).
# Root and Linux only; HYBRIDCTL_E2E=skip skips it (for contributors; CI
# never sets it). Exit 0 passed, 1 an assertion failed, 2 usage, 3 the lab
# could not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The whole script is one brace group: bash reads it completely before
# running it, so editing this file while a run is in progress cannot change
# or break that run.
{

spec=examples/lab-linux.yaml
keep=0
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-f) [ $# -ge 2 ] || { echo "e2e: -f needs a spec" >&2; exit 2; }; spec=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "e2e: unknown argument $1 (usage: hack/e2e.sh [-f SPEC] [--keep] [--no-build])" >&2; exit 2 ;;
	esac
done

e2e_name=e2e
e2e_tools=""
# shellcheck source=hack/e2e-lib.sh
. hack/e2e-lib.sh

build_hybridctl
# The spec's Kubernetes version (v1.37.2, or v1.36.3 for the lab at the
# previous minor): the artifacts, the assertions and kubectl follow it.
k8s_version=$("$hybridctl" plan -f "$spec" -o json | jq -r .kubernetesVersion)
build_releases "$k8s_version"
kubectl_bin=$("$lab" path --kubernetes-version "$k8s_version" kubectl)

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local rc=$?
	if [ "$keep" = 1 ] && [ "$rc" = 0 ]; then
		say "kept: hack/lab/lab down -f $spec removes it"
		return
	fi
	say "lab down (after exit $rc); logs in $out"
	"$lab" down -f "$spec" || rc=3
	exit "$rc"
}
trap cleanup EXIT

stage "lab up"
"$lab" down -f "$spec" >/dev/null 2>&1 || true
"$lab" up -f "$spec"
stage "images into the lab registry"
"$lab" push -f "$spec" >"$out/push.txt"
stage "the bundle"
bundle_dir=$("$lab" bundle -f "$spec")
"$("$lab" path hybridctl)" bundle verify -f "$spec" -d "$bundle_dir"

read -r -a flags <<<"$("$lab" flags -f "$spec")"
read -r -a reset_flags <<<"$("$lab" flags -f "$spec" --for reset)"
kubeconfig=$(printf '%s\n' "${flags[@]}" | sed -n '/^--kubeconfig$/{n;p}')
key=$(printf '%s\n' "${flags[@]}" | sed -n '/^--identity$/{n;p}')
known=$(printf '%s\n' "${flags[@]}" | sed -n '/^--known-hosts$/{n;p}')
plan=$("$hybridctl" plan -f "$spec" -o json)
cluster=$(jq -r .cluster <<<"$plan")
kubectl() { "$kubectl_bin" --kubeconfig "$kubeconfig" --context "$cluster" "$@"; }
node_ssh() { # node_ssh NODE COMMAND: COMMAND as root on the node
	local addr user
	addr=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan")
	user=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .ssh.user' <<<"$plan")
	ssh -q -i "$key" -o UserKnownHostsFile="$known" -o StrictHostKeyChecking=yes -o BatchMode=yes \
		-o ConnectTimeout=10 -l "$user" -- "$addr" "sudo sh -c $(printf %q "$2")"
}
# shellcheck disable=SC2317 # called through check
in_cidr() { # in_cidr ADDRESS CIDR: the IPv4 address is in the CIDR
	local a b c d n bits ip net mask
	IFS=. read -r a b c d <<<"$1" || return 1
	ip=$(((a << 24) | (b << 16) | (c << 8) | d))
	n=${2%/*} bits=${2#*/}
	IFS=. read -r a b c d <<<"$n" || return 1
	net=$(((a << 24) | (b << 16) | (c << 8) | d))
	mask=$(((0xffffffff << (32 - bits)) & 0xffffffff))
	[ -n "$1" ] && [ $((ip & mask)) = $((net & mask)) ]
}
# shellcheck disable=SC2317 # called through check
has_labels() { # has_labels NODE-JSON WANT-JSON: every wanted label on the node
	# shellcheck disable=SC2016 # jq's own variables
	jq -e --argjson want "$2" '.metadata.labels as $l | $want | to_entries | all($l[.key] == .value)' <<<"$1" >/dev/null
}
names=$(jq -r '.nodes[].name' <<<"$plan" | sort)
workers=$(jq -r '.nodes[] | select(.role == "worker") | .name' <<<"$plan")
victim=$(tail -n 1 <<<"$workers")
# The phases before Calico's, from apply's own list (apply --help).
before_calico=$("$hybridctl" apply --help | sed -n 's/^ *[0-9][0-9]*\. \([a-z-]*\) .*/\1/p' | sed '/^calico$/,$d' | paste -sd, -)
if [[ "$before_calico" != *linux-prepare*kubeconfig* ]]; then
	echo "e2e: cannot read apply's phase list from apply --help (got: $before_calico)" >&2
	exit 3
fi

stage "apply up to where Calico would go ($victim's prepare killed halfway)"
# The victim's prepare.sh is killed halfway, on the node itself: as soon as
# the script has installed containerd (its middle) and still runs.
# shellcheck disable=SC2016 # runs on the node
node_ssh "$victim" 'for _ in $(seq 3000); do
	if [ -e /usr/local/bin/containerd ] && pkill -KILL -f "^bash /var/lib/hybridctl/prepare.sh"; then echo killed; exit 0; fi
	sleep 0.2
done; exit 1' >"$out/kill.txt" 2>&1 &
killer=$!
# -o json as automation would; the events go to a file and, readable, here.
set +e
"$hybridctl" apply -f "$spec" "${flags[@]}" --only "$before_calico" -o json >"$out/apply-1.json"
rc1=$?
kill "$killer" 2>/dev/null
wait "$killer"
killed=$?
set -e
events <"$out/apply-1.json"
check "$victim's prepare was killed halfway" test "$killed" = 0
check "the first apply fails (exit 1) for $victim only" \
	test "$rc1:$(jq -r 'select(.type == "fail") | .host' "$out/apply-1.json" | sort -u | paste -sd, -)" = "1:$victim"
check "kubeadm-init finished on the control plane regardless" \
	test "$(jq -r 'select(.type == "done" and .phase == "kubeadm-init") | .host' "$out/apply-1.json" | wc -l)" = 1

stage "apply again: $victim resumes"
"$hybridctl" apply -f "$spec" "${flags[@]}" --only "$before_calico" -o json >"$out/apply-2.json" || true
events <"$out/apply-2.json"
check "the resumed apply completes" \
	test "$(jq -r 'select(.type == "summary") | "\(.summary.failed) \(.summary.blocked)"' "$out/apply-2.json")" = "0 0"
check "it reran prepare on $victim only" \
	test "$(jq -r 'select(.type == "done" and .phase == "linux-prepare") | .host' "$out/apply-2.json" | paste -sd, -)" = "$victim"

stage "the lab's pod network instead of Calico"
"$lab" podnet -f "$spec" | kubectl apply -f - >/dev/null

stage "apply the rest (skipping Calico's phases)"
run_rc "$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready -o json >"$out/apply-3.json"
events <"$out/apply-3.json"
check "apply completes (exit $rc)" test "$rc" = 0

stage "assertions"
nodes=$(kubectl get nodes -o json)
check "the nodes are the spec's: $(echo "$names" | tr '\n' ' ')" \
	test "$(jq -r '.items[].metadata.name' <<<"$nodes" | sort)" = "$names"
for n in $names; do
	node=$(jq --arg n "$n" '.items[] | select(.metadata.name == $n)' <<<"$nodes")
	check "$n Ready" test "$(jq -r '.status.conditions[]? | select(.type == "Ready") | .status' <<<"$node")" = True
	check "$n kubelet $k8s_version" test "$(jq -r .status.nodeInfo.kubeletVersion <<<"$node")" = "$k8s_version"
	want=$(jq -c --arg n "$n" '[.nodes[] | select(.name == $n) | .taints[]? | {key, effect}] | sort' <<<"$plan")
	# The node lifecycle controller's own taints (node.kubernetes.io/*) are
	# not the spec's; a NotReady node fails the check above.
	got=$(jq -c '[.spec.taints[]? | select(.key | startswith("node.kubernetes.io/") | not) | {key, effect}] | sort' <<<"$node")
	check "$n taints $want" test "$got" = "$want"
	want=$(jq -c --arg n "$n" '.nodes[] | select(.name == $n) | .labels // {}' <<<"$plan")
	check "$n labels $want" has_labels "$node" "$want"
	role=$(jq -r --arg n "$n" '.nodes[] | select(.name == $n) | .role' <<<"$plan")
	has_cp=$(jq -r '.metadata.labels | has("node-role.kubernetes.io/control-plane")' <<<"$node")
	check "$n role $role" test "$has_cp" = "$([ "$role" = control-plane ] && echo true || echo false)"
done

csrs=$(kubectl get csr -o json)
check "every kubelet serving CSR approved by hybridctl" test "$(jq '[.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving")
	| select(([.status.conditions[]? | select(.type == "Approved" and .reason == "HybridctlApproved")] | length) == 0)] | length' <<<"$csrs")" = 0
check "a serving CSR per node" test "$(jq '[.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving") | .spec.username] | unique | length' <<<"$csrs")" = "$(wc -w <<<"$names")"

domain=$(jq -r .dnsDomain <<<"$plan")
kubectl -n demo rollout status deployment/hello --timeout=5m >/dev/null || true
hello_image=$(kubectl -n demo get deployment hello -o jsonpath='{.spec.template.spec.containers[0].image}')
hello_node=$(kubectl -n demo get pods -l app.kubernetes.io/name=hello --field-selector=status.phase=Running -o jsonpath='{.items[0].spec.nodeName}' 2>/dev/null || true)
check "the check workload runs (on ${hello_node:-no node})" test -n "$hello_node"
kubectl create namespace e2e --dry-run=client -o yaml | kubectl apply -f - >/dev/null
for w in $workers; do
	kubectl -n e2e apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe-$w, labels: {app: e2e-probe}}
spec:
  nodeName: $w
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: "$hello_image", args: [sleep]}
EOF
done
kubectl -n e2e wait --for=condition=Ready pod -l app=e2e-probe --timeout=5m >/dev/null || true
hello_ip=$(kubectl -n demo get svc hello -o jsonpath='{.spec.clusterIP}')
for w in $workers; do
	check "kubectl logs from a pod on $w (the kubelet's serving certificate)" kubectl -n e2e logs "probe-$w"
	check "kubectl exec into a pod on $w" kubectl -n e2e exec "probe-$w" -- /hello lookup "kubernetes.default.svc.$domain"
	if [ "$w" != "$hello_node" ]; then
		check "the check workload's Service from $w (another node)" kubectl -n e2e exec "probe-$w" -- /hello get "http://$hello_ip/"
		check "the check workload by DNS name from $w" kubectl -n e2e exec "probe-$w" -- /hello get "http://hello.demo.svc.$domain/"
	fi
done
check "CoreDNS Ready" kubectl -n kube-system rollout status deployment/coredns --timeout=5m
on_worker=0
for n in $(kubectl -n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{.items[*].spec.nodeName}'); do
	grep -qxF "$n" <<<"$workers" && on_worker=1
done
check "CoreDNS runs on a worker" test "$on_worker" = 1
kubectl delete namespace e2e --wait=false >/dev/null

stage "the final doctor's findings"
"$hybridctl" doctor --kubeconfig "$kubeconfig" --context "$cluster" -o json --fail-on none >"$out/doctor.json" || true
# Its findings (check, name, severity) and the checks it skipped, with why:
# without Calico, exactly the Calico checks are skipped and nothing is found.
jq -r '(.findings[]? | "finding \(.check) \(.name) \(.severity)"), (.skipped[]? | "skipped \(.check): \(.reason)")' \
	"$out/doctor.json" | sort -u >"$out/doctor.txt"
check "doctor reports exactly hack/e2e-doctor-expected.txt" diff -u hack/e2e-doctor-expected.txt "$out/doctor.txt"

stage "second apply changes nothing"
s=$(date +%s)
"$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready -o json >"$out/apply-4.json" || true
took=$(($(date +%s) - s))
events <"$out/apply-4.json"
check "second apply: nothing done, nothing failed" \
	test "$(jq -s '[.[] | select(.type == "done" or .type == "fail" or .type == "blocked")] | length' "$out/apply-4.json")" = 0
check "second apply finishes fast (${took}s, at most 120s)" test "$took" -le 120

stage "hybridctl check connectivity over the lab's pod network (docs/connectivity.md)"
check "check connectivity: every Linux test passes; a broken Service and a deleted probe pod fail clearly" \
	hack/e2e-connectivity.sh --hybridctl "$hybridctl" --kubeconfig "$kubeconfig" --context "$cluster" \
	--image "$hello_image" --dns-domain "$domain" --kubectl "$kubectl_bin" --out "$out/connectivity"

stage "hybridctl node diagnose on nodes broken on purpose (docs/node.md)"
check "node diagnose finds and names each broken thing" \
	hack/e2e-diagnose.sh --hybridctl "$hybridctl" -f "$spec" --kubeconfig "$kubeconfig" --context "$cluster" \
	--identity "$key" --known-hosts "$known" --kubectl "$kubectl_bin" --out "$out/diagnose"

stage "the in-cluster CSR approver (hybridctl's image) approves a node that joins after it started"
registry=$(jq -r .registry.prefix <<<"$plan")
"$hybridctl" render -f "$spec" --output-dir "$out/render" --csr-approver-image "$registry/hybridctl-lab/hybridctl:lab" >/dev/null
kubectl apply -f "$out/render/cluster/csr-approver.yaml" >/dev/null
approver=$(kubectl create --dry-run=client -f "$out/render/cluster/csr-approver.yaml" -o json |
	jq -r '(.items // [.])[] | select(.kind == "Deployment") | "\(.metadata.namespace) \(.metadata.name)"')
read -r approver_ns approver_name <<<"$approver"
check "the in-cluster approver runs" kubectl -n "$approver_ns" rollout status "deployment/$approver_name" --timeout=5m
old_cidr=$(kubectl get node "$victim" -o jsonpath='{.spec.podCIDR}' || true)
"$hybridctl" reset -f "$spec" "${reset_flags[@]}" --node "$victim" --yes -o json >"$out/reset-victim.json" || true
events <"$out/reset-victim.json"
check "$victim reset and removed" test "$(kubectl get node "$victim" -o name 2>/dev/null)" = ""
before=$(kubectl get csr -o json | jq -r --arg u "system:node:$victim" '[.items[] | select(.spec.username == $u) | .metadata.name] | join(" ")')
"$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready,approve-linux-csrs -o json >"$out/apply-rejoin.json" || true
events <"$out/apply-rejoin.json"
approved=""
for _ in $(seq 60); do
	approved=$(kubectl get csr -o json | jq -r --arg u "system:node:$victim" --arg before " $before " '[.items[]
		| select(.spec.username == $u and .spec.signerName == "kubernetes.io/kubelet-serving")
		| select(.metadata.name as $n | $before | contains(" " + $n + " ") | not)
		| select(any(.status.conditions[]?; .type == "Approved"))] | length')
	[ "$approved" -gt 0 ] && break
	sleep 5
done
check "$victim's new serving CSR approved without apply's approval phase" test "$approved" -gt 0
check "the approver's log names $victim" sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' --context '$cluster' -n '$approver_ns' logs 'deployment/$approver_name' | grep -q '$victim'"
check "$victim Ready again" kubectl wait --for=condition=Ready "node/$victim" --timeout=5m

stage "the pod network after $victim left and joined again (node churn)"
# The controller manager gives the joined node a podCIDR again, usually
# another one: the other nodes must route it at once (podnet watches the
# Nodes), and on the node the CNI configuration is rewritten and the bridge
# moves to the new gateway, so a pod there starts and talks across nodes.
new_cidr=$(kubectl get node "$victim" -o jsonpath='{.spec.podCIDR}' || true)
victim_addr=$(jq -r --arg n "$victim" '.nodes[] | select(.name == $n) | .address' <<<"$plan")
say "$victim's podCIDR: ${old_cidr:-none} before the reset, ${new_cidr:-none} now"
for n in $names; do
	[ "$n" = "$victim" ] && continue
	routed=0
	for _ in $(seq 30); do
		node_ssh "$n" "ip route show $new_cidr proto 201" 2>/dev/null | grep -q "via $victim_addr" && { routed=1; break; }
		sleep 1
	done
	check "$n routes $victim's new podCIDR $new_cidr via $victim_addr" test "$routed" = 1
	if [ -n "$old_cidr" ] && [ "$old_cidr" != "$new_cidr" ]; then
		check "$n no longer routes $victim's old podCIDR $old_cidr" test -z "$(node_ssh "$n" "ip route show $old_cidr proto 201")"
	fi
done
kubectl create namespace e2e-churn --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n e2e-churn apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: churn-probe}
spec:
  nodeName: $victim
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: "$hello_image", args: [sleep]}
EOF
check "a pod on the re-joined $victim starts (Ready within 2 min)" kubectl -n e2e-churn wait --for=condition=Ready pod/churn-probe --timeout=2m
if [ "$(kubectl -n e2e-churn get pod churn-probe -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]; then
	kubectl -n e2e-churn describe pod churn-probe | tail -n 15 >&2 || true
fi
probe_ip=$(kubectl -n e2e-churn get pod churn-probe -o jsonpath='{.status.podIP}' || true)
check "its address ${probe_ip:-(none)} is in the new podCIDR $new_cidr" in_cidr "$probe_ip" "$new_cidr"
target=$(kubectl -n demo get pods -l app.kubernetes.io/name=hello --field-selector=status.phase=Running -o json |
	jq -r --arg n "$victim" '[.items[] | select(.spec.nodeName != $n)][0] | "\(.spec.nodeName) \(.status.podIP) \(.spec.containers[0].ports[0].containerPort // 8080)"' || true)
read -r target_node target_ip target_port <<<"$target"
check "the pod on $victim reaches a pod on $target_node ($target_ip:$target_port) across nodes" \
	kubectl -n e2e-churn exec churn-probe -- /hello get "http://$target_ip:$target_port/"
kubectl delete namespace e2e-churn --wait=false >/dev/null

if [ "$keep" = 1 ]; then
	stage "done"
	printf '   %s\n' "${stages[@]}"
	[ "$fails" = 0 ] || { say "$fails assertions failed"; exit 1; }
	exit 0
fi

stage "reset"
run_rc "$hybridctl" reset -f "$spec" "${reset_flags[@]}" --yes -o json >"$out/reset.json"
events <"$out/reset.json"
check "reset completes (exit $rc)" test "$rc" = 0
for n in $names; do
	# What is left is printed, so a failure says what.
	# shellcheck disable=SC2016 # runs on the node
	check "$n clean after reset: no kubelet, no containers, nothing in /etc/kubernetes" node_ssh "$n" \
		'left="$(pgrep -ax kubelet; find /etc/kubernetes -type f 2>/dev/null; ctr -n k8s.io containers ls 2>/dev/null | tail -n +2)"
		[ -z "$left" ] || { printf "left on %s:\n%s\n" "$(hostname)" "$left" >&2; exit 1; }'
done

stage "lab down"
trap - EXIT
"$lab" down -f "$spec"
check "lab down leaves nothing" "$lab" leftovers -f "$spec"
stage "done"
printf '   %s\n' "${stages[@]}"
say "$fails assertions failed; logs in $out"
[ "$fails" = 0 ]
}; exit
