// Package plan derives everything hybridctl needs from a validated cluster
// spec once: addresses, capacities, names, versions, ports, DNS records.
// render and apply read only the plan. A Plan is plain data; Derive is pure.
package plan

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// Well-known values of Calico's VXLAN that Windows requires.
const (
	VXLANVNI      = 4096
	VXLANPort     = 4789
	VXLANOverhead = 50
	IPIPOverhead  = 20
	// LinuxMaxPods is the kubelet's default pod capacity.
	LinuxMaxPods = 110
	// WindowsTaintKey/Value: the taint every Windows node registers with.
	WindowsTaintKey   = "os"
	WindowsTaintValue = "windows"
	// ControlPlaneTaintKey is kubeadm's control-plane taint.
	ControlPlaneTaintKey = "node-role.kubernetes.io/control-plane"
	// WindowsRuntimeHandler is containerd's process-isolation handler.
	WindowsRuntimeHandler = "runhcs-wcow-process"
)

// Plan is the derived cluster plan. Its JSON form is `hybridctl plan -o json`
// (design §5): field names are a contract.
type Plan struct {
	Cluster              string     `json:"cluster"`
	KubernetesVersion    string     `json:"kubernetesVersion"`
	KubernetesMinor      string     `json:"kubernetesMinor"`
	ControlPlaneEndpoint string     `json:"controlPlaneEndpoint"`
	APIServer            APIServer  `json:"apiServer"`
	DNSServiceIP         string     `json:"dnsServiceIP"`
	DNSDomain            string     `json:"dnsDomain"`
	DNSSuffix            string     `json:"dnsSuffix,omitempty"`
	NodeNetwork          NodeNet    `json:"nodeNetwork"`
	PodNetwork           PodNetwork `json:"podNetwork"`
	ServiceNetwork       ServiceNet `json:"serviceNetwork"`
	VXLAN                VXLAN      `json:"vxlan"`
	Versions             Versions   `json:"versions"`
	Calico               Calico     `json:"calico"`
	KubeProxy            KubeProxy  `json:"kubeProxy"`
	// SandboxImage is the pause image kubeadm of this Kubernetes minor
	// names (kubeadm config images list); containerd's sandbox image is set
	// to it so that kubeadm does not warn about a mismatch.
	SandboxImage string `json:"sandboxImage"`
	// Registry is the private registry of images.registry, nil when
	// images come from the public registries.
	Registry *Registry `json:"registry,omitempty"`
	// Images is every image the cluster pulls, after Registry is applied.
	Images []Image `json:"images"`
	// PackagesSource is upstream or bundle (spec.packages.source).
	PackagesSource string `json:"packagesSource"`
	// NetworkConfigure is check, netplan or systemd-networkd.
	NetworkConfigure string `json:"networkConfigure"`
	// AllowCgroupV1 accepts cgroup v1 nodes (failCgroupV1: false and
	// kubeadm's SystemVerification ignored).
	AllowCgroupV1 bool `json:"allowCgroupV1"`
	// KubernetesAptRepo is the pkgs.k8s.io Debian repository of the minor.
	KubernetesAptRepo string  `json:"kubernetesAptRepo"`
	Addons            []Addon `json:"addons"`
	// CheckWorkloads are the workloads apply deploys to check each OS.
	CheckWorkloads CheckWorkloads `json:"checkWorkloads"`
	Nodes          []Node         `json:"nodes"`
	RuntimeClasses []RuntimeClass `json:"runtimeClasses"`
	Ports          []Port         `json:"ports"`
	DNSRecords     []DNSRecord    `json:"dnsRecords"`
	Warnings       []Warning      `json:"warnings"`
}

// CheckWorkloads are the workloads apply deploys to check each OS: hello on
// the Linux workers, aspnetapp on Windows through each RuntimeClass.
type CheckWorkloads struct {
	// Image is spec.checkWorkloads.image after images.registry is applied.
	Image string `json:"image"`
	// ImagePullSecret is the Secret the workloads pull with, if any.
	ImagePullSecret string `json:"imagePullSecret,omitempty"`
}

