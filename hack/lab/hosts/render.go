package hosts

import (
	"fmt"
	"sort"
	"strings"
)

// The pure parts of the lab: the files written into a node's tree and the
// host's, and the command lines of the gateway's services.

// NetworkdFile is the node's systemd-networkd file for host0, nspawn's
// interface on the bridge: its spec address, the gateway (which forwards
// nothing, so the default route ends at the host), DNS on the gateway.
func (l *Lab) NetworkdFile(n Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by hybridctl's lab: %s on the lab bridge.\n", n.Name)
	b.WriteString("[Match]\nName=host0\n\n[Link]\n")
	if l.MTU > 0 {
		fmt.Fprintf(&b, "MTUBytes=%d\n", l.MTU)
	}
	b.WriteString("\n[Network]\n")
	fmt.Fprintf(&b, "Address=%s/%d\nGateway=%s\nDNS=%s\n", n.Address, l.Network.Bits(), l.Gateway, l.Gateway)
	if l.DNSSuffix != "" {
		fmt.Fprintf(&b, "Domains=%s\n", l.DNSSuffix)
	}
	b.WriteString("LinkLocalAddressing=no\nIPv6AcceptRA=no\n")
	return b.String()
}

// ResolvConf is the node's /etc/resolv.conf.
func (l *Lab) ResolvConf() string {
	s := fmt.Sprintf("nameserver %s\n", l.Gateway)
	if l.DNSSuffix != "" {
		s += "search " + l.DNSSuffix + "\n"
	}
	return s
}

// NodeHosts is the node's /etc/hosts: localhost and the node's own names.
func (l *Lab) NodeHosts(n Node) string {
	names := n.Name
	if n.FQDN != "" && n.FQDN != n.Name {
		names = n.FQDN + " " + n.Name
	}
	return fmt.Sprintf("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n%s %s\n", n.Address, names)
}

// SSHDConfig is the node's sshd drop-in: keys only.
const SSHDConfig = `# Written by hybridctl's lab: key authentication only.
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
`

// KmsgTmpfiles makes /dev/kmsg, which nspawn does not provide and the
// kubelet's OOM watcher opens, a link to the console.
const KmsgTmpfiles = "# Written by hybridctl's lab: the kubelet reads /dev/kmsg.\nL /dev/kmsg - - - - /dev/console\n"

// ModulesBuiltin lists the modules prepare.sh loads that the host's kernel
// has built in, so that modprobe finds them (the host has no module tree).
const ModulesBuiltin = "kernel/fs/overlayfs/overlay.ko\nkernel/net/bridge/br_netfilter.ko\nkernel/net/netfilter/nf_conntrack.ko\nkernel/drivers/net/vxlan/vxlan.ko\n"

// KubeletSysctls are the values the kubelet insists on. In a container these
// keys are read-only; the lab mounts files with these values over them in
// each node (the host's own values are left alone).
var KubeletSysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// SortedSysctls returns the keys of KubeletSysctls in order.
func SortedSysctls() []string {
	keys := make([]string, 0, len(KubeletSysctls))
	for k := range KubeletSysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// KnownHosts is the known_hosts file: each node's host key under its
// address, name and FQDN. pub maps a node name to its authorized_keys-form
// public key.
func (l *Lab) KnownHosts(pub map[string]string) string {
	var b strings.Builder
	for _, n := range l.Nodes {
		names := []string{n.Address.String(), n.Name}
		if n.FQDN != "" && n.FQDN != n.Name {
			names = append(names, n.FQDN)
		}
		fmt.Fprintf(&b, "%s %s\n", strings.Join(names, ","), strings.TrimSpace(pub[n.Name]))
	}
	return b.String()
}

// DnsmasqArgs is dnsmasq's command line: on the bridge's gateway address
// only, answering the plan's records and nothing else (no upstream, no
// /etc/hosts, no DHCP).
func (l *Lab) DnsmasqArgs(pidFile string) []string {
	args := []string{
		"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--no-poll",
		"--bind-interfaces", "--interface=" + l.Bridge(), "--except-interface=lo",
		"--listen-address=" + l.Gateway.String(), "--pid-file=" + pidFile, "--user=root", "--log-facility=-",
	}
	if l.DNSSuffix != "" {
		args = append(args, "--local=/"+l.DNSSuffix+"/")
	}
	for _, r := range l.Records {
		args = append(args, "--host-record="+r.Name+","+r.Address.String())
	}
	return args
}

// RegistryConfig is the distribution registry's configuration: TLS on the
// gateway, storage in the shared cache, deletes off.
func (l *Lab) RegistryConfig(storage, cert, key string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  cache: {}
  delete:
    enabled: false
http:
  addr: %q
  tls:
    certificate: %q
    key: %q
`, storage, l.Registry(), cert, key)
}

// EditHosts returns the host's /etc/hosts content with the lab's marked
// lines replaced by lines (none: removed). Other lines are kept as they are.
func EditHosts(content, marker string, lines []string) string {
	var out []string
	for _, line := range strings.SplitAfter(content, "\n") {
		if line == "" {
			continue
		}
		if strings.HasSuffix(strings.TrimRight(line, "\n"), " "+marker) {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		out = append(out, line)
	}
	for _, l := range lines {
		out = append(out, l+"\n")
	}
	return strings.Join(out, "")
}

// MarkedHostsLines returns the lines of /etc/hosts that carry a lab marker.
func MarkedHostsLines(content string) []string {
	var out []string
	for _, line := range strings.Split(content, "\n") {
		if strings.Contains(line, " "+HostsMarkerPrefix) {
			out = append(out, line)
		}
	}
	return out
}
