package spec

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Rule is one validation rule with a stable ID. The list of rules is
// Rules(), in the order they run.
type Rule struct {
	ID   string
	Name string
	// Doc is a one-line explanation: what is checked and why.
	Doc   string
	check func(v *validator)
}

// ruleStructure reports YAML that does not fit the spec's shape (unknown
// fields, wrong types); the loader applies it, not validate.
var ruleStructure = Rule{ID: "S001", Name: "structure",
	Doc: "The file is one YAML document whose fields and types are exactly those of hybridctl.dev/v1alpha1 Cluster; unknown or misspelled fields are errors, not ignored."}

// ruleNodeCount refuses more than MaxNodes nodes; the loader applies it
// before decoding the list, since everything after grows with it.
var ruleNodeCount = Rule{ID: "S110", Name: "node-count",
	Doc: "At most 5,000 nodes, the largest cluster Kubernetes supports (its scalability thresholds): render writes a script and a join file per node and apply connects to each; a longer list is refused before anything else is checked."}

// Rules returns every rule in the order it runs, starting with the
// structural rule the loader applies.
func Rules() []Rule {
	return []Rule{
		ruleStructure,
		{ID: "S002", Name: "kind", Doc: "apiVersion is hybridctl.dev/v1alpha1, kind is Cluster and metadata.name is a DNS label (it names the kubeconfig context).", check: checkKind},
		{ID: "S101", Name: "network-cidrs", Doc: "nodeCIDR, podCIDR and serviceCIDR are IPv4 CIDRs written as their network address; the gateway and DNS servers are IPv4 addresses.", check: checkCIDRs},
		{ID: "S102", Name: "network-overlap", Doc: "The node, pod and service networks are pairwise disjoint: an overlap makes routes ambiguous on every node.", check: checkOverlap},
		{ID: "S103", Name: "address-in-node-network", Doc: "Every node address and the gateway are host addresses inside nodeCIDR.", check: checkAddressesInNodeCIDR},
		{ID: "S104", Name: "unique-nodes", Doc: "Node names and addresses are unique.", check: checkUnique},
		{ID: "S105", Name: "node-names", Doc: "Node names are lowercase DNS labels (RFC 1123): they become Kubernetes Node names and host names.", check: checkNodeNames},
		{ID: "S106", Name: "node-fields", Doc: "Every node has a name, an address, a role (control-plane or worker) and an OS (linux or windows); windows settings only on Windows nodes; ssh.user is a POSIX user name (a Windows account name, USER, DOMAIN\\USER or USER@DOMAIN, on a Windows node) and ssh.host an IP address or a DNS name, so that neither can be read as an option of ssh or scp.", check: checkNodeFields},
		{ID: "S107", Name: "dns-names", Doc: "dnsSuffix and dnsDomain are DNS names; NTP servers are names or addresses.", check: checkDNSNames},
		{ID: "S108", Name: "mtu", Doc: "The node network MTU leaves room for the VXLAN header (50 bytes) and is at most 9000.", check: checkMTU},
		{ID: "S109", Name: "dns-servers-outside-cluster", Doc: "A DNS server of the nodes is not the cluster's DNS Service IP (the 10th address of serviceCIDR) nor inside the service or pod network (warning): the nodes need DNS before the cluster runs, and CoreDNS forwards to the nodes' resolvers, so it would ask itself.", check: checkDNSServersOutside},
		ruleNodeCount,
		{ID: "S201", Name: "block-size", Doc: "blockSize is within Calico's IPv4 range (20-32) and not shorter than the pod CIDR prefix.", check: checkBlockSize},
		{ID: "S202", Name: "pod-cidr-capacity", Doc: "The pod CIDR holds at least one address block per node (a warning below two per node: a node that cannot get a second block stops at one block of pods).", check: checkPodCapacity},
		{ID: "S203", Name: "service-cidr-size", Doc: "The service CIDR is no larger than /12 (kube-apiserver's limit of 20 host bits for IPv4) and leaves room for the API and DNS service IPs.", check: checkServiceCIDR},
		{ID: "S301", Name: "windows-computer-name", Doc: "A Windows node's name is at most 15 characters: the node name comes from the computer name, and a NetBIOS name is at most 15 characters.", check: checkWindowsName},
		{ID: "S302", Name: "windows-build", Doc: "windows.build is a known Windows Server build: 10.0.17763 (2019), 10.0.20348 (2022), 10.0.26100 (2025); it picks the RuntimeClass and image tags. So is every build of calico.checkedWindowsBuilds.", check: checkWindowsBuild},
		{ID: "S303", Name: "windows-block-capacity", Doc: "On Windows, Calico holds one block per node and reserves 4 of its addresses, so max pods = addresses per block - 4; the block must leave at least one pod address.", check: checkWindowsBlock},
		{ID: "S401", Name: "windows-encapsulation", Doc: "With a Windows node, Calico encapsulation is VXLAN (not VXLANCrossSubnet, IPIP or None): Calico for Windows supports only VXLAN without BGP.", check: checkWindowsEncapsulation},
		{ID: "S402", Name: "windows-bgp", Doc: "With a Windows node, Calico BGP is Disabled: Calico for Windows cannot do VXLAN together with BGP.", check: checkWindowsBGP},
		{ID: "S403", Name: "linux-workers", Doc: "With a Windows node, at least one Linux worker exists (Calico's cluster components, CoreDNS and webhooks run only on Linux); a warning below two, since draining the only one leaves them nowhere to go.", check: checkLinuxWorkers},
		{ID: "S404", Name: "control-plane", Doc: "At least one control-plane node, running Linux; an even number of control-plane nodes gives etcd no extra fault tolerance.", check: checkControlPlane},
		{ID: "S501", Name: "control-plane-endpoint", Doc: "controlPlaneEndpoint is host:port; a warning when the host is an IP address (a name can later point at a virtual address for a second control plane without rebuilding the cluster).", check: checkEndpoint},
		{ID: "S502", Name: "control-plane-endpoint-address", Doc: "An IP controlPlaneEndpoint is an IPv4 address outside the service and pod networks: a Service or pod address exists only once the cluster runs, and an IPv6 one cannot be reached in an IPv4-only cluster.", check: checkEndpointAddress},
		{ID: "S503", Name: "api-port", Doc: "The port of controlPlaneEndpoint, which kube-apiserver binds on every control-plane node, is not one the node already uses (etcd 2379-2381, the kubelet 10248 and 10250, kube-proxy 10249 and 10256, the controller-manager 10257, the scheduler 10259, Calico Typha 5473, BGP 179 when enabled) and not in the NodePort range 30000-32767, where kube-proxy's rules would take its traffic.", check: checkAPIPort},
		{ID: "S601", Name: "versions", Doc: "Every version, whatever packages.source says, is a release: MAJOR.MINOR.PATCH (numbers without leading zeros), optionally a pre-release of dot-separated letters, digits and '-' (v1.38.0-rc.1), nothing else (no build metadata, white space or '/'), at most 64 characters, since versions become download URLs, bundle file names, image tags and words of scripts and the runbook; kubernetesVersion and calico.version have a leading v, containerd, crictl, runc and cniPlugins are written without it.", check: checkVersions},
		{ID: "S602", Name: "version-compat", Doc: "crictl's minor matches Kubernetes' (warning); a Kubernetes version outside 1.34-1.37, older or newer, is a warning; containerd below 2.0 is a warning; Calico from v3.33 on Kubernetes from 1.36 uses the native projectcalico.org/v3 CRDs.", check: checkVersionCompat},
		{ID: "S603", Name: "enums", Doc: "calico.linuxDataplane is Nftables, Iptables or BPF; encapsulation VXLAN, VXLANCrossSubnet, IPIP, IPIPCrossSubnet or None; bgp Enabled or Disabled; kubeProxy.mode nftables, iptables or ipvs.", check: checkEnums},
		{ID: "S604", Name: "addons", Doc: "Add-on versions are release versions as S601 says, with a leading v (they name the add-on's release download).", check: checkAddons},
		{ID: "S701", Name: "private-registry", Doc: "images.registry is host[:port][/path] with no scheme, tag or digest (an IPv6 address in brackets, a port 1-65535, a host with a dot or a port, or localhost, so it is not read as a Docker Hub namespace); images.registryCA is a file beside the spec holding only PEM CERTIFICATE blocks.", check: checkRegistry},
		{ID: "S702", Name: "offline-settings", Doc: "packages.source is upstream or bundle; network.configure is check, netplan or systemd-networkd; a bundle without a private registry still pulls images from the internet (warning).", check: checkOffline},
		{ID: "S703", Name: "check-workloads", Doc: "checkWorkloads.image is an image reference (registry/path:tag or @sha256:digest) and a warning when it names no tag or digest or the tag latest (a node may run another image than the plan lists); checkWorkloads.imagePullSecret is a Secret name (a DNS subdomain).", check: checkCheckWorkloads},
	}
}

