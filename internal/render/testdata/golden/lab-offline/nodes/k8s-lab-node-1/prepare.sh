#!/usr/bin/env bash
# Prepares k8s-lab-node-1 (worker, Ubuntu Server or Debian 12/13) of cluster lab for kubeadm.
# Rendered by hybridctl: the guide's "Linux nodes: as in part 4" - name and
# address, swap, kernel modules, sysctl, chrony, containerd, the Kubernetes
# packages. Run as root on the node:  sudo bash prepare.sh
# packages.source is bundle: containerd, runc, the CNI plugins, crictl,
# kubelet, kubeadm and kubectl come from the files hybridctl apply's
# bundle-upload phase put in /var/cache/hybridctl/bundle (checked with sha256sum -c);
# nothing is downloaded and apt-get is not run.
# It is safe to run again: every step checks before it changes anything.
set -euo pipefail

NODE_NAME='k8s-lab-node-1'
NODE_FQDN='k8s-lab-node-1.example.com'
ADDRESS='192.168.10.24'
PREFIX_LENGTH='24'
GATEWAY='192.168.10.1'
DNS_SERVERS=('192.168.10.1')
DNS_SUFFIX='example.com'
NTP_SERVERS=('router.example.com')
KUBERNETES_VERSION='v1.37.2'
CONTAINERD_VERSION='2.2.2'
SANDBOX_IMAGE='registry.example.internal:5000/pause:3.10.2'
BUNDLE_DIR='/var/cache/hybridctl/bundle'
# The bundle's files this node installs, relative to BUNDLE_DIR.
CONTAINERD_TGZ='linux-amd64/containerd-2.2.2-linux-amd64.tar.gz'
RUNC_BIN='linux-amd64/runc.amd64'
CNI_TGZ='linux-amd64/cni-plugins-linux-amd64-v1.10.0.tgz'
CRICTL_TGZ='linux-amd64/crictl-v1.37.0-linux-amd64.tar.gz'
KUBELET_BIN='linux-amd64/kubelet'
KUBEADM_BIN='linux-amd64/kubeadm'
KUBECTL_BIN='linux-amd64/kubectl'
CONTAINERD=/usr/local/bin/containerd
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

step "bundle in $BUNDLE_DIR (sha256sum -c)"
[[ -s "$BUNDLE_DIR/"'SHA256SUMS' ]] \
	|| die "no bundle in $BUNDLE_DIR: packages.source is bundle, run hybridctl apply --bundle DIR (its bundle-upload phase puts the files there)"
for f in "$CONTAINERD_TGZ" "$RUNC_BIN" "$CNI_TGZ" "$CRICTL_TGZ" "$KUBELET_BIN" "$KUBEADM_BIN" "$KUBECTL_BIN"; do
	awk -v f="$f" '$2 == f || $2 == "*" f { found = 1 } END { exit !found }' "$BUNDLE_DIR/"'SHA256SUMS' \
		|| die "$f is not in $BUNDLE_DIR/"'SHA256SUMS'": the bundle lacks a file this node needs (hybridctl bundle verify)"
done
(cd "$BUNDLE_DIR" && sha256sum --check --strict --quiet 'SHA256SUMS') \
	|| die "a file in $BUNDLE_DIR does not match its sha256 (above); run hybridctl apply again: bundle-upload sends it again"
work=$(mktemp -d /tmp/hybridctl-prepare.XXXXXX)
trap 'rm -rf "$work"' EXIT

step "tools the bundle does not carry (from the OS: apt-get is not run in bundle mode)"
missing=()
# tar and gzip unpack the bundle; kubeadm's preflight requires mount,
# losetup and cp; the kubelet and kubeadm use nsenter and ip.
for t in tar gzip sha256sum cmp install systemctl mount losetup cp nsenter ip; do
	command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
