#!/usr/bin/env bash
# `hybridctl node diagnose` against a running lab cluster (docs/e2e.md,
# docs/node.md): breaks things on the lab's real Linux nodes on purpose and
# asserts that node diagnose finds and names each, restoring it after:
#
#   1. containerd stopped               HC501 node-services, HC502 containerd-answers
#   2. the CNI configuration deleted    HC506 cni-config
#   3. a route removed, a stale one     HC508 overlay-cross-check (the lab's plain routes)
#   4. the node's clock 6 min ahead,    HC505 clock-skew (error above 30 s, then
#      2 min behind, then 20 s behind      error, then within the limit)
#   5. a VXLAN overlay built by hand    HC507 vxlan-device and HC508 clean, then
#      (vxlan.calico, BlockAffinities,  HC508 naming the missing FDB entry and both sides
#      Node annotations); an FDB entry deleted
#
# The clock: a lab node is a container sharing the host kernel's clock and
# has no CAP_SYS_TIME, so its clock cannot be shifted (and must not be: it is
# the host's). What is shifted is the node's view as node diagnose reads it:
# a date(1) wrapper first on PATH that adds the offset to `date +%s%N`.
#
# The lab's podnet agent puts its CNI configuration and routes back when a
# Node changes and every 30 s; it is kept off the broken node (a node
# affinity on its DaemonSet) while the test runs, and let back at the end.
#
#   hack/e2e-diagnose.sh --hybridctl BIN -f SPEC --kubeconfig FILE --context NAME \
#       --identity KEY --known-hosts FILE [--kubectl BIN] [--out DIR]
#
# hack/e2e.sh has every value: $hybridctl, $spec, $kubeconfig, $cluster,
# $key, $known (from `hack/lab/lab flags`). --out keeps each run's JSON.
# Exit 0 passed, 1 an assertion failed, 2 usage, 3 could not run.
set -euo pipefail

usage="usage: hack/e2e-diagnose.sh --hybridctl BIN -f SPEC --kubeconfig FILE --context NAME --identity KEY --known-hosts FILE [--kubectl BIN] [--out DIR]"
hybridctl="" spec="" kubeconfig="" context="" identity="" known="" kubectl_bin=kubectl out=""
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || { echo "e2e-diagnose: $1 needs a value ($usage)" >&2; exit 2; }
	case "$1" in
	--hybridctl) hybridctl=$2 ;;
	-f | --spec) spec=$2 ;;
	--kubeconfig) kubeconfig=$2 ;;
	--context) context=$2 ;;
	--identity) identity=$2 ;;
	--known-hosts) known=$2 ;;
	--kubectl) kubectl_bin=$2 ;;
	--out) out=$2 ;;
	*) echo "e2e-diagnose: unknown argument $1 ($usage)" >&2; exit 2 ;;
	esac
	shift 2