// validator collects diagnostics for one spec.
type validator struct {
	r     *Result
	c     *Cluster
	rule  Rule
	diags Diagnostics
	// parsed networks, valid only when they parsed
	nodeNet, podNet, svcNet netip.Prefix
}

func (v *validator) report(sev finding.Severity, path, format string, a ...any) {
	v.diags = append(v.diags, Diagnostic{
		Severity: sev, Rule: v.rule.ID, Name: v.rule.Name,
		File: v.r.File, Line: v.r.Line(path), Path: path, Message: fmt.Sprintf(format, a...),
	})
}

func (v *validator) errorf(path, format string, a ...any) {
	v.report(finding.Error, path, format, a...)
}

func (v *validator) warnf(path, format string, a ...any) {
	v.report(finding.Warning, path, format, a...)
}

func validate(r *Result) Diagnostics {
	v := &validator{r: r, c: r.Cluster}
	n := &v.c.Spec.Network
	v.nodeNet, _ = parseIPv4Prefix(n.NodeCIDR)
	v.podNet, _ = parseIPv4Prefix(n.PodCIDR)
	v.svcNet, _ = parseIPv4Prefix(n.ServiceCIDR)
	for _, rule := range Rules() {
		if rule.check == nil {
			continue
		}
		v.rule = rule
		rule.check(v)
	}
	return v.diags
}

