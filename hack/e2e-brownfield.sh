#!/usr/bin/env bash
# End-to-end test of a cluster hybridctl did not build (docs/e2e.md,
# "Bring your own cluster"): boots the spec's Linux nodes with hack/lab/lab,
# prepares them with hybridctl (packages only), makes a cluster of the first
# two by hand (kubeadm init and kubeadm join over SSH, with a kubeadm
# configuration of this script's own, the lab's pod network), then:
# init --from-cluster describes it; diff names only the third node; apply
# joins it and leaves the two others' containerd and kubelet running as they
# were (same PIDs, same configuration files); diff then finds nothing;
# reset --node removes the third node; diff of the two-node spec finds
# nothing; doctor's findings are the lab's usual ones.
#
#   hack/e2e-brownfield.sh [-f SPEC] [--no-build]
#
# SPEC defaults to examples/lab-linux.yaml (at least three Linux nodes, the
# first a control plane; its last node is the one added). Root and Linux
# only; HYBRIDCTL_E2E=skip skips it. Exit 0 passed, 1 an assertion failed,
# 2 usage, 3 the lab could not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# One brace group: bash reads the whole script before running it.
{

spec=examples/lab-linux.yaml
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-f) [ $# -ge 2 ] || { echo "e2e-brownfield: -f needs a spec" >&2; exit 2; }; spec=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "e2e-brownfield: unknown argument $1 (usage: hack/e2e-brownfield.sh [-f SPEC] [--no-build])" >&2; exit 2 ;;
	esac
done

e2e_name=e2e-brownfield
e2e_tools="sha256sum"
# shellcheck source=hack/e2e-lib.sh
. hack/e2e-lib.sh

build_hybridctl
plan=$("$hybridctl" plan -f "$spec" -o json)
k8s_version=$(jq -r .kubernetesVersion <<<"$plan")
build_releases "$k8s_version"
kubectl_bin=$("$lab" path --kubernetes-version "$k8s_version" kubectl)

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local rc=$?
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
"$lab" bundle -f "$spec" >/dev/null

# The lab's flags, without its kubeconfig and state file: the cluster's
# admin credentials come from the control plane (as a user of a cluster
# hybridctl did not build has them), and apply starts with no state.
without_cluster_flags() { # the words of lab flags without --kubeconfig and --state
	local words i
	read -r -a words <<<"$1"
	for ((i = 0; i < ${#words[@]}; i++)); do
		case "${words[i]}" in
		--kubeconfig | --state) i=$((i + 1)) ;;
		*) printf '%s\n' "${words[i]}" ;;
		esac
	done
}
mapfile -t flags < <(without_cluster_flags "$("$lab" flags -f "$spec")")
mapfile -t reset_flags < <(without_cluster_flags "$("$lab" flags -f "$spec" --for reset)")
key=$(printf '%s\n' "${flags[@]}" | sed -n '/^--identity$/{n;p}')
known=$(printf '%s\n' "${flags[@]}" | sed -n '/^--known-hosts$/{n;p}')
kubeconfig=$out/admin.conf
context=kubernetes-admin@kubernetes
kctl() { "$kubectl_bin" --kubeconfig "$kubeconfig" --context "$context" "$@"; }
node_ssh() { # node_ssh NODE COMMAND [< STDIN]: COMMAND as root on the node
	local addr user
	addr=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan")
	user=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .ssh.user' <<<"$plan")
	ssh -q -i "$key" -o UserKnownHostsFile="$known" -o StrictHostKeyChecking=yes -o BatchMode=yes \
		-o ConnectTimeout=10 -l "$user" -- "$addr" "sudo sh -c $(printf %q "$2")"
}
addr_of() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan"; }

mapfile -t nodes < <(jq -r '.nodes[].name' <<<"$plan")
cp=${nodes[0]}
w1=${nodes[1]}
added=${nodes[-1]}
if [ "${#nodes[@]}" -lt 3 ] || [ "$(jq -r '.nodes[0].role' <<<"$plan")" != control-plane ]; then
	echo "e2e-brownfield: $spec needs three nodes or more, the first a control plane" >&2
	exit 2
fi
# The spec of the cluster as built by hand: the spec without its last node
# (the last entry of spec.nodes, at the end of the file).
two="$out/two-nodes.yaml"
awk -v n="$added" '$0 ~ "^  - name: " n "$" {exit} {print}' "$spec" >"$two"
check "the two-node spec names $cp and $w1 only" \
	test "$("$hybridctl" plan -f "$two" -o json | jq -r '[.nodes[].name] | join(",")')" = "$cp,$w1"

stage "the hosts prepared by hybridctl (packages; no kubeadm)"
before_init=$("$hybridctl" apply --help | sed -n 's/^ *[0-9][0-9]*\. \([a-z-]*\) .*/\1/p' | sed '/^kubeadm-init$/,$d' | paste -sd, -)
if [[ "$before_init" != *linux-prepare* ]]; then
	echo "e2e-brownfield: cannot read apply's phase list from apply --help (got: $before_init)" >&2
	exit 3
fi
"$hybridctl" apply -f "$two" "${flags[@]}" --state "$out/prepare.state.json" --only "$before_init" -o json >"$out/prepare.json"
events <"$out/prepare.json"

stage "kubeadm init on $cp and kubeadm join on $w1, by hand"
endpoint=$(jq -r .controlPlaneEndpoint <<<"$plan")
registry=$(jq -r .registry.prefix <<<"$plan")
# This cluster's own kubeadm configuration: what the lab's nodes need
# (containerd's socket, no oom_score_adj, systemd cgroups, the lab
# registry) and nothing of hybridctl's.
node_ssh "$cp" "mkdir -p /root/byhand && cat >/root/byhand/init.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: $(addr_of "$cp")}
nodeRegistration:
  name: $cp
  criSocket: unix:///run/containerd/containerd.sock
  ignorePreflightErrors: [SystemVerification]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $k8s_version
controlPlaneEndpoint: $endpoint
imageRepository: $registry
dns: {imageRepository: $registry/coredns}
networking:
  podSubnet: $(jq -r .podNetwork.cidr <<<"$plan")
  serviceSubnet: $(jq -r .serviceNetwork.cidr <<<"$plan")
  dnsDomain: $(jq -r .dnsDomain <<<"$plan")
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
serverTLSBootstrap: true
oomScoreAdj: 0
cgroupDriver: systemd
failCgroupV1: false
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: $(jq -r .kubeProxy.linuxMode <<<"$plan")
EOF
node_ssh "$cp" "kubeadm init --config /root/byhand/init.yaml" >"$out/kubeadm-init.txt" 2>&1 ||
	{ tail -n 30 "$out/kubeadm-init.txt" >&2; exit 1; }
node_ssh "$cp" "cat /etc/kubernetes/admin.conf" >"$kubeconfig"
chmod 600 "$kubeconfig"
# The join's token and CA hash travel in a file on the worker, not in argv.
token=$(node_ssh "$cp" "kubeadm token create --ttl 30m")
ca_hash=$(node_ssh "$cp" "openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1")
node_ssh "$w1" "umask 077 && mkdir -p /root/byhand && cat >/root/byhand/join.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  name: $w1
  criSocket: unix:///run/containerd/containerd.sock
  ignorePreflightErrors: [SystemVerification]
discovery:
  bootstrapToken:
    apiServerEndpoint: $endpoint
    token: $token
    caCertHashes: ["sha256:$ca_hash"]
EOF
unset token
node_ssh "$w1" "kubeadm join --config /root/byhand/join.yaml && rm -f /root/byhand/join.yaml" >"$out/kubeadm-join.txt" 2>&1 ||
	{ tail -n 30 "$out/kubeadm-join.txt" >&2; exit 1; }
stage "the lab's pod network; the kubelets' serving certificates approved by hand"
"$lab" podnet -f "$spec" | kctl apply -f - >/dev/null
for _ in $(seq 60); do
	mapfile -t pending < <(kctl get csr -o json | jq -r '.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving" and (.status.conditions | not)) | .metadata.name')
	[ "${#pending[@]}" -gt 0 ] && kctl certificate approve "${pending[@]}" >/dev/null
	[ "$(kctl get csr -o json | jq '[.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving") | .spec.username] | unique | length')" -ge 2 ] &&
		[ -z "$(kctl get csr -o json | jq -r '.items[] | select(.spec.signerName == "kubernetes.io/kubelet-serving" and (.status.conditions | not)) | .metadata.name')" ] && break
	sleep 2
done
check "the hand-built cluster's two nodes are Ready" kctl wait --for=condition=Ready "node/$cp" "node/$w1" --timeout=5m

stage "init --from-cluster describes it"
run_rc "$hybridctl" init --from-cluster --kubeconfig "$kubeconfig" --context "$context" --output-file "$out/adopted.yaml" 2>"$out/adopt-notes.txt"
sed 's/^/   | /' "$out/adopt-notes.txt"
check "init --from-cluster exits 0 (exit $rc)" test "$rc" = 0
adopted=$("$hybridctl" plan -f "$out/adopted.yaml" -o json 2>"$out/adopted-plan.txt" || true)
check "plan accepts the spec it wrote" test -n "$adopted"
check "it names exactly $cp (control plane) and $w1 (worker), at their addresses" test \
	"$(jq -r '[.nodes[] | "\(.name)=\(.role)=\(.address)"] | join(",")' <<<"${adopted:-{\}}")" = \
	"$cp=control-plane=$(addr_of "$cp"),$w1=worker=$(addr_of "$w1")"
for f in kubernetesVersion controlPlaneEndpoint podNetwork.cidr podNetwork.blockSize serviceNetwork.cidr dnsDomain kubeProxy.linuxMode; do
	check "its $f is the cluster's ($(jq -r ".$f" <<<"$plan"))" test "$(jq -r ".$f" <<<"${adopted:-{\}}")" = "$(jq -r ".$f" <<<"$plan")"
done

# What must not move on the two nodes: containerd's and the kubelet's
# processes and their configuration files.
fingerprint() {
	# shellcheck disable=SC2016 # runs on the node
	node_ssh "$1" 'echo "containerd pid $(pgrep -xo containerd)"; echo "kubelet pid $(pgrep -xo kubelet)"
		sha256sum /etc/containerd/config.toml /var/lib/kubelet/config.yaml /var/lib/kubelet/kubeadm-flags.env /etc/kubernetes/kubelet.conf 2>&1'
}
for n in "$cp" "$w1"; do fingerprint "$n" >"$out/before-$n.txt"; done

stage "diff with $added added to the spec"
skip=(--skip-phases "calico,calico-ready")
run_rc "$hybridctl" diff -f "$spec" "${flags[@]}" --kubeconfig "$kubeconfig" --context "$context" "${skip[@]}" -o json >"$out/diff-1.json" 2>"$out/diff-1.err"
"$hybridctl" diff -f "$spec" "${flags[@]}" --kubeconfig "$kubeconfig" --context "$context" "${skip[@]}" 2>&1 | sed 's/^/   | /' || true
check "diff exits 1: changes (exit $rc)" test "$rc" = 1
check "$cp and $w1 are members, $added is new" test \
	"$(jq -r '[.nodes[] | "\(.name)=\(.status)"] | join(",")' "$out/diff-1.json")" = "$cp=member,$w1=member,$added=new"
check "the node changes are all on $added" test \
	"$(jq -r '[.changes[] | select(.host != "cluster") | .host] | unique | join(",")' "$out/diff-1.json")" = "$added"
check "$added is to be joined" test "$(jq -r --arg n "$added" '[.changes[] | select(.host == $n) | .phase] | index("join-linux") != null' "$out/diff-1.json")" = true
check "no member setting differs (drift: $(jq -c '[.drift[] | "\(.host) \(.object)"]' "$out/diff-1.json"))" test "$(jq '.drift | length' "$out/diff-1.json")" = 0
check "nothing is unreachable" test "$(jq '.unreachable | length' "$out/diff-1.json")" = 0

stage "apply joins $added"
run_rc "$hybridctl" apply -f "$spec" "${flags[@]}" --kubeconfig "$kubeconfig" --context "$context" --state "$out/apply.state.json" "${skip[@]}" -o json >"$out/apply.json"
events <"$out/apply.json"
check "apply completes (exit $rc)" test "$rc" = 0
# Read-only phases (checks, waits) may run on members; nothing else.
check "nothing but checks ran on $cp or $w1" test \
	"$(jq -r --arg a "$cp" --arg b "$w1" 'select(.type == "done" and (.host == $a or .host == $b)) | .phase' "$out/apply.json" |
		grep -vxE 'preflight|post-prepare|linux-nodes-ready' | sort -u | paste -sd, -)" = ""
