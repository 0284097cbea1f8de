#!/usr/bin/env bash
# End-to-end test in the lab (docs/e2e.md): boots the spec's Linux nodes
# with hack/lab/lab, runs `hybridctl apply` on them as a user would (with the
# lab's pod network where Calico would go), asserts the cluster through the
# API and over SSH, resets it and removes the lab.
#
#   hack/e2e.sh [-f SPEC] [--keep]
#
# SPEC defaults to examples/lab-linux.yaml; --keep leaves the cluster up
# after the assertions (remove it with: hack/lab/lab down -f SPEC).
# Root and Linux only; HYBRIDCTL_E2E=skip skips it (for contributors; CI
# never sets it). Exit 0 passed, 1 an assertion failed, 2 usage, 3 the lab
# could not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

spec=examples/lab-linux.yaml
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	-f) [ $# -ge 2 ] || { echo "e2e: -f needs a spec" >&2; exit 2; }; spec=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "e2e: unknown argument $1 (usage: hack/e2e.sh [-f SPEC] [--keep])" >&2; exit 2 ;;
	esac
done

if [ "${HYBRIDCTL_E2E:-}" = skip ]; then
	echo "e2e: skipped (HYBRIDCTL_E2E=skip)"
	exit 0
fi

lab=hack/lab/lab
cache="${XDG_CACHE_HOME:-$HOME/.cache}/hybridctl/lab"
if ! "$lab" check; then
	echo "e2e: the lab cannot run on this machine (see above); HYBRIDCTL_E2E=skip skips the end-to-end test" >&2
	exit 3
fi
command -v jq >/dev/null || { echo "e2e: jq is missing (hack/install-deps.sh installs it)" >&2; exit 3; }

t0=$(date +%s)
say() { printf '== e2e [%4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
fails=0
check() { # check DESCRIPTION COMMAND...: an assertion; the run goes on
	if "${@:2}"; then
		printf '   ok   %s\n' "$1"
	else
		printf '   FAIL %s\n' "$1" >&2
		fails=$((fails + 1))
	fi
}

say "build hybridctl and the lab's artifacts"
bin="$cache/bin"
mkdir -p "$bin"
go build -o "$bin/hybridctl" ./cmd/hybridctl
hybridctl="$bin/hybridctl"
"$lab" build

cleanup() {
	local rc=$?
	if [ "$keep" = 1 ] && [ "$rc" = 0 ]; then
		say "kept: hack/lab/lab down -f $spec removes it"
		return
	fi
	say "lab down"
	"$lab" down -f "$spec" || rc=3
	exit "$rc"
}
trap cleanup EXIT

say "lab up"
"$lab" down -f "$spec" >/dev/null 2>&1 || true
"$lab" up -f "$spec"
"$lab" push -f "$spec" >/dev/null
say "the bundle"
"$lab" bundle -f "$spec" >/dev/null

read -r -a flags <<<"$("$lab" flags -f "$spec")"
read -r -a reset_flags <<<"$("$lab" flags -f "$spec" --for reset)"
kubeconfig=$(printf '%s\n' "${flags[@]}" | sed -n '/^--kubeconfig$/{n;p}')
key=$(printf '%s\n' "${flags[@]}" | sed -n '/^--identity$/{n;p}')
known=$(printf '%s\n' "${flags[@]}" | sed -n '/^--known-hosts$/{n;p}')
plan=$("$hybridctl" plan -f "$spec" -o json)
cluster=$(jq -r .cluster <<<"$plan")
kubectl() { "$(hack/testenv/testenv path kubectl)" --kubeconfig "$kubeconfig" --context "$cluster" "$@"; }
node_ssh() { # node_ssh NODE COMMAND
	local addr user
	addr=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan")
	user=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .ssh.user' <<<"$plan")
	ssh -q -i "$key" -o UserKnownHostsFile="$known" -o StrictHostKeyChecking=yes -o BatchMode=yes \
		-o ConnectTimeout=10 "$user@$addr" "sudo sh -c $(printf %q "$2")"
}

say "apply up to where Calico would go"
"$hybridctl" apply -f "$spec" "${flags[@]}" \
	--only preflight,preflight-cluster,linux-prepare,post-prepare,kubeadm-init,kubeconfig
say "the lab's pod network instead of Calico"
"$lab" podnet -f "$spec" | kubectl apply -f - >/dev/null
say "apply again: it resumes"
"$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready

say "assertions"
names=$(jq -r '.nodes[].name' <<<"$plan" | sort)
nodes=$(kubectl get nodes -o json)
check "the nodes are the spec's: $(echo "$names" | tr '\n' ' ')" \
	test "$(jq -r '.items[].metadata.name' <<<"$nodes" | sort)" = "$names"
for n in $names; do
	node=$(jq --arg n "$n" '.items[] | select(.metadata.name == $n)' <<<"$nodes")
	check "$n Ready" test "$(jq -r '.status.conditions[] | select(.type == "Ready") | .status' <<<"$node")" = True
	check "$n kubelet v1.37.2" test "$(jq -r .status.nodeInfo.kubeletVersion <<<"$node")" = v1.37.2
	want=$(jq -c --arg n "$n" '[.nodes[] | select(.name == $n) | .taints[]? | {key, effect}] | sort' <<<"$plan")
	got=$(jq -c '[.spec.taints[]? | {key, effect}] | sort' <<<"$node")
	check "$n taints $want" test "$got" = "$want"
	role=$(jq -r --arg n "$n" '.nodes[] | select(.name == $n) | .role' <<<"$plan")
	has_cp=$(jq -r '.metadata.labels | has("node-role.kubernetes.io/control-plane")' <<<"$node")
	check "$n role $role" test "$has_cp" = "$([ "$role" = control-plane ] && echo true || echo false)"
done

csrs=$(kubectl get csr -o json)
check "every kubelet serving CSR approved by hybridctl" test "$(jq '[.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving")
	| select(([.status.conditions[]? | select(.type == "Approved" and .reason == "HybridctlApproved")] | length) == 0)] | length' <<<"$csrs")" = 0