func nodePath(i int, field string) string {
	p := fmt.Sprintf("spec.nodes[%d]", i)
	if field != "" {
		p += "." + field
	}
	return p
}

func parseIPv4Prefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("not IPv4")
	}
	return p, nil
}

func checkKind(v *validator) {
	if v.c.APIVersion != APIVersion {
		v.errorf("apiVersion", "is %q; want %q", v.c.APIVersion, APIVersion)
	}
	if v.c.Kind != Kind {
		v.errorf("kind", "is %q; want %q", v.c.Kind, Kind)
	}
	name := v.c.Metadata.Name
	switch {
	case name == "":
		v.errorf("metadata.name", "is required: it names the cluster and its kubeconfig context")
	case len(validation.IsDNS1123Label(name)) > 0:
		v.errorf("metadata.name", "%q is not a DNS label: %s", name, strings.Join(validation.IsDNS1123Label(name), "; "))
	}
}

func checkCIDRs(v *validator) {
	n := v.c.Spec.Network
	for _, f := range []struct{ path, val string }{
		{"spec.network.nodeCIDR", n.NodeCIDR},
		{"spec.network.podCIDR", n.PodCIDR},
		{"spec.network.serviceCIDR", n.ServiceCIDR},
	} {
		if f.val == "" {
			v.errorf(f.path, "is required")
			continue
		}
		p, err := netip.ParsePrefix(f.val)
		switch {
		case err != nil:
			v.errorf(f.path, "%q is not a CIDR (want for example 192.168.10.0/24)", f.val)
		case !p.Addr().Is4():
			v.errorf(f.path, "%q is not IPv4; hybridctl builds IPv4 clusters (Calico for Windows has no dual stack)", f.val)
		case p.Masked() != p:
			v.errorf(f.path, "%q has host bits set; the network is %s", f.val, p.Masked())
		}
	}
	// With configure check (the default) the nodes' network is theirs:
	// the gateway is checked and the DNS servers are given to Windows
	// nodes when set, and left as they are when not. Writing the Linux
	// nodes' configuration needs both.
	writes := n.Configure == NetworkNetplan || n.Configure == NetworkSystemdNetworkd
	if n.Gateway == "" {
		if writes {
			v.errorf("spec.network.gateway", "is required with network.configure %s: the nodes' default gateway", n.Configure)
		}
	} else if a, err := netip.ParseAddr(n.Gateway); err != nil || !a.Is4() {
		v.errorf("spec.network.gateway", "%q is not an IPv4 address", n.Gateway)
	}
	if len(n.DNSServers) == 0 && writes {
		v.errorf("spec.network.dnsServers", "is required with network.configure %s: at least one DNS server for the nodes", n.Configure)
	}
	for i, s := range n.DNSServers {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			v.errorf(fmt.Sprintf("spec.network.dnsServers[%d]", i), "%q is not an IPv4 address", s)
		}
	}
}

func checkOverlap(v *validator) {
	nets := []struct {
		path string
		p    netip.Prefix
	}{
		{"spec.network.nodeCIDR", v.nodeNet},
		{"spec.network.podCIDR", v.podNet},
		{"spec.network.serviceCIDR", v.svcNet},
	}
	for i := 0; i < len(nets); i++ {
		for j := i + 1; j < len(nets); j++ {
			a, b := nets[i], nets[j]
			if a.p.IsValid() && b.p.IsValid() && a.p.Overlaps(b.p) {
				v.errorf(b.path, "%s overlaps %s %s", b.p, strings.TrimPrefix(a.path, "spec.network."), a.p)
			}
		}
	}
}