// APIServer is the API's addresses.
type APIServer struct {
	// Host and Port split controlPlaneEndpoint.
	Host string `json:"host"`
	Port int    `json:"port"`
	// ServiceIP is the kubernetes service's ClusterIP: the first address
	// of the service network.
	ServiceIP string `json:"serviceIP"`
	// CertSANs are the extra names in the API server certificate.
	CertSANs []string `json:"certSANs"`
}

// NodeNet is the node network.
type NodeNet struct {
	CIDR         string   `json:"cidr"`
	PrefixLength int      `json:"prefixLength"`
	Gateway      string   `json:"gateway"`
	DNSServers   []string `json:"dnsServers"`
	NTPServers   []string `json:"ntpServers"`
	MTU          int      `json:"mtu"`
}

// PodNetwork is Calico's IP pool and its blocks.
type PodNetwork struct {
	CIDR              string `json:"cidr"`
	BlockSize         int    `json:"blockSize"`
	AddressesPerBlock int    `json:"addressesPerBlock"`
	Blocks            int    `json:"blocks"`
	// WindowsMaxPods is addressesPerBlock - 4: Calico on Windows holds one
	// block and reserves 4 addresses in it.
	WindowsMaxPods int  `json:"windowsMaxPods"`
	NATOutgoing    bool `json:"natOutgoing"`
}

// ServiceNet is the service network.
type ServiceNet struct {
	CIDR      string `json:"cidr"`
	Addresses int    `json:"addresses"`
}

// VXLAN is the overlay.
type VXLAN struct {
	Enabled bool `json:"enabled"`
	VNI     int  `json:"vni"`
	Port    int  `json:"port"`
	NodeMTU int  `json:"nodeMTU"`
	PodMTU  int  `json:"podMTU"`
}

// Versions are the pinned component versions.
type Versions struct {
	Kubernetes string `json:"kubernetes"`
	Containerd string `json:"containerd"`
	Crictl     string `json:"crictl"`
	Calico     string `json:"calico"`
	Runc       string `json:"runc"`
	CNIPlugins string `json:"cniPlugins"`
}

// Calico is the Installation's settings and the manifests to apply.
type Calico struct {
	Version        string `json:"version"`
	LinuxDataplane string `json:"linuxDataplane"`
	// WindowsDataplane is HNS when any node runs Windows, else empty.
	WindowsDataplane string `json:"windowsDataplane,omitempty"`
	Encapsulation    string `json:"encapsulation"`
	BGP              string `json:"bgp"`
	// CRDMode is "projectcalico.org/v3" (native CRDs) or
	// "crd.projectcalico.org/v1" (aggregated API server).
	CRDMode string `json:"crdMode"`
	// CRDManifest is the file name under manifests/ of the Calico release;
	// CRDManifestURL and OperatorManifestURL point at the release.
	CRDManifest         string `json:"crdManifest"`
	CRDManifestURL      string `json:"crdManifestURL"`
	OperatorManifestURL string `json:"operatorManifestURL"`
	IPPoolName          string `json:"ipPoolName"`
}

// KubeProxy is kube-proxy's mode per OS and its Windows image.
type KubeProxy struct {
	LinuxMode    string `json:"linuxMode"`
	WindowsMode  string `json:"windowsMode,omitempty"`
	WindowsImage string `json:"windowsImage,omitempty"`
}

// Addon is an add-on to install.
type Addon struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	ManifestURL string `json:"manifestURL"`
}

// Taint is a node taint (kept as plain data; render converts it).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

func (t Taint) String() string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// Node is one node with everything derived for it.
type Node struct {
	Name         string `json:"name"`
	FQDN         string `json:"fqdn"`
	OS           string `json:"os"`
	Role         string `json:"role"`
	Address      string `json:"address"`
	MaxPods      int    `json:"maxPods"`
	RuntimeClass string `json:"runtimeClass,omitempty"`
	// WindowsBuild and WindowsRelease are set on Windows nodes.
	WindowsBuild   string  `json:"windowsBuild,omitempty"`
	WindowsRelease string  `json:"windowsRelease,omitempty"`
	Taints         []Taint `json:"taints"`
	CRISocket      string  `json:"criSocket"`
	SSH            SSH     `json:"ssh"`
}

