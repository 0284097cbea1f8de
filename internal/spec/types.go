// Package spec is the hybridctl cluster spec, hybridctl.dev/v1alpha1 Cluster:
// its types, strict loading with line numbers, defaults and validation.
//
// The field names are a user-facing contract (design §4): they may be
// added to, never renamed.
package spec

// APIVersion and Kind identify a cluster spec document.
const (
	APIVersion = "hybridctl.dev/v1alpha1"
	Kind       = "Cluster"
)

// Node roles and operating systems.
const (
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
	OSLinux          = "linux"
	OSWindows        = "windows"
)

// Cluster is one hybrid cluster: a kubeadm control plane, Linux workers and
// Windows workers on Calico VXLAN.
type Cluster struct {
	// APIVersion is hybridctl.dev/v1alpha1.
	APIVersion string `yaml:"apiVersion" json:"apiVersion"`
	// Kind is Cluster.
	Kind string `yaml:"kind" json:"kind"`
	// Metadata names the cluster.
	Metadata Metadata `yaml:"metadata" json:"metadata"`
	// Spec is the desired cluster.
	Spec ClusterSpec `yaml:"spec" json:"spec"`
}

// Metadata names the cluster. The name becomes the kubeconfig context name.
type Metadata struct {
	// Name is the cluster's name, a DNS label; it becomes the kubeconfig
	// context name.
	Name string `yaml:"name" json:"name"`
}

// ClusterSpec is the desired cluster.
type ClusterSpec struct {
	// KubernetesVersion is the kubeadm/kubelet version, with a leading v.
	KubernetesVersion string `yaml:"kubernetesVersion" json:"kubernetesVersion"`
	// ControlPlaneEndpoint is host:port of the API, preferably a DNS name.
	ControlPlaneEndpoint string `yaml:"controlPlaneEndpoint" json:"controlPlaneEndpoint"`
	// Network holds the node, pod and service networks and the name
	// services.
	Network Network `yaml:"network" json:"network"`
	// Containerd pins the containerd release (without a leading v).
	Containerd ComponentVersion `yaml:"containerd" json:"containerd"`
	// Crictl pins the crictl release (without a leading v); by default
	// the Kubernetes minor with patch 0 (v1.37.2 gives 1.37.0).
	Crictl ComponentVersion `yaml:"crictl" json:"crictl"`
	// Runc pins the runc release a bundle holds for Linux nodes (without a
	// leading v).
	Runc ComponentVersion `yaml:"runc" json:"runc"`
	// CNIPlugins pins the CNI plugins release a bundle holds for Linux
	// nodes (without a leading v).
	CNIPlugins ComponentVersion `yaml:"cniPlugins" json:"cniPlugins"`
	// Calico configures the Tigera operator's Installation.
	Calico Calico `yaml:"calico" json:"calico"`
	// KubeProxy configures kube-proxy on Linux nodes; Windows nodes always
	// run kernelspace (winkernel).
	KubeProxy KubeProxy `yaml:"kubeProxy" json:"kubeProxy"`
	// Images, when Registry is set, pulls every image from one private
	// registry (air-gapped sites).
	Images Images `yaml:"images" json:"images"`
	// Packages says where binaries and packages come from.
	Packages Packages `yaml:"packages" json:"packages"`
	// AllowCgroupV1 accepts nodes that run cgroup v1 (old kernels,
	// containers): the kubelet gets failCgroupV1: false and kubeadm ignores
	// its SystemVerification preflight error.
	AllowCgroupV1 bool `yaml:"allowCgroupV1" json:"allowCgroupV1"`
	// Addons are optional cluster add-ons.
	Addons Addons `yaml:"addons" json:"addons"`
	// CheckWorkloads are the workloads apply deploys to check each OS
	// (hello on Linux, aspnetapp on Windows).
	CheckWorkloads CheckWorkloads `yaml:"checkWorkloads" json:"checkWorkloads"`
	// Nodes are the machines of the cluster: at least one Linux
	// control-plane node.
	Nodes []Node `yaml:"nodes" json:"nodes"`
}

// Network holds the node, pod and service networks and the name services.
type Network struct {
	// NodeCIDR is the IPv4 network of the node addresses.
	NodeCIDR string `yaml:"nodeCIDR" json:"nodeCIDR"`
	// Gateway is the nodes' default gateway, inside nodeCIDR.
	Gateway string `yaml:"gateway" json:"gateway"`
	// DNSServers are the nodes' DNS servers (IPv4 addresses).
	DNSServers []string `yaml:"dnsServers" json:"dnsServers"`
	// NTPServers are the nodes' time servers (names or addresses).
	NTPServers []string `yaml:"ntpServers" json:"ntpServers"`
	// DNSSuffix is the nodes' DNS search domain.
	DNSSuffix string `yaml:"dnsSuffix" json:"dnsSuffix"`
	// PodCIDR is Calico's IPv4 pool for pod addresses.
	PodCIDR string `yaml:"podCIDR" json:"podCIDR"`
	// BlockSize is the prefix length of Calico's per-node address blocks
	// (20-32).
	BlockSize int `yaml:"blockSize" json:"blockSize"`
	// ServiceCIDR is the IPv4 network of Service cluster IPs, at most /12.
	ServiceCIDR string `yaml:"serviceCIDR" json:"serviceCIDR"`
	// DNSDomain is the cluster's DNS domain.
	DNSDomain string `yaml:"dnsDomain" json:"dnsDomain"`
	// MTU is the node network's MTU; the pod MTU is derived from it.
	MTU int `yaml:"mtu" json:"mtu"`
	// Configure says what Linux nodes do about their own address: check
	// (the default) only checks that the node has its spec address;
	// netplan and systemd-networkd write the node's static configuration.
	Configure string `yaml:"configure" json:"configure"`
}