// isHostAddr reports whether a is a usable host address of p (not the
// network or broadcast address, for prefixes shorter than /31).
func isHostAddr(p netip.Prefix, a netip.Addr) bool {
	if !p.Contains(a) {
		return false
	}
	if p.Bits() >= 31 {
		return true
	}
	return a != p.Masked().Addr() && a != lastAddr(p)
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	u := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	u |= host
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

func checkAddressesInNodeCIDR(v *validator) {
	if !v.nodeNet.IsValid() {
		return
	}
	if gw, err := netip.ParseAddr(v.c.Spec.Network.Gateway); err == nil && gw.Is4() && !isHostAddr(v.nodeNet, gw) {
		v.errorf("spec.network.gateway", "%s is not a host address in nodeCIDR %s", gw, v.nodeNet)
	}
	for i, node := range v.c.Spec.Nodes {
		a, err := netip.ParseAddr(node.Address)
		if err != nil || !a.Is4() {
			continue // reported by node-fields
		}
		if !isHostAddr(v.nodeNet, a) {
			v.errorf(nodePath(i, "address"), "%s is not a host address in nodeCIDR %s", a, v.nodeNet)
		}
		if gw, err := netip.ParseAddr(v.c.Spec.Network.Gateway); err == nil && gw == a {
			v.errorf(nodePath(i, "address"), "%s is the gateway's address", a)
		}
	}
}

func checkUnique(v *validator) {
	names := map[string]int{}
	addrs := map[string]int{}
	for i, node := range v.c.Spec.Nodes {
		if node.Name != "" {
			key := strings.ToLower(node.Name)
			if j, dup := names[key]; dup {
				v.errorf(nodePath(i, "name"), "%q is already the name of spec.nodes[%d]", node.Name, j)
			} else {
				names[key] = i
			}
		}
		if a, err := netip.ParseAddr(node.Address); err == nil {
			key := a.String()
			if j, dup := addrs[key]; dup {
				v.errorf(nodePath(i, "address"), "%s is already the address of spec.nodes[%d] (%s)", a, j, v.c.Spec.Nodes[j].Name)
			} else {
				addrs[key] = i
			}
		}
	}
}

func checkNodeNames(v *validator) {
	for i, node := range v.c.Spec.Nodes {
		if node.Name == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(node.Name); len(errs) > 0 {
			msg := fmt.Sprintf("%q is not a valid node name: a node name has at most 63 characters, only lowercase letters, digits and '-', and starts and ends with a letter or digit (an RFC 1123 label: it becomes the Kubernetes Node name and the host name)", node.Name)
			if s, ok := NodeNameSuggestion(node.Name); ok {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			v.errorf(nodePath(i, "name"), "%s", msg)
		}
	}
}

// NodeNameSuggestion turns name into a valid node name when it can: lower
// case, every run of other characters ('_', '.', ' ') one '-', no '-' at
// either end (K8S_Win_1 becomes k8s-win-1). ok is false when nothing valid
// is left or the result is longer than a DNS label.
func NodeNameSuggestion(name string) (string, bool) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	s := b.String()
	if s == "" || s == name || len(validation.IsDNS1123Label(s)) > 0 {
		return "", false
	}
	return s, true
}

func checkNodeFields(v *validator) {
	if len(v.c.Spec.Nodes) == 0 {
		v.errorf("spec.nodes", "is required: at least a control-plane node")
		return
	}
	for i, node := range v.c.Spec.Nodes {
		if node.Name == "" {
			v.errorf(nodePath(i, "name"), "is required")
		}
		if node.Address == "" {
			v.errorf(nodePath(i, "address"), "is required")
		} else if a, err := netip.ParseAddr(node.Address); err != nil || !a.Is4() {
			v.errorf(nodePath(i, "address"), "%q is not an IPv4 address", node.Address)
		}
		switch node.Role {
		case RoleControlPlane, RoleWorker:
		default:
			v.errorf(nodePath(i, "role"), "%q is not a role; want %s or %s", node.Role, RoleControlPlane, RoleWorker)
		}
		switch node.OS {
		case OSLinux, OSWindows:
		default:
			v.errorf(nodePath(i, "os"), "%q is not an OS; want %s or %s", node.OS, OSLinux, OSWindows)
		}
		if node.OS == OSLinux && node.Windows != nil {
			v.errorf(nodePath(i, "windows"), "is set on a Linux node; set os: windows or remove it")
		}
		if node.SSH != nil {
			if node.SSH.Port < 1 || node.SSH.Port > 65535 {
				v.errorf(nodePath(i, "ssh.port"), "%d is not a TCP port", node.SSH.Port)
			}
			if p := SSHUserProblem(node.SSH.User, node.IsWindows()); node.SSH.User != "" && p != "" {
				v.errorf(nodePath(i, "ssh.user"), "%s", p)
			}
			if p := SSHHostProblem(node.SSH.Host); node.SSH.Host != "" && p != "" {
				v.errorf(nodePath(i, "ssh.host"), "%s", p)
			}
		}
	}
}

// IsDNSName reports whether s is a DNS name (an RFC 1123 subdomain, any
// case).
func IsDNSName(s string) bool { return isDNSName(s) }

func isDNSName(s string) bool {
	return len(validation.IsDNS1123Subdomain(strings.ToLower(s))) == 0
}

func checkDNSNames(v *validator) {
	n := v.c.Spec.Network
	if n.DNSSuffix != "" && !isDNSName(n.DNSSuffix) {
		v.errorf("spec.network.dnsSuffix", "%q is not a DNS name", n.DNSSuffix)
	}
	if !isDNSName(n.DNSDomain) {
		v.errorf("spec.network.dnsDomain", "%q is not a DNS name", n.DNSDomain)
	}
	for i, s := range n.NTPServers {
		if _, err := netip.ParseAddr(s); err == nil {
			continue
		}
		if !isDNSName(s) {
			v.errorf(fmt.Sprintf("spec.network.ntpServers[%d]", i), "%q is neither a DNS name nor an IP address", s)
		}
	}
}

// nodeCountDiagnostic is ruleNodeCount's error for n nodes listed at line.
func nodeCountDiagnostic(file string, line, n int) Diagnostic {
	return Diagnostic{Severity: finding.Error, Rule: ruleNodeCount.ID, Name: ruleNodeCount.Name, File: file, Line: line, Path: "spec.nodes",
		Message: fmt.Sprintf("has %d nodes; Kubernetes supports clusters of at most %d, and what hybridctl does grows with them (render writes files for each, apply connects to each); the rest of the spec is checked once the list is within the limit", n, MaxNodes)}
}

func checkMTU(v *validator) {
	mtu := v.c.Spec.Network.MTU
	if mtu < MinMTU || mtu > MaxMTU {
		v.errorf("spec.network.mtu", "%d is outside %d-%d", mtu, MinMTU, MaxMTU)
	}
}

func checkBlockSize(v *validator) {
	bs := v.c.Spec.Network.BlockSize
	if bs < MinBlockSize || bs > MaxBlockSize {
		v.errorf("spec.network.blockSize", "%d is outside Calico's IPv4 block size range %d-%d", bs, MinBlockSize, MaxBlockSize)
		return
	}
	if v.podNet.IsValid() && bs < v.podNet.Bits() {
		v.errorf("spec.network.blockSize", "/%d blocks do not fit in podCIDR %s", bs, v.podNet)
	}
}

func checkPodCapacity(v *validator) {
	bs := v.c.Spec.Network.BlockSize
	if !v.podNet.IsValid() || bs < v.podNet.Bits() || bs > 32 || bs < 20 {
		return
	}
	blocks := 1 << (bs - v.podNet.Bits())
	nodes := len(v.c.Spec.Nodes)
	switch {
	case blocks < nodes:
		v.errorf("spec.network.podCIDR", "%s holds %d /%d block%s for %d node%s; every node needs at least one", v.podNet, blocks, bs, plural(blocks), nodes, plural(nodes))
	case blocks < 2*nodes:
		v.warnf("spec.network.podCIDR", "%s holds %d /%d block%s for %d node%s, fewer than two per node: Linux nodes cannot grow past one block of pods", v.podNet, blocks, bs, plural(blocks), nodes, plural(nodes))
	}
}

func checkServiceCIDR(v *validator) {
	if !v.svcNet.IsValid() {
		return
	}
	if v.svcNet.Bits() < 12 {
		v.errorf("spec.network.serviceCIDR", "%s is larger than /12; kube-apiserver allows at most 20 host bits for an IPv4 service range", v.svcNet)
	}
	if v.svcNet.Bits() > 28 {
		v.errorf("spec.network.serviceCIDR", "%s is too small: it must hold the API service IP (.1), the DNS service IP (.10) and the services", v.svcNet)
	}
}

func checkWindowsName(v *validator) {
	for i, node := range v.c.Spec.Nodes {
		if node.IsWindows() && len(node.Name) > MaxWindowsNodeName {
			v.errorf(nodePath(i, "name"), "%q is %d characters; a Windows computer name is at most %d", node.Name, len(node.Name), MaxWindowsNodeName)
		}
	}
}

func knownBuilds() string {
	var parts []string
	for _, r := range WindowsReleases() {
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Build, r.Year))
	}
	return strings.Join(parts, ", ")
}