check "$added Ready" kctl wait --for=condition=Ready "node/$added" --timeout=5m
for n in "$cp" "$w1"; do
	fingerprint "$n" >"$out/after-$n.txt"
	check "$n: containerd and kubelet kept their PIDs, their files their hashes" diff -u "$out/before-$n.txt" "$out/after-$n.txt"
done

stage "diff after apply"
run_rc "$hybridctl" diff -f "$spec" "${flags[@]}" --kubeconfig "$kubeconfig" --context "$context" "${skip[@]}" >"$out/diff-2.txt" 2>&1
sed 's/^/   | /' "$out/diff-2.txt"
check "diff exits 0: nothing to change (exit $rc)" test "$rc" = 0

# doctor on the cluster apply grew: after the reset below a single worker
# is left, and doctor rightly warns when every CoreDNS replica runs there.
stage "doctor"
"$hybridctl" doctor --kubeconfig "$kubeconfig" --context "$context" -o json --fail-on none >"$out/doctor.json" || true
jq -r '(.findings[]? | "finding \(.check) \(.name) \(.severity)"), (.skipped[]? | "skipped \(.check): \(.reason)")' \
	"$out/doctor.json" | sort -u >"$out/doctor.txt"
check "doctor reports exactly hack/e2e-doctor-expected.txt" diff -u hack/e2e-doctor-expected.txt "$out/doctor.txt"