// Network configuration modes for Linux nodes.
const (
	NetworkCheck           = "check"
	NetworkNetplan         = "netplan"
	NetworkSystemdNetworkd = "systemd-networkd"
)

// Images names the private registry every image is pulled from.
type Images struct {
	// Registry is host[:port][/path]; reached over HTTPS.
	Registry string `yaml:"registry,omitempty" json:"registry,omitempty"`
	// RegistryCA is a PEM file beside the spec holding the CA
	// certificates that sign the registry's certificate.
	RegistryCA string `yaml:"registryCA,omitempty" json:"registryCA,omitempty"`
	// RegistryCAData is RegistryCA's content, read by LoadFile.
	RegistryCAData []byte `yaml:"-" json:"-"`
}

// Packages says where binaries and packages come from.
type Packages struct {
	// Source is upstream (the internet) or bundle (apply --bundle DIR).
	Source string `yaml:"source" json:"source"`
}

// Package sources.
const (
	SourceUpstream = "upstream"
	SourceBundle   = "bundle"
)

// ComponentVersion pins a component's version (without a leading v for
// containerd and crictl, as their release files are named).
type ComponentVersion struct {
	// Version is the release, without a leading v.
	Version string `yaml:"version" json:"version"`
}

// Calico configures the Tigera operator's Installation.
type Calico struct {
	// Version is the Calico release, with a leading v.
	Version string `yaml:"version" json:"version"`
	// LinuxDataplane is Calico's dataplane on Linux nodes.
	LinuxDataplane string `yaml:"linuxDataplane" json:"linuxDataplane"`
	// Encapsulation is the IP pool's encapsulation; VXLAN when any node
	// runs Windows.
	Encapsulation string `yaml:"encapsulation" json:"encapsulation"`
	// BGP is Enabled or Disabled; Disabled when any node runs Windows.
	BGP string `yaml:"bgp" json:"bgp"`
	// NATOutgoing masquerades pod traffic leaving the pod network.
	NATOutgoing *bool `yaml:"natOutgoing" json:"natOutgoing"`
	// CheckedWindowsBuilds are Windows builds that Calico's Windows
	// requirements do not list (10.0.26100, Windows Server 2025) and that
	// you have checked against this Calico version's release notes: plan
	// stops warning about their nodes (P004).
	CheckedWindowsBuilds []string `yaml:"checkedWindowsBuilds,omitempty" json:"checkedWindowsBuilds,omitempty"`
}

// KubeProxy configures kube-proxy on Linux nodes.
type KubeProxy struct {
	// Mode is kube-proxy's mode on Linux nodes (ipvs is deprecated).
	Mode string `yaml:"mode" json:"mode"`
}

// Addons are optional cluster add-ons; nil means not installed.
type Addons struct {
	// MetricsServer installs metrics-server.
	MetricsServer *Addon `yaml:"metricsServer,omitempty" json:"metricsServer,omitempty"`
	// CertManager installs cert-manager.
	CertManager *Addon `yaml:"certManager,omitempty" json:"certManager,omitempty"`
}

// CheckWorkloads configures the workloads apply deploys to check each OS.
type CheckWorkloads struct {
	// Image is one multi-OS image for the Linux and the Windows check
	// workloads, with Linux and Windows Server variants for the nodes'
	// builds, serving HTTP with agnhost's arguments (netexec
	// --http-port=8080); rewritten under images.registry like every
	// other image. By default Kubernetes' e2e agnhost.
	Image string `yaml:"image" json:"image"`
	// ImagePullSecret names a docker-registry Secret in the check
	// workloads' namespaces (demo, win-demo) for a private image.
	ImagePullSecret string `yaml:"imagePullSecret,omitempty" json:"imagePullSecret,omitempty"`
}

// Addon pins an add-on's version.
type Addon struct {
	// Version is the add-on's release, with a leading v.
	Version string `yaml:"version" json:"version"`
}

// Node is one machine of the cluster.
type Node struct {
	// Name is the node's host and Kubernetes Node name, a lowercase DNS
	// label; at most 15 characters on Windows (the computer name).
	Name string `yaml:"name" json:"name"`
	// Role is control-plane or worker.
	Role string `yaml:"role" json:"role"`
	// OS is linux or windows.
	OS string `yaml:"os" json:"os"`
	// Address is the node's IPv4 address, inside nodeCIDR.
	Address string `yaml:"address" json:"address"`
	// SSH says how apply reaches the node.
	SSH *SSH `yaml:"ssh,omitempty" json:"ssh,omitempty"`
	// Windows holds Windows-only settings; only on Windows nodes.
	Windows *Windows `yaml:"windows,omitempty" json:"windows,omitempty"`
}

// SSH says how apply reaches a node.
type SSH struct {
	// User is the login user: by default root on Linux and Administrator
	// on Windows.
	User string `yaml:"user" json:"user"`
	// Port is sshd's TCP port.
	Port int `yaml:"port" json:"port"`
	// Host overrides the address apply connects to (default: the node's
	// address), for bastions and port forwards.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
}

// Windows holds Windows-only node settings.
type Windows struct {
	// Build is the OS build: 10.0.17763 (2019), 10.0.20348 (2022),
	// 10.0.26100 (2025).
	Build string `yaml:"build" json:"build"`
}

// IsWindows reports whether the node runs Windows.
func (n Node) IsWindows() bool { return n.OS == OSWindows }

// HasWindows reports whether any node runs Windows.
func (c *Cluster) HasWindows() bool {
	for _, n := range c.Spec.Nodes {
		if n.IsWindows() {
			return true
		}
	}
	return false
}