// IsWindows reports whether the node runs Windows.
func (n Node) IsWindows() bool { return n.OS == spec.OSWindows }

// IsControlPlane reports whether the node is a control-plane node.
func (n Node) IsControlPlane() bool { return n.Role == spec.RoleControlPlane }

// SSH is how apply reaches the node.
type SSH struct {
	User string `json:"user"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// RuntimeClass is one RuntimeClass for one Windows build.
type RuntimeClass struct {
	Name     string   `json:"name"`
	Handler  string   `json:"handler"`
	Build    string   `json:"build"`
	Release  string   `json:"release"`
	ImageTag string   `json:"imageTag"`
	Nodes    []string `json:"nodes"`
}

// Port is a port to open.
type Port struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	// On is which nodes listen: "control-plane", "all", "windows".
	On string `json:"on"`
	// From is who must reach it.
	From     string `json:"from"`
	Purpose  string `json:"purpose"`
	Optional bool   `json:"optional,omitempty"`
}

// DNSRecord is an A record to create.
type DNSRecord struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Address string `json:"address"`
	Purpose string `json:"purpose"`
}

// calicoWindowsWarnings: Calico for Windows' requirements page lists
// Windows Server 2019 (1809) and 2022, not 2025 (the guide: "formally
// Calico does not explicitly confirm it"; a reason to check the release
// notes of the Calico version in use). One warning per unlisted build, on
// its first node, unless spec.calico.checkedWindowsBuilds names it.
func calicoWindowsWarnings(s spec.ClusterSpec) []Warning {
	var out []Warning
	seen := map[string]bool{}
	for _, b := range s.Calico.CheckedWindowsBuilds {
		seen[b] = true
	}
	for i, n := range s.Nodes {
		if !n.IsWindows() || n.Windows == nil {
			continue
		}
		rel, ok := spec.WindowsReleaseForBuild(n.Windows.Build)
		if !ok || rel.CalicoListed || seen[rel.Build] {
			continue
		}
		seen[rel.Build] = true
		out = append(out, warning("P004", "calico-windows-version", fmt.Sprintf("spec.nodes[%d].windows.build", i),
			fmt.Sprintf("%s (%s, node %s) is not among the Windows versions Calico for Windows lists as supported (%s); check the release notes of Calico %s for it, then add %q to spec.calico.checkedWindowsBuilds, or run Windows Server 2022 nodes",
				rel.Name, rel.Build, n.Name, spec.CalicoWindowsRequirements, s.Calico.Version, rel.Build)))
	}
	return out
}

// Warning is a spec warning carried into the plan, and the type of an
// invalid spec's problems too (plan -o json): check ID and name apart, the
// file and line, the field path, the severity.
type Warning struct {
	Check    string `json:"check"`
	Name     string `json:"name"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Path     string `json:"path"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// warning is a plan's own warning; its file and line are filled by
// LocateWarnings.
func warning(check, name, path, msg string) Warning {
	return Warning{Check: check, Name: name, Path: path, Severity: "warning", Message: msg}
}

// LocateWarnings gives the plan's own warnings (those that do not come
// from the spec's diagnostics) the spec's file and the line of their path.
func (p *Plan) LocateWarnings(file string, line func(path string) int) {
	for i := range p.Warnings {
		if w := &p.Warnings[i]; w.File == "" {
			w.File, w.Line = file, line(w.Path)
		}
	}
}

// Derive computes the plan of a valid, defaulted cluster spec. warnings are
// the spec's warning diagnostics. Derive does no I/O; it returns an error
// only when the spec was not validated first.
func Derive(c *spec.Cluster, warnings spec.Diagnostics) (*Plan, error) {
	s := c.Spec
	for _, v := range []struct{ path, val string }{
		{"spec.kubernetesVersion", s.KubernetesVersion}, {"spec.calico.version", s.Calico.Version},
		{"spec.containerd.version", s.Containerd.Version}, {"spec.crictl.version", s.Crictl.Version},
		{"spec.runc.version", s.Runc.Version}, {"spec.cniPlugins.version", s.CNIPlugins.Version},
	} {
		if _, err := spec.ParseVersion(v.val); err != nil {
			return nil, fmt.Errorf("%s: %w", v.path, err)
		}
	}
	nodeNet, err := netip.ParsePrefix(s.Network.NodeCIDR)
	if err != nil {
		return nil, fmt.Errorf("spec.network.nodeCIDR: %w", err)
	}
	podNet, err := netip.ParsePrefix(s.Network.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("spec.network.podCIDR: %w", err)
	}
	svcNet, err := netip.ParsePrefix(s.Network.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("spec.network.serviceCIDR: %w", err)
	}
	host, port, err := spec.SplitEndpoint(s.ControlPlaneEndpoint)
	if err != nil {
		return nil, fmt.Errorf("spec.controlPlaneEndpoint: %w", err)
	}
	bs := s.Network.BlockSize
	hasWindows := c.HasWindows()

	p := &Plan{
		Cluster:              c.Metadata.Name,
		KubernetesVersion:    s.KubernetesVersion,
		KubernetesMinor:      spec.KubernetesMinor(s.KubernetesVersion),
		ControlPlaneEndpoint: s.ControlPlaneEndpoint,
		APIServer: APIServer{
			Host:      host,
			Port:      port,
			ServiceIP: nthAddr(svcNet, 1).String(),
		},
		DNSServiceIP: nthAddr(svcNet, 10).String(),
		DNSDomain:    s.Network.DNSDomain,
		DNSSuffix:    s.Network.DNSSuffix,
		NodeNetwork: NodeNet{
			CIDR: nodeNet.String(), PrefixLength: nodeNet.Bits(), Gateway: s.Network.Gateway,
			DNSServers: nonNil(s.Network.DNSServers), NTPServers: nonNil(s.Network.NTPServers), MTU: s.Network.MTU,
		},
		PodNetwork: PodNetwork{
			CIDR:              podNet.String(),
			BlockSize:         bs,
			AddressesPerBlock: 1 << (32 - bs),
			Blocks:            1 << (bs - podNet.Bits()),
			WindowsMaxPods:    spec.WindowsMaxPods(bs),
			NATOutgoing:       s.Calico.NATOutgoing == nil || *s.Calico.NATOutgoing,
		},
		ServiceNetwork: ServiceNet{CIDR: svcNet.String(), Addresses: 1 << (32 - svcNet.Bits())},
		VXLAN:          vxlanOf(s),
		Versions: Versions{
			Kubernetes: s.KubernetesVersion, Containerd: s.Containerd.Version,
			Crictl: s.Crictl.Version, Calico: s.Calico.Version,
			Runc: s.Runc.Version, CNIPlugins: s.CNIPlugins.Version,
		},
		PackagesSource:   s.Packages.Source,
		NetworkConfigure: s.Network.Configure,
		AllowCgroupV1:    s.AllowCgroupV1,
		KubeProxy:        KubeProxy{LinuxMode: s.KubeProxy.Mode},
		Warnings:         []Warning{},
	}
	if p.KubernetesAptRepo, err = KubernetesAptRepoURL(p.KubernetesMinor); err != nil {
		return nil, fmt.Errorf("spec.kubernetesVersion: %w", err)
	}
	if p.Calico, err = calicoOf(c); err != nil {
		return nil, fmt.Errorf("spec.calico.version: %w", err)
	}
	if s.Images.Registry != "" {
		reg, err := spec.ParseRegistry(s.Images.Registry)
		if err != nil {
			return nil, fmt.Errorf("spec.images.registry: %w", err)
		}
		p.Registry = &Registry{Prefix: reg.Prefix(), HostPort: reg.HostPort(), Path: reg.Path,
			CA: string(s.Images.RegistryCAData), HasCA: len(s.Images.RegistryCAData) > 0}
	}
	pause, known := PauseVersion(p.KubernetesMinor)
	p.SandboxImage = p.Image("registry.k8s.io/pause:" + pause)
	if !known {
		p.Warnings = append(p.Warnings, warning("P001", "sandbox-image", "spec.kubernetesVersion",
			fmt.Sprintf("hybridctl does not know which pause image kubeadm %s names; using %s (check: kubeadm config images list --kubernetes-version %s)", p.KubernetesMinor, p.SandboxImage, s.KubernetesVersion)))
	}
	if hasWindows {
		p.KubeProxy.WindowsMode = "kernelspace"
		p.KubeProxy.WindowsImage = p.Image(fmt.Sprintf(KubeProxyWindowsImageFmt, s.KubernetesVersion))
	}
	if p.Addons, err = addonsOf(s.Addons); err != nil {
		return nil, err
	}

	rcs := map[string]*RuntimeClass{}
	for _, n := range s.Nodes {
		pn := Node{
			Name: n.Name, FQDN: fqdn(n.Name, s.Network.DNSSuffix), OS: n.OS, Role: n.Role, Address: n.Address,
			MaxPods: LinuxMaxPods, CRISocket: "unix:///run/containerd/containerd.sock", Taints: []Taint{},
		}
		if n.SSH != nil {
			pn.SSH = SSH{User: n.SSH.User, Host: n.Address, Port: n.SSH.Port}
			if n.SSH.Host != "" {
				pn.SSH.Host = n.SSH.Host
			}
		}
		if n.Role == spec.RoleControlPlane {
			pn.Taints = append(pn.Taints, Taint{Key: ControlPlaneTaintKey, Effect: "NoSchedule"})
		}
		if n.IsWindows() {
			pn.MaxPods = spec.WindowsMaxPods(bs)
			pn.CRISocket = "npipe:////./pipe/containerd-containerd"
			pn.Taints = append(pn.Taints, Taint{Key: WindowsTaintKey, Value: WindowsTaintValue, Effect: "NoSchedule"})
			if n.Windows != nil {
				rel, ok := spec.WindowsReleaseForBuild(n.Windows.Build)
				if !ok {
					return nil, fmt.Errorf("node %s: unknown Windows build %q", n.Name, n.Windows.Build)
				}
				pn.WindowsBuild = rel.Build
				pn.WindowsRelease = rel.Name
				pn.RuntimeClass = rel.RuntimeClass()
				rc := rcs[rel.Build]
				if rc == nil {
					rc = &RuntimeClass{Name: rel.RuntimeClass(), Handler: WindowsRuntimeHandler, Build: rel.Build, Release: rel.Name, ImageTag: rel.ImageTag}
					rcs[rel.Build] = rc
				}
				rc.Nodes = append(rc.Nodes, n.Name)
			}
		}
		p.Nodes = append(p.Nodes, pn)
	}
	p.RuntimeClasses = []RuntimeClass{}
	for _, rel := range spec.WindowsReleases() {
		if rc := rcs[rel.Build]; rc != nil {
			p.RuntimeClasses = append(p.RuntimeClasses, *rc)
		}
	}
	p.APIServer.CertSANs = certSANs(host, p.Nodes)
	p.CheckWorkloads = CheckWorkloads{Image: p.Image(s.CheckWorkloads.Image), ImagePullSecret: s.CheckWorkloads.ImagePullSecret}
	p.Images = imagesOf(p, hasWindows)
	if _, _, ok := kubeadmVersions(p.KubernetesMinor); !ok {
		p.Warnings = append(p.Warnings, warning("P002", "kubeadm-images", "spec.kubernetesVersion",
			fmt.Sprintf("hybridctl does not know the etcd and CoreDNS tags kubeadm %s names; the image list assumes those of the newest known minor (check: kubeadm config images list --kubernetes-version %s)", p.KubernetesMinor, s.KubernetesVersion)))
	}
	if p.Registry != nil {
		p.Warnings = append(p.Warnings, warning("P003", "operator-image", "spec.images.registry",
			fmt.Sprintf("mirror the Tigera operator too: the image Calico %s's tigera-operator.yaml names, as %s/tigera/operator:TAG, and point the image in tigera-operator.yaml at it (apply does not rewrite it yet)", p.Calico.Version, p.Registry.Prefix)))
	}
	p.Warnings = append(p.Warnings, calicoWindowsWarnings(s)...)
	p.Ports = portsOf(hasWindows, port, s.Calico)
	p.DNSRecords = dnsRecordsOf(p, host)
	for _, w := range warnings.Warnings() {
		p.Warnings = append(p.Warnings, Warning{Check: w.Rule, Name: w.Name, File: w.File, Line: w.Line, Path: w.Path, Severity: string(w.Severity), Message: w.Message})
	}
	if err := p.CheckURLs(); err != nil {
		return nil, err
	}
	return p, nil
}

// pauseVersions is the pause image tag kubeadm names per Kubernetes minor
// (constants.PauseVersion in cmd/kubeadm/app/constants/constants.go). v1.37
// is read from k8s.io/kubernetes@v1.37.2, v1.36 from @v1.36.3 (both
// 3.10.2); v1.34 and v1.35 from those releases (3.10.1). A minor not listed
// gets the newest tag and a plan warning.
func pauseVersions() []struct{ minor, pause string } {
	return []struct{ minor, pause string }{
		{"v1.34", "3.10.1"},
		{"v1.35", "3.10.1"},
		{"v1.36", "3.10.2"},
		{"v1.37", "3.10.2"},
	}
}

// PauseVersion returns the pause image tag kubeadm of a minor ("v1.37")
// names. For a minor it does not know it returns the newest known tag and
// false.
func PauseVersion(minor string) (string, bool) {
	pvs := pauseVersions()
	for _, pv := range pvs {
		if pv.minor == minor {
			return pv.pause, true
		}
	}
	return pvs[len(pvs)-1].pause, false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fqdn(name, suffix string) string {
	if suffix == "" {
		return name
	}
	return name + "." + suffix
}

// nthAddr returns the n-th address of a prefix (n=1 is the first host).
func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
	}
	return a
}

func vxlanOf(s spec.ClusterSpec) VXLAN {
	v := VXLAN{VNI: VXLANVNI, Port: VXLANPort, NodeMTU: s.Network.MTU, PodMTU: s.Network.MTU}
	switch {
	case strings.HasPrefix(s.Calico.Encapsulation, "VXLAN"):
		v.Enabled = true
		v.PodMTU = s.Network.MTU - VXLANOverhead
	case strings.HasPrefix(s.Calico.Encapsulation, "IPIP"):
		v.PodMTU = s.Network.MTU - IPIPOverhead
	}
	return v
}

// calicoOf picks the CRD manifest: Calico from v3.33 on Kubernetes from 1.36
// installs native projectcalico.org/v3 CRDs (v3_projectcalico_org.yaml);
// older combinations keep crd.projectcalico.org/v1 behind the aggregated
// API server (operator-crds.yaml).
func calicoOf(c *spec.Cluster) (Calico, error) {
	s := c.Spec
	cal := Calico{
		Version: s.Calico.Version, LinuxDataplane: s.Calico.LinuxDataplane,
		Encapsulation: s.Calico.Encapsulation, BGP: s.Calico.BGP,
		CRDMode: "crd.projectcalico.org/v1", CRDManifest: "operator-crds.yaml",
		IPPoolName: "default-ipv4-ippool",
	}
	if c.HasWindows() {
		cal.WindowsDataplane = "HNS"
	}
	if versionAtLeast(s.Calico.Version, 3, 33) && versionAtLeast(s.KubernetesVersion, 1, 36) {
		cal.CRDMode = "projectcalico.org/v3"
		cal.CRDManifest = "v3_projectcalico_org.yaml"
	}
	var err error
	if cal.OperatorManifestURL, err = CalicoManifestURL(s.Calico.Version, "tigera-operator.yaml"); err != nil {
		return Calico{}, err
	}
	if cal.CRDManifestURL, err = CalicoManifestURL(s.Calico.Version, cal.CRDManifest); err != nil {
		return Calico{}, err
	}
	return cal, nil
}

func versionAtLeast(v string, major, minor int) bool {
	var ma, mi, pa int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d.%d", &ma, &mi, &pa); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func addonsOf(a spec.Addons) ([]Addon, error) {
	out := []Addon{}
	for _, ad := range []struct {
		name, path string
		addon      *spec.Addon
	}{
		{AddonMetricsServer, "spec.addons.metricsServer.version", a.MetricsServer},
		{AddonCertManager, "spec.addons.certManager.version", a.CertManager},
	} {
		if ad.addon == nil {
			continue
		}
		u, err := AddonManifestURL(ad.name, ad.addon.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ad.path, err)
		}
		out = append(out, Addon{Name: ad.name, Version: ad.addon.Version, ManifestURL: u})
	}
	return out, nil
}

// certSANs are the API name plus every control-plane node's FQDN, as the
// guide's ClusterConfiguration lists them.
func certSANs(apiHost string, nodes []Node) []string {
	sans := []string{apiHost}
	for _, n := range nodes {
		if n.IsControlPlane() && n.FQDN != n.Name && n.FQDN != apiHost {
			sans = append(sans, n.FQDN)
		}
	}
	return sans
}

func portsOf(hasWindows bool, apiPort int, cal spec.Calico) []Port {
	ports := []Port{
		{Port: apiPort, Protocol: "TCP", On: "control-plane", From: "all nodes, admin workstations", Purpose: "kube-apiserver"},
		{Port: 10250, Protocol: "TCP", On: "all", From: "control-plane nodes, metrics-server", Purpose: "kubelet API (logs, exec, metrics)"},
	}
	if strings.HasPrefix(cal.Encapsulation, "VXLAN") {
		ports = append(ports, Port{Port: VXLANPort, Protocol: "UDP", On: "all", From: "all nodes", Purpose: fmt.Sprintf("Calico VXLAN (VNI %d); HNS opens it itself on Windows", VXLANVNI)})
	}
	if cal.BGP == "Enabled" {
		ports = append(ports, Port{Port: 179, Protocol: "TCP", On: "all", From: "all nodes", Purpose: "Calico BGP"})
	}
	ports = append(ports, Port{Port: 5473, Protocol: "TCP", On: "linux", From: "all nodes", Purpose: "Calico Typha (Felix on every node connects to it)"})
	if hasWindows {
		ports = append(ports, Port{Port: 10256, Protocol: "TCP", On: "windows", From: "node network", Purpose: "kube-proxy health check for external load balancers", Optional: true})
	}
	sort.SliceStable(ports, func(i, j int) bool { return ports[i].Port < ports[j].Port })
	return ports
}

func dnsRecordsOf(p *Plan, apiHost string) []DNSRecord {
	var recs []DNSRecord
	var cp string
	for _, n := range p.Nodes {
		if n.IsControlPlane() && cp == "" {
			cp = n.Address
		}
	}
	if _, err := netip.ParseAddr(apiHost); err != nil && cp != "" {
		recs = append(recs, DNSRecord{Name: apiHost, Type: "A", Address: cp, Purpose: "API name (point it at a virtual address for a second control plane)"})
	}
	for _, n := range p.Nodes {
		if n.FQDN == apiHost {
			continue
		}
		recs = append(recs, DNSRecord{Name: n.FQDN, Type: "A", Address: n.Address, Purpose: n.Role + ", " + n.OS})
	}
	if recs == nil {
		recs = []DNSRecord{}
	}
	return recs
}

// ContainerdRequired is the least containerd release the kubelet of a
// Kubernetes version requires ("2.0" from Kubernetes 1.36 on, which drops
// containerd 1.x), or "" when the version is older or not readable.
func ContainerdRequired(kubernetesVersion string) string {
	m := strings.TrimPrefix(spec.KubernetesMinor(kubernetesVersion), "v")
	_, minor, ok := strings.Cut(m, ".")
	if n, err := strconv.Atoi(minor); !ok || err != nil || n < 36 || !strings.HasPrefix(m, "1.") {
		return ""
	}
	return "2.0"
}
