#!/usr/bin/env bash
# Prepares k8s-lab-node-2 (worker, Ubuntu Server or Debian 12/13) of cluster lab for kubeadm.
# Rendered by hybridctl: the guide's "Linux nodes: as in part 4" - name and
# address, swap, kernel modules, sysctl, chrony, containerd, the Kubernetes
# packages. Run as root on the node:  sudo bash prepare.sh
# It is safe to run again: every step checks before it changes anything.
set -euo pipefail

NODE_NAME='k8s-lab-node-2'
NODE_FQDN='k8s-lab-node-2.example.com'
ADDRESS='192.168.10.26'
PREFIX_LENGTH='24'
GATEWAY='192.168.10.1'
DNS_SERVERS=('192.168.10.1')
DNS_SUFFIX='example.com'
NTP_SERVERS=('router.example.com')
KUBERNETES_VERSION='v1.37.2'
CONTAINERD_VERSION='2.2.2'
SANDBOX_IMAGE='registry.k8s.io/pause:3.10.2'
APT_REPO='https://pkgs.k8s.io/core:/stable:/v1.37/deb/'
CONTAINERD=containerd
# The interface that carries the node address; default: the one of the
# default route. Override: sudo IFACE=ens18 bash prepare.sh
IFACE="${IFACE:-$(ip -o -4 route show default | awk '{print $5; exit}')}"

step() { printf '==> %s\n' "$*"; }
die() { printf 'prepare.sh: %s\n' "$*" >&2; exit 1; }
# install_file MODE PATH: replace PATH with stdin when it differs; returns 0
# when it changed the file.
install_file() {
	local mode=$1 path=$2 tmp
	tmp=$(mktemp "${path}.XXXXXX")
	cat >"$tmp"
	chmod "$mode" "$tmp"
	if [[ -f "$path" ]] && cmp -s "$tmp" "$path"; then
		rm -f "$tmp"
		return 1
	fi
	mv -f "$tmp" "$path"
	return 0
}

[[ $(id -u) -eq 0 ]] || die "run as root: sudo bash prepare.sh"
[[ -n "$IFACE" ]] || die "no default route to take the interface from; run with IFACE=<interface>"

step "host name $NODE_NAME"
if [[ "$(hostnamectl --static)" != "$NODE_NAME" ]]; then
	hostnamectl set-hostname -- "$NODE_NAME"
fi
step "address $ADDRESS/$PREFIX_LENGTH (checked, not configured: network.configure is check)"
if ! ip -o -4 addr show | awk '{print $4}' | grep -qxF -e "$ADDRESS/$PREFIX_LENGTH"; then
	have=$(ip -o -4 addr show scope global | awk '{printf " %s=%s", $2, $4}')
	die "this node does not have its spec address $ADDRESS/$PREFIX_LENGTH (it has:${have:- none}); give it the address, or set spec.network.configure to netplan or systemd-networkd"
fi
if [[ -n "$GATEWAY" ]] && ! ip -o -4 route show default | grep -q "via $GATEWAY "; then
	printf '  warning: the default route is not via the spec gateway %s: %s\n' "$GATEWAY" "$(ip -o -4 route show default | head -n1)" >&2
fi
resolvers="$(cat /etc/resolv.conf 2>/dev/null; resolvectl dns 2>/dev/null || true)"
for s in "${DNS_SERVERS[@]}"; do
	grep -qwF "$s" <<<"$resolvers" || printf '  warning: the spec DNS server %s is not among the node resolvers\n' "$s" >&2
done
if [[ -n "$DNS_SUFFIX" ]] && ! grep -qwF -e "$DNS_SUFFIX" <<<"$resolvers$(resolvectl domain 2>/dev/null || true)"; then
	printf '  warning: the spec DNS suffix %s is not a search domain of the node\n' "$DNS_SUFFIX" >&2
fi

step "product_uuid and machine-id (must differ between nodes)"
printf '  product_uuid %s\n  machine-id   %s\n' "$(cat /sys/class/dmi/id/product_uuid 2>/dev/null || echo unknown)" "$(cat /etc/machine-id)"

step "swap off"
swapoff -a
if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then
	sed -Ei.hybridctl '/^[^#].*[[:space:]]swap[[:space:]]/s/^/# /' /etc/fstab
fi

step "kernel modules overlay, br_netfilter"
printf 'overlay\nbr_netfilter\n' | install_file 644 /etc/modules-load.d/k8s.conf || true
# A module built into the kernel (or loaded by the host of a container)
# needs no modprobe; a host without loadable modules has no modprobe to run.
for m in overlay br_netfilter; do
	if [[ -d /sys/module/$m ]] || grep -qw "$m" /proc/filesystems 2>/dev/null; then
		continue
	fi
	modprobe "$m" || die "kernel module $m is neither loaded nor built in, and modprobe $m failed"
done

step "sysctl: bridged traffic through netfilter, IP forwarding"
printf '%s\n' 'net.bridge.bridge-nf-call-iptables  = 1' 'net.bridge.bridge-nf-call-ip6tables = 1' 'net.ipv4.ip_forward                 = 1' \
	| install_file 644 /etc/sysctl.d/k8s.conf || true