func checkWindowsBuild(v *validator) {
	for i, node := range v.c.Spec.Nodes {
		if !node.IsWindows() || node.Windows == nil {
			continue
		}
		if _, ok := WindowsReleaseForBuild(node.Windows.Build); !ok {
			v.errorf(nodePath(i, "windows.build"), "%q is not a known Windows Server build; known builds: %s", node.Windows.Build, knownBuilds())
		}
	}
	for i, b := range v.c.Spec.Calico.CheckedWindowsBuilds {
		if _, ok := WindowsReleaseForBuild(b); !ok {
			v.errorf(fmt.Sprintf("spec.calico.checkedWindowsBuilds[%d]", i), "%q is not a known Windows Server build; known builds: %s", b, knownBuilds())
		}
	}
}

// WindowsMaxPods is the pod capacity of a Windows node with /blockSize
// blocks: Calico on Windows holds one block and reserves four addresses in
// it (network, gateway, Calico_ep, last).
func WindowsMaxPods(blockSize int) int {
	return 1<<(32-blockSize) - 4
}

func checkWindowsBlock(v *validator) {
	bs := v.c.Spec.Network.BlockSize
	if !v.c.HasWindows() || bs < 20 || bs > 32 {
		return
	}
	if WindowsMaxPods(bs) < 1 {
		v.errorf("spec.network.blockSize", "/%d blocks leave %d addresses for pods on a Windows node (Calico reserves 4 per block); use /29 or larger blocks", bs, max(WindowsMaxPods(bs), 0))
	}
}