done
for v in hybridctl spec kubeconfig context identity known; do
	[ -n "${!v}" ] || { echo "e2e-diagnose: --${v/known/known-hosts} is required ($usage)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "e2e-diagnose: jq is missing" >&2; exit 3; }
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

kubectl() { "$kubectl_bin" --kubeconfig "$kubeconfig" --context "$context" --request-timeout 30s "$@"; }
plan=$("$hybridctl" plan -f "$spec" -o json)
node_addr() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .address' <<<"$plan"; }
node_ssh() { # node_ssh NODE COMMAND: COMMAND as root on NODE
	local user
	user=$(jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .ssh.user' <<<"$plan")
	ssh -q -i "$identity" -o UserKnownHostsFile="$known" -o StrictHostKeyChecking=yes -o BatchMode=yes \
		-o ConnectTimeout=10 -l "$user" -- "$(node_addr "$1")" "sudo sh -c $(printf %q "$2")"
}
fails=0
check() { # check DESCRIPTION COMMAND...: an assertion; the run goes on
	if "${@:2}"; then
		printf '   ok   %s\n' "$1"
	else
		printf '   FAIL %s\n' "$1" >&2
		fails=$((fails + 1))
	fi
}
say() { printf '== e2e-diagnose: %s\n' "$*"; }

# diagnose NAME [ARGS...]: node diagnose -o json into $out/NAME.json; its
# exit code into $out/NAME.rc.
diagnose() {
	local name=$1 rc=0
	shift
	"$hybridctl" node diagnose -f "$spec" --kubeconfig "$kubeconfig" --context "$context" \
		--identity "$identity" --known-hosts "$known" -o json "$@" >"$out/$name.json" 2>"$out/$name.err" || rc=$?
	echo "$rc" >"$out/$name.rc"
}
rc_is() { test "$(cat "$out/$1.rc")" = "$2"; }
# finding NAME CHECK SEVERITY NODE TEXT: the run has that finding, TEXT in
# its message or evidence.
finding() {
	jq -e --arg c "$2" --arg s "$3" --arg n "$4" --arg t "$5" \
		'[.findings[] | select(.check == $c and .severity == $s and .node == $n)
		  | select(((.message + "\n" + (.evidence | join("\n"))) | contains($t)))] | length > 0' \
		"$out/$1.json" >/dev/null
}
no_finding() { # no_finding NAME CHECK NODE
	jq -e --arg c "$2" --arg n "$3" '[.findings[] | select(.check == $c and .node == $n)] | length == 0' "$out/$1.json" >/dev/null
}
show() { jq -r '.findings[] | "      \(.check) \(.severity) \(.node): \(.message)"' "$out/$1.json" || cat "$out/$1.err"; }

workers=$(jq -r '.nodes[] | select(.role == "worker" and .os == "linux") | .name' <<<"$plan")
node=$(head -n 1 <<<"$workers")
other=$(jq -r --arg n "$node" '.nodes[] | select(.name != $n and .os == "linux") | .name' <<<"$plan" | head -n 1)
if [ -z "$node" ] || [ -z "$other" ]; then
	echo "e2e-diagnose: the spec needs a Linux worker and another Linux node" >&2
	exit 3
fi
other_addr=$(node_addr "$other")
# Addresses made up for the test come from the spec's pod network (a /16 or
# wider), so the checks see them as pod routes and blocks: the first two
# octets, then 250.0/24 for a stale route, 240.x/26 for hand-made blocks.
pod_cidr=$(jq -r .podNetwork.cidr <<<"$plan")
if [ "${pod_cidr#*/}" -gt 16 ]; then
	echo "e2e-diagnose: the pod network $pod_cidr is narrower than /16; the test's made-up routes need a /16" >&2
	exit 3
fi
pod16=$(cut -d. -f1-2 <<<"$pod_cidr")
other_cidr=$(kubectl get node "$other" -o jsonpath='{.spec.podCIDR}')
[ -n "$other_cidr" ] || { echo "e2e-diagnose: $other has no spec.podCIDR" >&2; exit 3; }

# Everything broken is put back on exit, whatever happens.
restore=()
cleanup() {
	local i
	for ((i = ${#restore[@]} - 1; i >= 0; i--)); do
		eval "${restore[i]}" >/dev/null 2>&1 || echo "e2e-diagnose: restoring failed: ${restore[i]}" >&2
	done
	restore=()
}
trap 'rc=$?; cleanup; exit $rc' EXIT
# cni_ready waits until containerd on node $1 has its network again (crictl
# info: NetworkReady), 90 s at most. Moving the configuration back is a
# create event, which containerd's watcher of /etc/cni/net.d ignores: what
# makes it reload is podnet, back on the node, writing its configuration
# once as it starts (a rename into place, an event containerd acts on).
cni_ready() {
	local i
	for i in $(seq 45); do
		node_ssh "$1" 'crictl info' 2>/dev/null | jq -e '.status.conditions[] | select(.type == "NetworkReady") | .status' >/dev/null && return 0
		sleep 2
	done
	node_ssh "$1" 'crictl info' 2>&1 | jq -c '.status.conditions' >&2 || true
	return 1
}
# shellcheck disable=SC2317 # called through cleanup
podnet_back() { kubectl -n kube-system patch daemonset hybridctl-lab-podnet --type json -p '[{"op":"remove","path":"/spec/template/spec/affinity"}]'; }

say "the healthy lab, every node"
diagnose healthy
show healthy
check "no errors on the healthy lab (exit 0)" rc_is healthy 0
check "the overlay is the lab's plain routes" jq -e '.overlay == "routes"' "$out/healthy.json"
check "vxlan-device skipped as not applicable" jq -e '[.skipped[] | select(.check == "HC507" and (.reason | contains("plain routes")))] | length > 0' "$out/healthy.json"

say "podnet kept off $node while things are broken there"
kubectl -n kube-system patch daemonset hybridctl-lab-podnet --type merge -p "$(jq -cn --arg n "$node" \
	'{spec: {template: {spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: "kubernetes.io/hostname", operator: "NotIn", values: [$n]}]}]}}}}}}}')" >/dev/null
restore+=("podnet_back")
for _ in $(seq 60); do
	[ -z "$(kubectl -n kube-system get pods -l app.kubernetes.io/name=hybridctl-lab-podnet --field-selector "spec.nodeName=$node" -o name)" ] && break
	sleep 2
done
check "no podnet pod on $node" test -z "$(kubectl -n kube-system get pods -l app.kubernetes.io/name=hybridctl-lab-podnet --field-selector "spec.nodeName=$node" -o name)"

say "1. containerd stopped on $node"
node_ssh "$node" 'systemctl stop containerd'
restore+=("node_ssh $node 'systemctl start containerd'")
diagnose containerd "$node" --checks node-services,containerd-answers
show containerd
check "exit 1" rc_is containerd 1
check "HC501 names the stopped containerd" finding containerd HC501 error "$node" "containerd is not running on $node"
check "HC502: containerd does not answer crictl info" finding containerd HC502 error "$node" "containerd does not answer crictl info"
node_ssh "$node" 'systemctl start containerd'
for _ in $(seq 30); do node_ssh "$node" 'crictl info >/dev/null 2>&1' && break; sleep 2; done
diagnose containerd-back "$node" --checks node-services,containerd-answers
check "containerd back: no finding" rc_is containerd-back 0

say "2. the CNI configuration deleted on $node"
node_ssh "$node" 'mkdir -p /root/e2e-diagnose && mv /etc/cni/net.d/*.conflist /root/e2e-diagnose/'
restore+=("node_ssh $node 'mv /root/e2e-diagnose/*.conflist /etc/cni/net.d/'")
diagnose cni "$node" --checks cni-config
show cni
check "exit 1" rc_is cni 1
check "HC506: no CNI configuration" finding cni HC506 error "$node" "no CNI configuration in /etc/cni/net.d on $node"
node_ssh "$node" 'mv /root/e2e-diagnose/*.conflist /etc/cni/net.d/'
unset 'restore[-1]' # put back: the exit trap has nothing left to move
diagnose cni-back "$node" --checks cni-config
check "CNI configuration back: no finding" rc_is cni-back 0

say "3. the route to $other's pod network ($other_cidr) removed on $node, a stale one added"
stale=$pod16.250.0/24 # in the pod network, no node's
node_ssh "$node" "ip route del $other_cidr && ip route add $stale via $other_addr proto 201"
restore+=("node_ssh $node 'ip route del $stale; ip route replace $other_cidr via $other_addr proto 201'")
diagnose route "$node" --checks overlay-cross-check
show route
check "exit 1" rc_is route 1
check "HC508 names the missing route and the cluster's side" finding route HC508 error "$node" "$node has no route to $other's pod network $other_cidr (want $other_cidr via $other_addr)"
check "HC508 names the stale route" finding route HC508 warning "$node" "stale route on $node: $stale via $other_addr"
node_ssh "$node" "ip route del $stale; ip route replace $other_cidr via $other_addr proto 201"
diagnose route-back "$node" --checks overlay-cross-check
check "routes back: no finding" rc_is route-back 0

say "4. the clock of $node as node diagnose sees it (a container cannot set the host's clock)"
echo "   note: the node's clock is the host kernel's (no CAP_SYS_TIME, and setting it would move the host's): a date wrapper shifts what node diagnose reads"
shift_clock() { # shift_clock SECONDS: date +%s%N on the node reads SECONDS off
	node_ssh "$node" "cat > /usr/local/bin/date <<'EOS'
#!/bin/sh
# hybridctl e2e-diagnose: the node's clock as node diagnose reads it, shifted
if [ \"\$1\" = '+%s%N' ]; then echo \$(( \$(/bin/date +%s%N) + ${1}000000000 )); else exec /bin/date \"\$@\"; fi
EOS
chmod 755 /usr/local/bin/date"
}
restore+=("node_ssh $node 'rm -f /usr/local/bin/date'")
shift_clock 360
diagnose clock-ahead "$node" --checks clock-skew
show clock-ahead
check "6 minutes ahead: exit 1" rc_is clock-ahead 1
check "6 minutes ahead: HC505 error" finding clock-ahead HC505 error "$node" "ahead of this machine's, beyond the 30s limit"
shift_clock -120
diagnose clock-behind "$node" --checks clock-skew
show clock-behind
check "2 minutes behind: exit 1" rc_is clock-behind 1
check "2 minutes behind: HC505 error" finding clock-behind HC505 error "$node" "behind this machine's, beyond the 30s limit"
shift_clock -20
diagnose clock-near "$node" --checks clock-skew
check "20 s behind: within the limit, exit 0" rc_is clock-near 0
node_ssh "$node" 'rm -f /usr/local/bin/date'
diagnose clock-back "$node" --checks clock-skew
check "clock back: no finding" rc_is clock-back 0

say "5. a VXLAN overlay by hand: vxlan.calico on every Linux node, BlockAffinities, the Calico annotations"
linux=$(jq -r '.nodes[] | select(.os == "linux") | .name' <<<"$plan")
if ! node_ssh "$node" 'ip link add e2e-vxlan-probe type vxlan id 4242 dstport 4789 && ip link del e2e-vxlan-probe'; then
	echo "   FAIL the lab's nodes cannot create a VXLAN device (kernel module or capability): the FDB case did not run" >&2
	fails=$((fails + 1))
else
	zcat "$here/testdata/third_party/calico-v3.33/v3_projectcalico_org.yaml.gz" |
		awk 'BEGIN { RS = "\n---\n" } /name: blockaffinities.projectcalico.org/ { print; exit }' >"$out/blockaffinities-crd.yaml"
	had_crd=0
	kubectl get crd blockaffinities.projectcalico.org >/dev/null 2>&1 && had_crd=1
	if [ "$had_crd" = 0 ]; then
		kubectl apply -f "$out/blockaffinities-crd.yaml" >/dev/null
		restore+=("kubectl delete crd blockaffinities.projectcalico.org --wait=false")
		kubectl wait --for condition=established --timeout=60s crd/blockaffinities.projectcalico.org >/dev/null
	fi
	i=0
	declare -A blk tun mac adr
	for n in $linux; do
		blk[$n]="$pod16.240.$((i * 64))/26"
		tun[$n]="$pod16.240.$((i * 64))"
		mac[$n]="66:00:00:e2:e2:0$i"
		adr[$n]=$(node_addr "$n")
		i=$((i + 1))
	done
	for n in $linux; do
		kubectl apply -f - >/dev/null <<EOB
apiVersion: projectcalico.org/v3
kind: BlockAffinity
metadata: {name: e2e-diagnose-$n}
spec: {node: $n, cidr: "${blk[$n]}", state: confirmed, deleted: false}
EOB
		restore+=("kubectl delete blockaffinities.projectcalico.org e2e-diagnose-$n")
		kubectl annotate node "$n" --overwrite "projectcalico.org/IPv4VXLANTunnelAddr=${tun[$n]}" "projectcalico.org/VXLANTunnelMACAddr=${mac[$n]}" >/dev/null
		restore+=("kubectl annotate node $n projectcalico.org/IPv4VXLANTunnelAddr- projectcalico.org/VXLANTunnelMACAddr-")
		cmds="ip link add vxlan.calico type vxlan id 4096 dstport 4789 nolearning local ${adr[$n]} && ip link set vxlan.calico address ${mac[$n]} mtu 1450 up && ip addr add ${tun[$n]}/32 dev vxlan.calico"
		for m in $linux; do
			[ "$m" = "$n" ] && continue
			cmds="$cmds && ip route add ${blk[$m]} via ${tun[$m]} dev vxlan.calico onlink && ip neigh add ${tun[$m]} lladdr ${mac[$m]} dev vxlan.calico nud permanent && bridge fdb append ${mac[$m]} dev vxlan.calico dst ${adr[$m]} self permanent"
		done
		restore+=("node_ssh $n 'ip link del vxlan.calico'")
		node_ssh "$n" "$cmds"
	done
	diagnose vxlan --checks vxlan-device,overlay-cross-check
	show vxlan
	check "the hand-built overlay: exit 0, no finding" rc_is vxlan 0
	check "the overlay is read as Calico's" jq -e '.overlay == "calico"' "$out/vxlan.json"
	node_ssh "$node" "bridge fdb del ${mac[$other]} dev vxlan.calico dst ${adr[$other]} self"
	diagnose fdb "$node" --checks overlay-cross-check
	show fdb
	check "a missing FDB entry: exit 1" rc_is fdb 1
	check "HC508 names the missing FDB entry and the cluster's side" finding fdb HC508 error "$node" "no FDB entry on vxlan.calico for $other's VTEP MAC ${mac[$other]} (want dst ${adr[$other]})"
	check "HC508's evidence has the BlockAffinity" finding fdb HC508 error "$node" "cluster: block ${blk[$other]} is affine to $other"
fi

say "restoring"
cleanup
check "restored: containerd on $node has its network again (NetworkReady)" cni_ready "$node"
diagnose restored
show restored
check "restored: exit 0 again" rc_is restored 0
check "restored: the overlay is the lab's plain routes again" jq -e '.overlay == "routes"' "$out/restored.json"
say "$fails assertions failed"
[ "$fails" = 0 ] || exit 1