# Written through /proc/sys: a minimal Debian has no sysctl binary.
for key in net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables net/ipv4/ip_forward; do
	[[ -e /proc/sys/$key ]] || die "/proc/sys/$key does not exist (is br_netfilter loaded?)"
	[[ "$(cat "/proc/sys/$key")" == 1 ]] || echo 1 >"/proc/sys/$key"
done

export DEBIAN_FRONTEND=noninteractive
step "package lists"
# A fresh image's lists may be missing or stale: update before the first
# install.
apt-get update -qq
# The capabilities this host may hold (CapBnd): a container may lack
# CAP_SYS_TIME (25: no clock to set) or CAP_SYS_RESOURCE (24: no OOM score
# to lower).
capbnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
has_cap() { (( (capbnd >> $1) & 1 )); }
if has_cap 25; then
	step "chrony with ${NTP_SERVERS[*]}"
	apt-get install -y -qq chrony >/dev/null
	for s in "${NTP_SERVERS[@]}"; do printf 'server %s iburst\n' "$s"; done \
		| if install_file 644 /etc/chrony/sources.d/hybridctl.sources; then
			chronyc reload sources >/dev/null || systemctl restart chrony
		fi
else
	step "time sync: checked, not configured (no CAP_SYS_TIME: the host sets the clock)"
	if [[ "$(timedatectl show -p NTPSynchronized --value 2>/dev/null || true)" != yes ]]; then
		printf '  warning: the clock is not marked synchronised; the host that runs this container must keep it in sync\n' >&2
	fi
fi

step "containerd (SystemdCgroup = true, sandbox $SANDBOX_IMAGE)"
containerd_changed=0
apt-get install -y -qq containerd >/dev/null
have=$("$CONTAINERD" --version | awk '{print $3}')
if [[ "${have#v}" != "$CONTAINERD_VERSION" ]]; then
	printf '  the distribution package installed containerd %s (spec.containerd.version %s is what packages.source: bundle installs; preflight checked the version against the kubelet'"'"'s minimum)\n' "$have" "$CONTAINERD_VERSION"
fi
mkdir -p /etc/containerd
sandbox_sed=$(printf '%s' "$SANDBOX_IMAGE" | sed -e 's/[\\|&]/\\&/g')
# Without CAP_SYS_RESOURCE runc cannot lower a container's OOM score: every
# sandbox would fail ("failed to update /proc/self/oom_score_adj").
oom_sed=()
if ! has_cap 24; then
	printf '  no CAP_SYS_RESOURCE: containerd gets restrict_oom_score_adj = true\n'
	oom_sed=(-e 's/^([[:space:]]*)restrict_oom_score_adj = .*/\1restrict_oom_score_adj = true/')
fi
"$CONTAINERD" config default \
	| sed -E -e 's/^([[:space:]]*)SystemdCgroup = .*/\1SystemdCgroup = true/' "${oom_sed[@]}" \
		-e "s|^([[:space:]]*)sandbox = .*|\\1sandbox = '${sandbox_sed}'|" \
		-e "s|^([[:space:]]*)sandbox_image = .*|\\1sandbox_image = '${sandbox_sed}'|" \
	| install_file 644 /etc/containerd/config.toml && containerd_changed=1
if [[ $containerd_changed == 1 ]]; then
	systemctl restart containerd
fi
systemctl enable --now containerd >/dev/null
grep -q 'SystemdCgroup = true' /etc/containerd/config.toml || die "SystemdCgroup not set in /etc/containerd/config.toml"
{ grep -Fq "sandbox = '${SANDBOX_IMAGE}'" /etc/containerd/config.toml || grep -Fq "sandbox_image = '${SANDBOX_IMAGE}'" /etc/containerd/config.toml; } \
	|| die "the sandbox image is not set in /etc/containerd/config.toml"

step "Kubernetes packages $KUBERNETES_VERSION from $APT_REPO"
install -d -m 755 /etc/apt/keyrings
if [[ ! -s /etc/apt/keyrings/kubernetes-apt-keyring.gpg ]]; then
	curl -fsSL "${APT_REPO}Release.key" | gpg --dearmor --yes -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg
fi
printf 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] %s /\n' "$APT_REPO" \
	| install_file 644 /etc/apt/sources.list.d/kubernetes.list || true
apt-get update -qq
pkg_version="${KUBERNETES_VERSION#v}-*"
apt-get install -y -qq --allow-change-held-packages \
	"kubelet=$pkg_version" "kubeadm=$pkg_version" "kubectl=$pkg_version" >/dev/null
apt-mark hold kubelet kubeadm kubectl >/dev/null

step "checks"
got=$(kubeadm version -o short)
[[ "$got" == "$KUBERNETES_VERSION" ]] || die "kubeadm version is $got, expected $KUBERNETES_VERSION"
printf '  kubeadm %s, containerd %s, swap: %s\n' "$got" "$("$CONTAINERD" --version | awk '{print $3}')" "$(swapon --show --noheadings | wc -l) active"
printf '  %s resolves to %s\n' "$NODE_FQDN" "$(getent hosts -- "$NODE_FQDN" | awk '{print $1}' || true)"
printf 'ready for kubeadm on %s\n' "$NODE_NAME"
