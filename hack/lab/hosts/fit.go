package hosts

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/hack/lab/artifacts"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// Misfit is one reason a spec cannot run in the lab, naming the field.
type Misfit struct {
	File string
	Line int
	Path string
	Msg  string
}

func (m Misfit) String() string {
	loc := m.File
	if m.Line > 0 {
		loc = fmt.Sprintf("%s:%d", m.File, m.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, m.Path, m.Msg)
}

// MisfitError lists every reason a spec does not fit the lab.
type MisfitError struct{ Misfits []Misfit }

func (e *MisfitError) Error() string {
	var b strings.Builder
	b.WriteString("the spec does not fit the lab:")
	for _, m := range e.Misfits {
		b.WriteString("\n  ")
		b.WriteString(m.String())
	}
	return b.String()
}

// FromSpec checks that a loaded, valid spec fits the lab and returns the
// lab it describes. dir is the lab's own directory, cache the shared cache.
// The error is a *MisfitError when the spec is valid but does not fit.
func FromSpec(r *spec.Result, dir, cache string) (*Lab, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	c := r.Cluster
	p, err := plan.Derive(c, r.Diagnostics.Warnings())
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", r.File, err)
	}
	var bad []Misfit
	add := func(path, format string, args ...any) {
		bad = append(bad, Misfit{File: r.File, Line: r.Line(path), Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	gw, err := netip.ParseAddr(p.NodeNetwork.Gateway)
	if err != nil {
		return nil, fmt.Errorf("%s: gateway %q: %w", r.File, p.NodeNetwork.Gateway, err)
	}
	network, err := netip.ParsePrefix(p.NodeNetwork.CIDR)
	if err != nil {
		return nil, fmt.Errorf("%s: node network %q: %w", r.File, p.NodeNetwork.CIDR, err)
	}
	network = network.Masked()
	lab := &Lab{
		Name: c.Metadata.Name, Dir: dir, CacheDir: cache,
		Network: network, Gateway: gw, DNSSuffix: p.DNSSuffix, MTU: p.NodeNetwork.MTU,
		Plan:        p,
		APIEndpoint: net.JoinHostPort(p.APIServer.Host, strconv.Itoa(p.APIServer.Port)),
		Versions: artifacts.BundleVersions{
			Kubernetes: c.Spec.KubernetesVersion, Containerd: c.Spec.Containerd.Version, Runc: c.Spec.Runc.Version,
			CNIPlugins: c.Spec.CNIPlugins.Version, Crictl: c.Spec.Crictl.Version,
		},
	}
	if err := validName(lab.Name); err != nil {
		add("metadata.name", "the lab names its directory and cgroups after the cluster: %v", err)
	}
	if got, want := c.Spec.Images.Registry, lab.Registry(); got != want {
		add("spec.images.registry", "the lab serves every image from its registry on the gateway; set it to %s (it is %q)", want, got)
	}
	if got := c.Spec.Packages.Source; got != spec.SourceBundle {
		add("spec.packages.source", "the lab's nodes have no internet; set it to %s (apply --bundle, which `lab flags` prints), not %q", spec.SourceBundle, got)
	}
	if d := p.NodeNetwork.DNSServers; len(d) != 1 || d[0] != gw.String() {
		add("spec.network.dnsServers", "the lab's DNS runs on the gateway; set it to [%s] (it is [%s])", gw, joinComma(d))
	}
	for _, s := range p.NodeNetwork.NTPServers {
		if a, err := netip.ParseAddr(s); err == nil && a != gw {
			add("spec.network.ntpServers", "%s is not the gateway %s: the lab's nodes reach nothing else", s, gw)
		}
	}
	if _, err := artifacts.LookupRelease(c.Spec.KubernetesVersion); err != nil {
		add("spec.kubernetesVersion", "the lab's bundle and images hold what it builds, Kubernetes %s, not %q",
			strings.Join(artifacts.KubernetesVersions(), " or "), c.Spec.KubernetesVersion)
	}
	for _, v := range []struct{ path, got, want string }{
		{"spec.containerd.version", c.Spec.Containerd.Version, artifacts.ContainerdVersion},
		{"spec.runc.version", c.Spec.Runc.Version, artifacts.RuncVersion},
		{"spec.cniPlugins.version", c.Spec.CNIPlugins.Version, artifacts.CNIPluginsVersion},
		{"spec.crictl.version", c.Spec.Crictl.Version, artifacts.CrictlVersion},
	} {
		if v.got != v.want {
			add(v.path, "the lab's bundle holds what it builds, version %s, not %q", v.want, v.got)
		}
	}
	if !c.Spec.AllowCgroupV1 && cgroupV1() {
		add("spec.allowCgroupV1", "this host runs cgroup v1, and so do the lab's nodes; set it to true")
	}
	for i, n := range p.Nodes {
		path := fmt.Sprintf("spec.nodes[%d]", i)
		if n.IsWindows() {
			add(path+".os", "%s is a Windows node; the lab runs Linux nodes only (systemd-nspawn), use a Linux-only spec", n.Name)
			continue
		}
		if err := validName(n.Name); err != nil {
			add(path+".name", "%v", err)
		}
		if err := validUser(n.SSH.User); err != nil {
			add(path+".ssh.user", "%v", err)
		}
		if n.SSH.Host != "" && n.SSH.Host != n.Address {
			add(path+".ssh.host", "the lab's nodes are reached at their address %s, not %q", n.Address, n.SSH.Host)
		}
		if n.SSH.Port != 0 && n.SSH.Port != 22 {
			add(path+".ssh.port", "the lab's sshd listens on 22, not %d", n.SSH.Port)
		}
		a, err := netip.ParseAddr(n.Address)
		if err != nil || !network.Contains(a) || a == gw {
			add(path+".address", "%q must be an address in %s other than the gateway", n.Address, network)
			continue
		}
		lab.Nodes = append(lab.Nodes, Node{
			Name: n.Name, FQDN: n.FQDN, Address: a, User: n.SSH.User, ControlPlane: n.IsControlPlane(),
		})
	}
	if len(bad) > 0 {
		return nil, &MisfitError{Misfits: bad}
	}
	for _, rec := range p.DNSRecords {
		if rec.Type != "A" {
			continue
		}
		a, err := netip.ParseAddr(rec.Address)
		if err != nil {
			continue
		}
		lab.Records = append(lab.Records, Record{Name: strings.TrimSuffix(rec.Name, "."), Address: a})
	}
	if len(lab.Nodes) == 0 {
		return nil, errors.New(r.File + ": the spec has no Linux node")
	}
	return lab, nil
}
