package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// kubeadm's v1beta4 types live in k8s.io/kubernetes, which cannot be
// required without replace directives. These are the fields hybridctl
// writes, spelled as in k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4;
// the real kubeadm validates every rendered file in the tests.
const kubeadmAPIVersion = "kubeadm.k8s.io/v1beta4"

type initConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	LocalAPIEndpoint apiEndpoint      `json:"localAPIEndpoint"`
	NodeRegistration nodeRegistration `json:"nodeRegistration"`
}

type apiEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress"`
	BindPort         int32  `json:"bindPort"`
}

type nodeRegistration struct {
	Name                  string         `json:"name"`
	CRISocket             string         `json:"criSocket"`
	Taints                []corev1.Taint `json:"taints,omitempty"`
	KubeletExtraArgs      []arg          `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string       `json:"ignorePreflightErrors,omitempty"`
}

// arg is one of kubeadm v1beta4's extra arguments (a name and a value).
type arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type clusterConfiguration struct {
	metav1.TypeMeta      `json:",inline"`
	KubernetesVersion    string     `json:"kubernetesVersion"`
	ControlPlaneEndpoint string     `json:"controlPlaneEndpoint"`
	ImageRepository      string     `json:"imageRepository,omitempty"`
	DNS                  *dnsConfig `json:"dns,omitempty"`
	Networking           networking `json:"networking"`
	APIServer            apiServer  `json:"apiServer"`
}

type networking struct {
	PodSubnet     string `json:"podSubnet"`
	ServiceSubnet string `json:"serviceSubnet"`
	DNSDomain     string `json:"dnsDomain"`
}

// dnsConfig is kubeadm's DNS image setting: with a private registry the
// CoreDNS image keeps its coredns/ path (REGISTRY/coredns/coredns:TAG), as
// containerd's mirror of registry.k8s.io would find it.
type dnsConfig struct {
	ImageRepository string `json:"imageRepository,omitempty"`
}

type apiServer struct {
	CertSANs []string `json:"certSANs,omitempty"`
}

type joinConfiguration struct {
	metav1.TypeMeta  `json:",inline"`
	Discovery        discovery         `json:"discovery"`
	NodeRegistration nodeRegistration  `json:"nodeRegistration"`
	ControlPlane     *joinControlPlane `json:"controlPlane,omitempty"`
	Patches          *patches          `json:"patches,omitempty"`
}

type joinControlPlane struct {
	LocalAPIEndpoint apiEndpoint `json:"localAPIEndpoint"`
	CertificateKey   string      `json:"certificateKey"`
}

type discovery struct {
	BootstrapToken bootstrapTokenDiscovery `json:"bootstrapToken"`
}

type bootstrapTokenDiscovery struct {
	APIServerEndpoint string   `json:"apiServerEndpoint"`
	Token             string   `json:"token"`
	CACertHashes      []string `json:"caCertHashes"`
}

type patches struct {
	Directory string `json:"directory"`
}

// Placeholders stand for the join secrets in files rendered without
// --token and --ca-cert-hash; hybridctl apply replaces them on the node.
const (
	TokenPlaceholder      = "__HYBRIDCTL_JOIN_TOKEN__"
	CACertHashPlaceholder = "__HYBRIDCTL_CA_CERT_HASH__"
	// CertificateKeyPlaceholder stands for the key of the control-plane
	// certificates kubeadm init --upload-certs prints, in the join files of
	// further control-plane nodes.
	CertificateKeyPlaceholder = "__HYBRIDCTL_CERTIFICATE_KEY__"
)

// WindowsPatchesDir is where join.yaml on a Windows node expects the
// kubelet patch (the guide's C:\k\patches).
const WindowsPatchesDir = `C:\k\patches`

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// kubeadmConfig renders cluster/kubeadm-config.yaml: the four documents of
// the guide's "Configuration and kubeadm init".
func kubeadmConfig(p *plan.Plan) ([]byte, error) {
	cp, ok := firstControlPlane(p)
	if !ok {
		return nil, fmt.Errorf("the plan has no control-plane node")
	}
	initCfg := initConfiguration{
		TypeMeta:         typeMeta(kubeadmAPIVersion, "InitConfiguration"),
		LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: cp.Address, BindPort: int32(p.APIServer.Port)},
		// Taints are left to kubeadm, as in the guide: its default for a
		// control-plane node is the plan's control-plane:NoSchedule.
		NodeRegistration: nodeRegistration{Name: cp.Name, CRISocket: cp.CRISocket, IgnorePreflightErrors: ignorePreflight(p)},
	}
	clusterCfg := clusterConfiguration{
		TypeMeta:             typeMeta(kubeadmAPIVersion, "ClusterConfiguration"),
		KubernetesVersion:    p.KubernetesVersion,
		ControlPlaneEndpoint: p.ControlPlaneEndpoint,
		Networking:           networking{PodSubnet: p.PodNetwork.CIDR, ServiceSubnet: p.ServiceNetwork.CIDR, DNSDomain: p.DNSDomain},
		APIServer:            apiServer{CertSANs: p.APIServer.CertSANs},
	}
	if p.Registry != nil {
		clusterCfg.ImageRepository = p.Registry.Prefix
		clusterCfg.DNS = &dnsConfig{ImageRepository: p.Registry.Prefix + "/coredns"}
	}
	t := true
	kubelet := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:           typeMeta("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"),
		CgroupDriver:       "systemd",
		ServerTLSBootstrap: t,
	}
	if p.AllowCgroupV1 {
		// cgroup v1 means an old kernel or a container host (LXC,
		// systemd-nspawn), which usually lacks CAP_SYS_RESOURCE: the
		// kubelet's default oomScoreAdj -999 cannot be set there (lowering
		// an OOM score needs it), so the kubelet keeps 0, as containerd's
		// restrict_oom_score_adj does for the containers (prepare.sh).
		f := false
		var zero int32
		kubelet.FailCgroupV1 = &f
		kubelet.OOMScoreAdj = &zero
	}
	proxy := kubeproxyv1alpha1.KubeProxyConfiguration{
		TypeMeta: typeMeta("kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration"),
		Mode:     kubeproxyv1alpha1.ProxyMode(p.KubeProxy.LinuxMode),
	}
	if p.AllowCgroupV1 {
		// On a container host nf_conntrack_max belongs to the machine
		// that runs it (a global sysctl, read-only inside): kube-proxy
		// v1.36 fails to start when it cannot raise it. maxPerCore 0
		// leaves the limit as the host set it.
		var zero int32
		proxy.Conntrack.MaxPerCore = &zero
	}
	header := comment(
		"kubeadm configuration for "+cp.Name+" (cluster "+p.Cluster+"), rendered by hybridctl.",
		"Guide: \"Configuration and kubeadm init\". On "+cp.Name+":",
		"  sudo kubeadm config validate --config kubeadm-config.yaml",
		"  sudo kubeadm init --config kubeadm-config.yaml",
	)
	return yamlDocs(header, verbatim{initCfg}, verbatim{clusterCfg}, kubelet, proxy)
}

// joinConfig renders nodes/<name>/join.yaml. Windows nodes get the
// os=windows:NoSchedule taint and the patches directory (guide: "kubeadm
// join"); Linux workers the same discovery with the containerd socket.
func joinConfig(p *plan.Plan, n plan.Node, o Options) ([]byte, error) {
	token, hash := TokenPlaceholder, CACertHashPlaceholder
	if o.Token != "" {
		token = o.Token
	}
	if o.CACertHash != "" {
		hash = o.CACertHash
	}
	jc := joinConfiguration{
		TypeMeta: typeMeta(kubeadmAPIVersion, "JoinConfiguration"),
		Discovery: discovery{BootstrapToken: bootstrapTokenDiscovery{
			APIServerEndpoint: p.ControlPlaneEndpoint, Token: token, CACertHashes: []string{hash},
		}},
		NodeRegistration: nodeRegistration{Name: n.Name, CRISocket: n.CRISocket, Taints: taintsOf(n)},
	}
	where := "join.yaml in the home directory"
	cmd := "sudo kubeadm join --config join.yaml"
	if n.IsControlPlane() {
		key := CertificateKeyPlaceholder
		if o.CertificateKey != "" {
			key = o.CertificateKey
		}
		jc.ControlPlane = &joinControlPlane{
			LocalAPIEndpoint: apiEndpoint{AdvertiseAddress: n.Address, BindPort: int32(p.APIServer.Port)},
			CertificateKey:   key,
		}
	}
	if !n.IsWindows() {
		jc.NodeRegistration.IgnorePreflightErrors = ignorePreflight(p)
	}
	if n.IsWindows() {
		// The kubelet reports the spec's address as the node's InternalIP
		// instead of picking one: Calico's own Windows kubelet script pins
		// it because the kubelet has been seen to take the NAT interface's,
		// and hybridctl's CSR approver accepts only the spec's address.
		jc.NodeRegistration.KubeletExtraArgs = []arg{{Name: "node-ip", Value: n.Address}}
		jc.Patches = &patches{Directory: WindowsPatchesDir}
		where = `C:\k\join.yaml`
		cmd = `kubeadm join --config C:\k\join.yaml`
	}
	lines := []string{
		"kubeadm join configuration for " + n.Name + " (cluster " + p.Cluster + "), rendered by hybridctl.",
		"Guide: \"kubeadm join\". Copy to " + where + " on the node, then: " + cmd,
		"and delete the file afterwards: it holds the join token.",
	}
	if o.Token == "" || o.CACertHash == "" {
		lines = append(lines, "", "The token and CA hash are placeholders ("+TokenPlaceholder+", "+CACertHashPlaceholder+"):",
			"hybridctl apply fills them, or render again with --token and --ca-cert-hash",
			"(sudo kubeadm token create --ttl 1h --print-join-command on the control plane prints both).")
	}
	if n.IsControlPlane() && o.CertificateKey == "" {
		lines = append(lines, "", "The certificate key is a placeholder ("+CertificateKeyPlaceholder+"): kubeadm init --upload-certs",
			"prints it (or sudo kubeadm init phase upload-certs --upload-certs); render again with --certificate-key.")
	}
	return yamlDocs(comment(lines...), verbatim{jc})
}

// taintsOf converts the plan's taints of a worker. The control-plane taint
// is kubeadm's own default and is not written.
func taintsOf(n plan.Node) []corev1.Taint {
	var ts []corev1.Taint
	for _, t := range n.Taints {
		if t.Key == plan.ControlPlaneTaintKey {
			continue
		}
		ts = append(ts, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return ts
}

// kubeletPatch renders nodes/<name>/patches/kubeletconfiguration.yaml: the
// node's maxPods (guide: "Why maxPods: 60").
func kubeletPatch(p *plan.Plan, n plan.Node) ([]byte, error) {
	kc := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: typeMeta("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"),
		MaxPods:  int32(n.MaxPods),
	}
	header := comment(
		"kubelet patch for "+n.Name+", rendered by hybridctl. Copy to "+WindowsPatchesDir+`\kubeletconfiguration.yaml.`,
		fmt.Sprintf("maxPods %d: a /%d Calico block has %d addresses; Calico on Windows reserves 4.",
			n.MaxPods, p.PodNetwork.BlockSize, p.PodNetwork.AddressesPerBlock),
		`kubeadm does not keep patches: pass them again on upgrade (kubeadm upgrade node --patches C:\k\patches).`,
	)
	return yamlDocs(header, kc)
}

func firstControlPlane(p *plan.Plan) (plan.Node, bool) {
	for _, n := range p.Nodes {
		if n.IsControlPlane() {
			return n, true
		}
	}
	return plan.Node{}, false
}

// ignorePreflight is kubeadm's preflight exception for cgroup v1 nodes:
// SystemVerification fails on cgroup v1 (allowCgroupV1).
func ignorePreflight(p *plan.Plan) []string {
	if p.AllowCgroupV1 {
		return []string{"SystemVerification"}
	}
	return nil
}

// upgradeConfiguration is kubeadm's v1beta4 UpgradeConfiguration: the
// --config of kubeadm upgrade apply and kubeadm upgrade node.
type upgradeConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	Apply           upgradeApply `json:"apply"`
	Node            upgradeNode  `json:"node"`
}

type upgradeApply struct {
	KubernetesVersion     string   `json:"kubernetesVersion"`
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
}

type upgradeNode struct {
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
}

// UpgradeConfiguration renders the kubeadm configuration hybridctl
// upgrade runs kubeadm upgrade apply and kubeadm upgrade node with, to the
// plan's Kubernetes version. The preflight errors ignored are init's
// (SystemVerification on cgroup v1) and CreateJob: kubeadm's health check
// starts a Job with no OS node selector, which can land on a Windows node
// and fail there (kubeadm's chown of the Job's files is not supported on
// Windows), and must complete within a fixed minute, which a loaded
// cluster misses. hybridctl checks the control plane itself: every node
// Ready before the upgrade starts, and each node Ready at the new version
// before the next one.
func UpgradeConfiguration(p *plan.Plan) ([]byte, error) {
	ignore := append(ignorePreflight(p), "CreateJob")
	uc := upgradeConfiguration{
		TypeMeta: typeMeta(kubeadmAPIVersion, "UpgradeConfiguration"),
		Apply:    upgradeApply{KubernetesVersion: p.KubernetesVersion, IgnorePreflightErrors: ignore},
		Node:     upgradeNode{IgnorePreflightErrors: ignore},
	}
	header := comment(
		"kubeadm upgrade configuration of cluster "+p.Cluster+" to "+p.KubernetesVersion+", rendered by hybridctl.",
		"hybridctl upgrade runs: kubeadm upgrade apply "+p.KubernetesVersion+" --config FILE --yes on the first",
		"control plane, kubeadm upgrade node --config FILE on every other node.",
	)
	return yamlDocs(header, verbatim{uc})
}