((${#missing[@]} == 0)) || die "missing on this node: ${missing[*]} (install them from the site's own package mirror; the bundle carries only containerd, runc, the CNI plugins, crictl and the Kubernetes binaries)"
# Not fatal: kube-proxy and Calico bring their own iptables/nft; the
# others serve kubectl port-forward (socat), conntrack cleanup and NIC
# offload checks.
for t in conntrack socat ethtool; do
	command -v "$t" >/dev/null 2>&1 || printf '  warning: %s is not installed (not in the bundle; install it from the site mirror)\n' "$t" >&2
done
command -v iptables >/dev/null 2>&1 || command -v nft >/dev/null 2>&1 \
	|| printf '  warning: neither iptables nor nft is installed (not in the bundle; install one from the site mirror)\n' >&2
# The capabilities this host may hold (CapBnd): a container may lack
# CAP_SYS_TIME (25: no clock to set) or CAP_SYS_RESOURCE (24: no OOM score
# to lower).
capbnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
has_cap() { (( (capbnd >> $1) & 1 )); }
if has_cap 25; then
	step "chrony with ${NTP_SERVERS[*]}"
	command -v chronyc >/dev/null 2>&1 \
		|| die "chrony is not installed and packages.source is bundle (chrony is not in the bundle): install it from the site's own package mirror"
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
# The release tarball's bin/ goes to /usr/local/bin, runc to
# /usr/local/sbin, as containerd's getting-started guide does; each file is
# replaced only when it differs.
mkdir -p "$work/containerd" "$work/cni" "$work/crictl"
tar -xzf "$BUNDLE_DIR/$CONTAINERD_TGZ" -C "$work/containerd"
[[ -x "$work/containerd/bin/containerd" ]] || die "$CONTAINERD_TGZ has no bin/containerd"
install -d -m 755 /usr/local/bin /usr/local/sbin /usr/local/lib/systemd/system
for f in "$work"/containerd/bin/*; do
	install_file 755 "/usr/local/bin/${f##*/}" <"$f" && containerd_changed=1
done
install_file 755 /usr/local/sbin/runc <"$BUNDLE_DIR/$RUNC_BIN" && containerd_changed=1
# containerd's own unit (containerd.service of the release), where the
# getting-started guide puts it: it takes precedence over a distribution
# package's /usr/lib/systemd/system/containerd.service.
cat <<'UNIT' | install_file 644 /usr/local/lib/systemd/system/containerd.service && containerd_changed=1
# Copyright The containerd Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target dbus.service

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd

Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5

# Having non-zero Limit*s causes performance problems due to accounting overhead
# in the kernel. We recommend using cgroups to do container-local accounting.
LimitNPROC=infinity
LimitCORE=infinity

# Comment TasksMax if your systemd version does not supports it.
# Only systemd 226 and above support this version.
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
UNIT
step "CNI plugins in /opt/cni/bin"
install -d -m 755 /opt/cni/bin
tar -xzf "$BUNDLE_DIR/$CNI_TGZ" -C "$work/cni"
n=0
for f in "$work"/cni/*; do
	if [[ -f "$f" && -x "$f" ]]; then
		install_file 755 "/opt/cni/bin/${f##*/}" <"$f" || true
		n=$((n + 1))
	fi
done
((n > 0)) || die "$CNI_TGZ has no plugins"
[[ -x /opt/cni/bin/loopback ]] || die "$CNI_TGZ has no loopback plugin"
if [[ $containerd_changed == 1 ]]; then
	systemctl daemon-reload
fi
have=$("$CONTAINERD" --version | awk '{print $3}')
if [[ "${have#v}" != "$CONTAINERD_VERSION" ]]; then
	printf '  warning: the bundle installed containerd %s, the spec says %s\n' "$have" "$CONTAINERD_VERSION" >&2
fi
mkdir -p /etc/containerd
# Every image through the private registry registry.example.internal:5000: containerd's
# registry host configuration under /etc/containerd/certs.d (config_path).
CERTS_DIR='/etc/containerd/certs.d'
hosts_changed=0
install -d -m 755 '/etc/containerd/certs.d/registry.k8s.io'
printf '%s' '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory'\''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = '\''https://registry.example.internal:5000'\''
capabilities = ['\''pull'\'', '\''resolve'\'']
' | install_file 644 '/etc/containerd/certs.d/registry.k8s.io/hosts.toml' && hosts_changed=1
install -d -m 755 '/etc/containerd/certs.d/docker.io'
printf '%s' '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory'\''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = '\''https://registry.example.internal:5000'\''
capabilities = ['\''pull'\'', '\''resolve'\'']
' | install_file 644 '/etc/containerd/certs.d/docker.io/hosts.toml' && hosts_changed=1
install -d -m 755 '/etc/containerd/certs.d/quay.io'
printf '%s' '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory'\''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = '\''https://registry.example.internal:5000'\''
capabilities = ['\''pull'\'', '\''resolve'\'']
' | install_file 644 '/etc/containerd/certs.d/quay.io/hosts.toml' && hosts_changed=1
install -d -m 755 '/etc/containerd/certs.d/ghcr.io'
printf '%s' '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory'\''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = '\''https://registry.example.internal:5000'\''
capabilities = ['\''pull'\'', '\''resolve'\'']
' | install_file 644 '/etc/containerd/certs.d/ghcr.io/hosts.toml' && hosts_changed=1
install -d -m 755 '/etc/containerd/certs.d/mcr.microsoft.com'
printf '%s' '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory'\''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = '\''https://registry.example.internal:5000'\''
capabilities = ['\''pull'\'', '\''resolve'\'']
' | install_file 644 '/etc/containerd/certs.d/mcr.microsoft.com/hosts.toml' && hosts_changed=1
install -d -m 755 '/etc/containerd/certs.d/registry.example.internal_5000_'
printf '%s' '# containerd registry host configuration for the private registry, rendered by hybridctl.
server = '\''https://registry.example.internal:5000'\''
' | install_file 644 '/etc/containerd/certs.d/registry.example.internal_5000_/hosts.toml' && hosts_changed=1
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
		-e "s|^([[:space:]]*)config_path = .*|\\1config_path = '${CERTS_DIR}'|" \
	| install_file 644 /etc/containerd/config.toml && containerd_changed=1
[[ $hosts_changed == 0 ]] || containerd_changed=1
if [[ $containerd_changed == 1 ]]; then
	systemctl restart containerd
fi
systemctl enable --now containerd >/dev/null
grep -q 'SystemdCgroup = true' /etc/containerd/config.toml || die "SystemdCgroup not set in /etc/containerd/config.toml"
{ grep -Fq "sandbox = '${SANDBOX_IMAGE}'" /etc/containerd/config.toml || grep -Fq "sandbox_image = '${SANDBOX_IMAGE}'" /etc/containerd/config.toml; } \
	|| die "the sandbox image is not set in /etc/containerd/config.toml"
grep -Fq "config_path = '${CERTS_DIR}'" /etc/containerd/config.toml \
	|| die "config_path is not set in /etc/containerd/config.toml: the registry mirrors would be ignored"

step "crictl, kubelet, kubeadm, kubectl $KUBERNETES_VERSION from the bundle"
tar -xzf "$BUNDLE_DIR/$CRICTL_TGZ" -C "$work/crictl"
[[ -x "$work/crictl/crictl" ]] || die "$CRICTL_TGZ has no crictl"
install_file 755 /usr/local/bin/crictl <"$work/crictl/crictl" || true
printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' \
	| install_file 644 /etc/crictl.yaml || true
# Where the deb packages put them: /usr/bin, the kubelet unit and kubeadm's
# drop-in (kubernetes/release's packaging) under /usr/lib/systemd/system.
kubelet_changed=0
install_file 755 /usr/bin/kubelet <"$BUNDLE_DIR/$KUBELET_BIN" && kubelet_changed=1
install_file 755 /usr/bin/kubeadm <"$BUNDLE_DIR/$KUBEADM_BIN" || true
install_file 755 /usr/bin/kubectl <"$BUNDLE_DIR/$KUBECTL_BIN" || true
install -d -m 755 /usr/lib/systemd/system/kubelet.service.d
cat <<'UNIT' | install_file 644 /usr/lib/systemd/system/kubelet.service && kubelet_changed=1
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
UNIT
cat <<'UNIT' | install_file 644 /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf && kubelet_changed=1
# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
UNIT
if [[ $kubelet_changed == 1 ]]; then
	systemctl daemon-reload
	# A kubelet that already runs (a node of the cluster) takes the new
	# binary; before kubeadm it restarts in a loop, as with the packages.
	if systemctl is-active -q kubelet; then systemctl restart kubelet; fi
fi
systemctl is-enabled -q kubelet 2>/dev/null || systemctl enable kubelet

step "checks"
got=$(kubeadm version -o short)
[[ "$got" == "$KUBERNETES_VERSION" ]] || die "kubeadm version is $got, expected $KUBERNETES_VERSION"
printf '  kubeadm %s, containerd %s, swap: %s\n' "$got" "$("$CONTAINERD" --version | awk '{print $3}')" "$(swapon --show --noheadings | wc -l) active"
printf '  %s resolves to %s\n' "$NODE_FQDN" "$(getent hosts -- "$NODE_FQDN" | awk '{print $1}' || true)"
printf 'ready for kubeadm on %s\n' "$NODE_NAME"