stage "reset --node $added"
records() { jq -r --arg n "$added" '[paths | .[] | select(. == $n)] | length' "$out/apply.state.json" 2>/dev/null || echo 0; }
check "the state file has records of $added before the reset" test "$(records)" -gt 0
run_rc "$hybridctl" reset -f "$spec" "${reset_flags[@]}" --kubeconfig "$kubeconfig" --context "$context" --state "$out/apply.state.json" --node "$added" --yes -o json >"$out/reset.json"
events <"$out/reset.json"
check "reset --node completes (exit $rc)" test "$rc" = 0
check "$added's Node is gone" test "$(kctl get node "$added" -o name 2>/dev/null)" = ""
check "the state file keeps no record of $added" test "$(records)" = 0
run_rc "$hybridctl" diff -f "$two" "${flags[@]}" --kubeconfig "$kubeconfig" --context "$context" "${skip[@]}" >"$out/diff-3.txt" 2>&1
sed 's/^/   | /' "$out/diff-3.txt"
check "diff of the spec without $added exits 0 (exit $rc)" test "$rc" = 0
for n in "$cp" "$w1"; do
	fingerprint "$n" >"$out/final-$n.txt"
	check "$n: still the same processes and files after the reset" diff -u "$out/before-$n.txt" "$out/final-$n.txt"
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
