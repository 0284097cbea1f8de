package adopt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// YAML writes the adopted spec as a commented cluster.yaml: the fields
// read from the cluster, the ones it cannot tell as comments to fill in,
// and the notes at the top. Every value read from the cluster is written
// as a JSON string (valid YAML), so no name or label can break the file.
// source names where it was read from (the context), for the header.
func (a *Adopted) YAML(source string) []byte {
	var b strings.Builder
	line := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	s := a.Cluster.Spec
	b.WriteString("# hybridctl cluster spec of the kubeadm cluster of " + oneLine(source) + ",\n")
	b.WriteString("# read by `hybridctl init --from-cluster`. Fill in what the cluster cannot\n")
	b.WriteString("# tell (the commented fields marked FILL IN), then:\n")
	b.WriteString("#   hybridctl plan -f FILE            validate\n")
	b.WriteString("#   hybridctl diff -f FILE ...        what apply would change (nothing, for the nodes already here)\n")
	b.WriteString("# The reference of every field: docs/spec.md.\n")
	if len(a.Notes) > 0 {
		b.WriteString("#\n# Notes:\n")
		for _, n := range a.Notes {
			b.WriteString("#   " + string(n.Severity) + ": " + n.Path + ": " + oneLine(n.Message) + "\n")
		}
	}
	if len(a.WindowsMissing) > 0 {
		b.WriteString("#\n# For Windows nodes the cluster lacks (apply adds them when the spec has a\n# Windows node; hybridctl diff shows each first):\n")
		for _, m := range a.WindowsMissing {
			b.WriteString("#   - " + oneLine(m) + "\n")
		}
	}
	line(0, "apiVersion: %s", spec.APIVersion)
	line(0, "kind: %s", spec.Kind)
	line(0, "metadata:")
	line(1, "# The cluster's name: the kubeconfig context apply imports the admin")
	line(1, "# credentials under (use --context for the one you have).")
	line(1, "name: %s", q(a.Cluster.Metadata.Name))
	line(0, "spec:")
	line(1, "kubernetesVersion: %s", q(s.KubernetesVersion))
	line(1, "controlPlaneEndpoint: %s", q(s.ControlPlaneEndpoint))
	line(1, "network:")
	line(2, "# Derived from the nodes' addresses: check it.")
	line(2, "nodeCIDR: %s", q(s.Network.NodeCIDR))
	line(2, "# The nodes' own network settings cannot be read from the cluster. With")
	line(2, "# configure: check (the default) they may stay empty: nodes keep theirs.")
	line(2, "# gateway: 192.0.2.1          # FILL IN for a node that needs its address set")
	line(2, "# dnsServers: [192.0.2.53]    # FILL IN to give Windows nodes these DNS servers")
	line(2, "# ntpServers: [ntp.example.com]")
	line(2, "# dnsSuffix: example.com      # node FQDNs are NAME.dnsSuffix")
	if s.Network.PodCIDR != "" {
		line(2, "podCIDR: %s", q(s.Network.PodCIDR))
	} else {
		line(2, "# podCIDR: 192.168.0.0/16   # FILL IN: kubeadm was given no pod subnet")
	}
	if s.Network.BlockSize != 0 {
		line(2, "blockSize: %d", s.Network.BlockSize)
	}
	line(2, "serviceCIDR: %s", q(s.Network.ServiceCIDR))
	line(2, "dnsDomain: %s", q(s.Network.DNSDomain))
	if s.Containerd.Version != "" {
		line(1, "# The Linux nodes' containerd (Node status).")
		line(1, "containerd: {version: %s}", q(s.Containerd.Version))
	}
	if s.AllowCgroupV1 {
		line(1, "# The kubelets run with failCgroupV1: false.")
		line(1, "allowCgroupV1: true")
	}
	if s.Images.Registry != "" {
		line(1, "images:")
		line(2, "registry: %s", q(s.Images.Registry))
	}
	c := s.Calico
	if c.Version != "" || c.Encapsulation != "" || c.BGP != "" || c.LinuxDataplane != "" || c.NATOutgoing != nil {
		line(1, "calico:")
		if c.Version != "" {
			line(2, "version: %s", q(c.Version))
		}
		if c.LinuxDataplane != "" {
			line(2, "linuxDataplane: %s", q(c.LinuxDataplane))
		}
		if c.Encapsulation != "" {
			line(2, "encapsulation: %s", q(c.Encapsulation))
		}
		if c.BGP != "" {
			line(2, "bgp: %s", q(c.BGP))
		}
		if c.NATOutgoing != nil {
			line(2, "natOutgoing: %t", *c.NATOutgoing)
		}
	}
	if s.KubeProxy.Mode != "" {
		line(1, "kubeProxy: {mode: %s}", q(s.KubeProxy.Mode))
	}
	line(1, "nodes:")
	for _, n := range s.Nodes {
		line(1, "- name: %s", q(n.Name))
		line(2, "role: %s", q(n.Role))
		line(2, "os: %s", q(n.OS))
		line(2, "address: %s", q(n.Address))
		user := spec.DefaultLinuxSSHUser
		if n.OS == spec.OSWindows {
			user = spec.DefaultWindowsSSHUser
		}
		line(2, "# ssh: {user: %s, port: %d}   # FILL IN: how apply reaches the node", user, spec.DefaultSSHPort)
		if n.Windows != nil {
			line(2, "windows: {build: %s}", q(n.Windows.Build))
		}
	}
	return []byte(b.String())
}

// q quotes a value read from the cluster as a YAML double-quoted string
// that reads back as s: JSON's quoting, with the C1 controls, DEL and the
// runes termtext escapes for terminals written as \uXXXX too, so the file
// shows as it is when printed. Bytes that are not UTF-8 become U+FFFD.
func q(s string) string {
	b, _ := json.Marshal(s)
	out := string(b)
	if termtext.IsSafe(out) {
		return out
	}
	var sb strings.Builder
	for _, r := range out {
		if r == 0x7f || !termtext.IsSafe(string(r)) {
			fmt.Fprintf(&sb, `\u%04x`, r)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// oneLine keeps a comment on one line: no line breaks or control
// characters from the cluster reach the file.
func oneLine(s string) string { return termtext.Line(s) }