func firstWindows(c *Cluster) int {
	for i, n := range c.Spec.Nodes {
		if n.IsWindows() {
			return i
		}
	}
	return -1
}

func checkWindowsEncapsulation(v *validator) {
	w := firstWindows(v.c)
	if w < 0 {
		return
	}
	if enc := v.c.Spec.Calico.Encapsulation; enc != "VXLAN" {
		v.errorf("spec.calico.encapsulation", "is %q, but spec.nodes[%d] (%s) runs Windows: Calico for Windows needs VXLAN (not VXLANCrossSubnet, IPIP or None)", enc, w, v.c.Spec.Nodes[w].Name)
	}
}

func checkWindowsBGP(v *validator) {
	w := firstWindows(v.c)
	if w < 0 {
		return
	}
	if bgp := v.c.Spec.Calico.BGP; bgp != "Disabled" {
		v.errorf("spec.calico.bgp", "is %q, but spec.nodes[%d] (%s) runs Windows: Calico for Windows cannot do VXLAN with BGP; set Disabled", bgp, w, v.c.Spec.Nodes[w].Name)
	}
}

func checkLinuxWorkers(v *validator) {
	w := firstWindows(v.c)
	if w < 0 {
		return
	}
	linux := 0
	for _, n := range v.c.Spec.Nodes {
		if n.OS == OSLinux && n.Role == RoleWorker {
			linux++
		}
	}
	switch linux {
	case 0:
		v.errorf("spec.nodes", "has a Windows node (%s) but no Linux worker: CoreDNS, the Tigera operator, Typha, calico-kube-controllers and webhooks run only on Linux", v.c.Spec.Nodes[w].Name)
	case 1:
		v.warnf("spec.nodes", "has one Linux worker: draining it leaves CoreDNS, webhooks and the Calico controllers nowhere to go; two are recommended")
	}
}

func checkControlPlane(v *validator) {
	count := 0
	for i, n := range v.c.Spec.Nodes {
		if n.Role != RoleControlPlane {
			continue
		}
		count++
		if n.IsWindows() {
			v.errorf(nodePath(i, "os"), "%s is a control-plane node running Windows; the control plane runs on Linux", n.Name)
		}
	}
	if len(v.c.Spec.Nodes) > 0 && count == 0 {
		v.errorf("spec.nodes", "has no control-plane node")
	}
	if count > 0 && count%2 == 0 {
		v.warnf("spec.nodes", "has %d control-plane nodes; an even number of etcd members tolerates no more failures than one fewer", count)
	}
}

// SplitEndpoint splits host:port of the control-plane endpoint.
func SplitEndpoint(ep string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(ep)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not a TCP port", p)
	}
	if h == "" {
		return "", 0, fmt.Errorf("missing host")
	}
	return h, n, nil
}

func checkEndpoint(v *validator) {
	ep := v.c.Spec.ControlPlaneEndpoint
	const path = "spec.controlPlaneEndpoint"
	if ep == "" {
		v.errorf(path, "is required: host:port of the API, for example k8s-api.example.com:6443")
		return
	}
	host, _, err := SplitEndpoint(ep)
	if err != nil {
		v.errorf(path, "%q is not host:port: %v", ep, err)
		return
	}
	if _, err := netip.ParseAddr(host); err == nil {
		v.warnf(path, "%q is an IP address; a DNS name lets a second control plane or a virtual address take over later without rebuilding the cluster", ep)
		return
	}
	if !isDNSName(host) {
		v.errorf(path, "host %q is neither a DNS name nor an IP address", host)
	}
}

// controlPlanePorts are the TCP ports a control-plane node of the guide's
// cluster already listens on (kubeadm's static pods, the kubelet,
// kube-proxy, Calico), in port order; BGP only when Calico runs it.
type portUse struct {
	first, last int
	what        string
	bgp         bool
}

func controlPlanePorts() []portUse {
	return []portUse{
		{179, 179, "Calico BGP", true},
		{2379, 2381, "etcd (client, peer and metrics)", false},
		{5473, 5473, "Calico Typha", false},
		{10248, 10248, "the kubelet's health check", false},
		{10249, 10249, "kube-proxy's metrics", false},
		{10250, 10250, "the kubelet API", false},
		{10256, 10256, "kube-proxy's health check", false},
		{10257, 10257, "kube-controller-manager", false},
		{10259, 10259, "kube-scheduler", false},
		{30000, 32767, nodePortRange, false},
	}
}