check "a serving CSR per node" test "$(jq '[.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving") | .spec.username] | unique | length' <<<"$csrs")" = "$(wc -w <<<"$names")"

workers=$(jq -r '.nodes[] | select(.role == "worker") | .name' <<<"$plan")
domain=$(jq -r .dnsDomain <<<"$plan")
kubectl -n demo rollout status deployment/hello --timeout=5m >/dev/null || true
hello_image=$(kubectl -n demo get deployment hello -o jsonpath='{.spec.template.spec.containers[0].image}')
hello_node=$(kubectl -n demo get pods -l app.kubernetes.io/name=hello -o jsonpath='{.items[0].spec.nodeName}' 2>/dev/null || true)
check "the check workload runs (on ${hello_node:-no node})" test -n "$hello_node"
kubectl create namespace e2e --dry-run=client -o yaml | kubectl apply -f - >/dev/null
for w in $workers; do
	kubectl -n e2e apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe-$w, labels: {app: e2e-probe}}
spec:
  nodeName: $w
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

say "the final doctor's findings"
"$hybridctl" doctor --kubeconfig "$kubeconfig" --context "$cluster" -o json >"$cache/e2e-doctor.json" || true
jq -r '.findings[]? | select(.severity != "ok") | "\(.check) \(.severity)"' "$cache/e2e-doctor.json" | sort -u >"$cache/e2e-doctor.txt"
check "doctor reports exactly hack/e2e-doctor-expected.txt" diff -u hack/e2e-doctor-expected.txt "$cache/e2e-doctor.txt"

say "second apply changes nothing"
"$hybridctl" apply -f "$spec" "${flags[@]}" --skip-phases calico,calico-ready -o json >"$cache/e2e-second-apply.json"
check "second apply: nothing done" test "$(jq -s '[.[] | select(.type == "done")] | length' "$cache/e2e-second-apply.json")" = 0

if [ "$keep" = 1 ]; then
	[ "$fails" = 0 ] || { say "$fails assertions failed"; exit 1; }
	exit 0
fi

say "reset"
"$hybridctl" reset -f "$spec" "${reset_flags[@]}" --yes
for n in $names; do
	check "$n clean after reset" node_ssh "$n" '! pgrep -x kubelet >/dev/null && [ ! -e /etc/kubernetes/kubelet.conf ] && [ ! -e /etc/kubernetes/manifests/kube-apiserver.yaml ]'
done

say "lab down"
trap - EXIT
"$lab" down -f "$spec"
check "lab down leaves nothing" "$lab" leftovers -f "$spec"
say "$fails assertions failed"
[ "$fails" = 0 ]
