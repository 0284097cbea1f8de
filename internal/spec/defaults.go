package spec

// Default values, applied in one place (SetDefaults) and shown by
// `hybridctl plan -o yaml`.
const (
	DefaultKubernetesVersion = "v1.37.2"
	DefaultContainerdVersion = "2.2.2"
	DefaultCalicoVersion     = "v3.33.0"
	DefaultBlockSize         = 26
	DefaultServiceCIDR       = "10.96.0.0/12"
	DefaultDNSDomain         = "cluster.local"
	DefaultMTU               = 1500
	DefaultLinuxDataplane    = "Nftables"
	DefaultEncapsulation     = "VXLAN"
	DefaultBGP               = "Disabled"
	DefaultKubeProxyMode     = "nftables"
	DefaultSSHPort           = 22
	DefaultLinuxSSHUser      = "root"
	DefaultWindowsSSHUser    = "Administrator"
	DefaultWindowsBuild      = "10.0.26100"
	DefaultRuncVersion       = "1.5.3"
	DefaultCNIPluginsVersion = "1.10.0"
	// DefaultCheckWorkloadImage is the agnhost the e2e tests of
	// Kubernetes v1.37.2 run (test/utils/image/manifest.go): one manifest
	// list with linux/amd64, linux/arm64 and Windows 1809, ltsc2022 and
	// ltsc2025 variants (test/images/agnhost/BASEIMAGE).
	DefaultCheckWorkloadImage = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
)

// SetDefaults fills every unset field that has a default. It is idempotent.
func SetDefaults(c *Cluster) {
	s := &c.Spec
	if s.KubernetesVersion == "" {
		s.KubernetesVersion = DefaultKubernetesVersion
	}
	n := &s.Network
	if n.BlockSize == 0 {
		n.BlockSize = DefaultBlockSize
	}
	if n.ServiceCIDR == "" {
		n.ServiceCIDR = DefaultServiceCIDR
	}
	if n.DNSDomain == "" {
		n.DNSDomain = DefaultDNSDomain
	}
	if n.MTU == 0 {
		n.MTU = DefaultMTU
	}
	if s.Containerd.Version == "" {
		s.Containerd.Version = DefaultContainerdVersion
	}
	if n.Configure == "" {
		n.Configure = NetworkCheck
	}
	if s.Runc.Version == "" {
		s.Runc.Version = DefaultRuncVersion
	}
	if s.CNIPlugins.Version == "" {
		s.CNIPlugins.Version = DefaultCNIPluginsVersion
	}
	if s.Packages.Source == "" {
		s.Packages.Source = SourceUpstream
	}
	if s.Crictl.Version == "" {
		// crictl follows the Kubernetes minor: v1.37.2 -> 1.37.0.
		if v, ok := parseSemver(s.KubernetesVersion); ok {
			s.Crictl.Version = v.minorString() + ".0"
		}
	}
	cal := &s.Calico
	if cal.Version == "" {
		cal.Version = DefaultCalicoVersion
	}
	if cal.LinuxDataplane == "" {
		cal.LinuxDataplane = DefaultLinuxDataplane
	}
	if cal.Encapsulation == "" {
		cal.Encapsulation = DefaultEncapsulation
	}
	if cal.BGP == "" {
		cal.BGP = DefaultBGP
	}
	if cal.NATOutgoing == nil {
		t := true
		cal.NATOutgoing = &t
	}
	if s.KubeProxy.Mode == "" {
		s.KubeProxy.Mode = DefaultKubeProxyMode
	}
	if s.CheckWorkloads.Image == "" {
		s.CheckWorkloads.Image = DefaultCheckWorkloadImage
	}
	for i := range s.Nodes {
		node := &s.Nodes[i]
		if node.Role == "" {
			node.Role = RoleWorker
		}
		if node.OS == "" {
			node.OS = OSLinux
		}
		if node.SSH == nil {
			node.SSH = &SSH{}
		}
		if node.SSH.Port == 0 {
			node.SSH.Port = DefaultSSHPort
		}
		if node.SSH.User == "" {
			node.SSH.User = DefaultLinuxSSHUser
			if node.IsWindows() {
				node.SSH.User = DefaultWindowsSSHUser
			}
		}
		if node.IsWindows() {
			if node.Windows == nil {
				node.Windows = &Windows{}
			}
			if node.Windows.Build == "" {
				node.Windows.Build = DefaultWindowsBuild
			}
		}
	}
}