// nodePortRange is the last of controlPlanePorts: a port there is not
// taken by a program but by kube-proxy's rules.
const nodePortRange = "the NodePort range (30000-32767)"

func checkAPIPort(v *validator) {
	const path = "spec.controlPlaneEndpoint"
	_, port, err := SplitEndpoint(v.c.Spec.ControlPlaneEndpoint)
	if err != nil {
		return // S501 reports it
	}
	for _, r := range controlPlanePorts() {
		if port < r.first || port > r.last || (r.bgp && v.c.Spec.Calico.BGP != "Enabled") {
			continue
		}
		if r.what == nodePortRange {
			v.errorf(path, "port %d is in %s, so kube-proxy would send its traffic to NodePort Services instead of kube-apiserver; use 6443", port, r.what)
			return
		}
		v.errorf(path, "port %d is taken on the control-plane node by %s, so kube-apiserver cannot listen on it there; use 6443", port, r.what)
		return
	}
}

// firstControlPlane is the address of the first control-plane node, for
// fixes; "" when there is none.
func (v *validator) firstControlPlane() string {
	for _, n := range v.c.Spec.Nodes {
		if n.Role == "control-plane" && n.Address != "" {
			return n.Address
		}
	}
	return ""
}

// nthHost is the n-th address of a prefix (n=1: the first after the
// network address), as the plan counts the API and DNS service IPs.
func nthHost(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

func checkEndpointAddress(v *validator) {
	const path = "spec.controlPlaneEndpoint"
	host, port, err := SplitEndpoint(v.c.Spec.ControlPlaneEndpoint)
	if err != nil {
		return // S501 reports it
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return // a DNS name
	}
	if v.nodeNet.IsValid() && v.nodeNet.Contains(a) {
		return // a node address; S102 reports networks that overlap
	}
	fix := "use a DNS name for the API"
	if cp := v.firstControlPlane(); cp != "" {
		fix = fmt.Sprintf("use the control-plane node's address (%s) or a DNS name that resolves to it", net.JoinHostPort(cp, strconv.Itoa(port)))
	}
	switch {
	case a.Is6():
		v.errorf(path, "%s is an IPv6 address, but the cluster is IPv4 only (its node, pod and service networks are IPv4): nodes and pods could not reach the API by it; %s", host, fix)
	case v.svcNet.IsValid() && v.svcNet.Contains(a):
		v.errorf(path, "%s is inside the service network %s: Service addresses are virtual and exist only once kube-proxy runs, so kubeadm init and the joins could not reach the API there (the rendered files would fail check HC305); %s", host, v.svcNet, fix)
	case v.podNet.IsValid() && v.podNet.Contains(a):
		v.errorf(path, "%s is inside the pod network %s: Calico hands those addresses to pods, so the API could never be reached there; %s", host, v.podNet, fix)
	}
}

func checkDNSServersOutside(v *validator) {
	fix := "use the site's DNS server"
	if gw := v.c.Spec.Network.Gateway; gw != "" {
		fix += fmt.Sprintf(", for example the gateway %s if it serves DNS", gw)
	}
	var dnsIP netip.Addr
	if v.svcNet.IsValid() {
		dnsIP = nthHost(v.svcNet, 10)
	}
	for i, s := range v.c.Spec.Network.DNSServers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue // S101 reports it
		}
		if v.nodeNet.IsValid() && v.nodeNet.Contains(a) {
			continue // on the node network; S102 reports networks that overlap
		}
		path := fmt.Sprintf("spec.network.dnsServers[%d]", i)
		switch {
		case dnsIP.IsValid() && a == dnsIP:
			v.warnf(path, "%s is the cluster's DNS Service IP (the 10th address of serviceCIDR %s): the nodes need DNS before the cluster exists, and CoreDNS forwards to the nodes' resolvers, so it would ask itself; %s", s, v.svcNet, fix)
		case v.svcNet.IsValid() && v.svcNet.Contains(a):
			v.warnf(path, "%s is inside the service network %s, whose addresses exist only once the cluster runs; %s", s, v.svcNet, fix)
		case v.podNet.IsValid() && v.podNet.Contains(a):
			v.warnf(path, "%s is inside the pod network %s, whose addresses Calico hands to pods; %s", s, v.podNet, fix)
		}
	}
}

func checkVersions(v *validator) {
	s := v.c.Spec
	for _, f := range []struct {
		path, val string
		wantV     bool
	}{
		{"spec.kubernetesVersion", s.KubernetesVersion, true},
		{"spec.calico.version", s.Calico.Version, true},
		{"spec.containerd.version", s.Containerd.Version, false},
		{"spec.crictl.version", s.Crictl.Version, false},
		{"spec.runc.version", s.Runc.Version, false},
		{"spec.cniPlugins.version", s.CNIPlugins.Version, false},
	} {
		v.checkVersion(f.path, f.val, f.wantV)
	}
}

// checkVersion reports a version that is not a strict release version
// (ParseVersion), or that has or lacks the leading v its field wants. The
// value is quoted in the message, its control characters escaped.
func (v *validator) checkVersion(path, val string, wantV bool) {
	example := "1.2.3"
	if wantV {
		example = "v1.2.3"
	}
	sv, err := ParseVersion(val)
	var verr *VersionError
	switch {
	case errors.As(err, &verr):
		v.errorf(path, "%q is not a version like %s or %s-rc.1: %s", val, example, example, verr.Reason)
	case wantV && !sv.V:
		v.errorf(path, "%q needs a leading v: v%s", val, val)
	case !wantV && sv.V:
		v.errorf(path, "%q is written without the leading v: %s", val, strings.TrimPrefix(val, "v"))
	}
}

// MinKubernetesMinor and MaxKubernetesMinor bound the Kubernetes 1.x
// versions hybridctl was built and tested for; outside them plan warns.
const (
	MinKubernetesMinor = 34
	MaxKubernetesMinor = 37
)

func checkVersionCompat(v *validator) {
	s := v.c.Spec
	k, kok := parseSemver(s.KubernetesVersion)
	if c, ok := parseSemver(s.Crictl.Version); ok && kok && (c.Major != k.Major || c.Minor != k.Minor) {
		v.warnf("spec.crictl.version", "%s does not match Kubernetes %s; crictl's minor should follow the cluster's (%s.0)", s.Crictl.Version, s.KubernetesVersion, k.minorString())
	}
	if c, ok := parseSemver(s.Containerd.Version); ok && c.Major < 2 {
		v.warnf("spec.containerd.version", "%s is below 2.0; the guide's configuration (config version 3, io.containerd.cri.v1.runtime) needs containerd 2", s.Containerd.Version)
	}
	switch {
	case !kok:
	case k.Major < 1 || (k.Major == 1 && k.Minor < MinKubernetesMinor):
		v.warnf("spec.kubernetesVersion", "%s is older than any version hybridctl was built for (1.%d to 1.%d; the guide uses v1.37.2)", s.KubernetesVersion, MinKubernetesMinor, MaxKubernetesMinor)
	case k.Major > 1 || k.Minor > MaxKubernetesMinor:
		v.warnf("spec.kubernetesVersion", "%s is newer than any version hybridctl was built for (1.%d to 1.%d; the guide uses v1.37.2): the rendered configuration may use fields that version changed", s.KubernetesVersion, MinKubernetesMinor, MaxKubernetesMinor)
	}
}

func checkEnums(v *validator) {
	s := v.c.Spec
	enum := func(path, val string) {
		allowed := enums()[path]
		for _, a := range allowed {
			if val == a {
				return
			}
		}
		hint := ""
		for _, a := range allowed {
			if strings.EqualFold(val, a) {
				hint = fmt.Sprintf(" (did you mean %q?)", a)
			}
		}
		v.errorf(path, "%q is not one of %s%s", val, strings.Join(allowed, ", "), hint)
	}
	enum("spec.calico.linuxDataplane", s.Calico.LinuxDataplane)
	enum("spec.calico.encapsulation", s.Calico.Encapsulation)
	enum("spec.calico.bgp", s.Calico.BGP)
	enum("spec.kubeProxy.mode", s.KubeProxy.Mode)
	if s.Calico.BGP == "Disabled" && strings.HasPrefix(s.Calico.Encapsulation, "IPIP") {
		v.errorf("spec.calico.encapsulation", "%s needs BGP to distribute routes; with bgp: Disabled use VXLAN", s.Calico.Encapsulation)
	}
	if s.Calico.BGP == "Disabled" && s.Calico.Encapsulation == "None" {
		v.errorf("spec.calico.encapsulation", "None needs BGP (or an underlay that routes pod CIDRs); with bgp: Disabled use VXLAN")
	}
	if s.KubeProxy.Mode == "ipvs" {
		v.warnf("spec.kubeProxy.mode", "ipvs is deprecated in kube-proxy; nftables is the guide's mode")
	}
}

func checkAddons(v *validator) {
	a := v.c.Spec.Addons
	for _, f := range []struct {
		path  string
		addon *Addon
	}{
		{"spec.addons.metricsServer.version", a.MetricsServer},
		{"spec.addons.certManager.version", a.CertManager},
	} {
		if f.addon == nil {
			continue
		}
		v.checkVersion(f.path, f.addon.Version, true)
	}
}

func sortStrings(s []string) { sort.Strings(s) }
