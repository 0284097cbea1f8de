// Package adopt describes a running kubeadm cluster as a hybridctl spec
// (`hybridctl init --from-cluster`): its version, endpoint, networks and
// DNS domain from kubeadm's ClusterConfiguration, kube-proxy's mode, the
// kubelet's cgroup settings, every Node with its address, role, OS and
// Windows build, and Calico's pool when the Tigera operator runs it. What
// the cluster cannot tell (how to reach the nodes over SSH, the nodes' DNS
// servers and suffix) is written as commented fields to fill in; what
// hybridctl cannot manage as it is (a CNI it does not know, an IPIP or BGP
// pool beside Windows nodes) is said in a note, never rewritten.
//
// Reading changes nothing in the cluster.
package adopt

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// ErrNotKubeadm matches (errors.Is) Read's error for a cluster kubeadm did
// not build (no kube-system/kubeadm-config ConfigMap).
var ErrNotKubeadm = errors.New("not a kubeadm cluster")

// Note is something the user must know about the adopted spec: a field to
// fill in (info), something hybridctl manages differently (warning), or
// something apply cannot work with until it is changed (error).
type Note struct {
	Severity finding.Severity `json:"severity"`
	Path     string           `json:"path"`
	Message  string           `json:"message"`
}

// Adopted is the spec of a running cluster and what to know about it.
type Adopted struct {
	Cluster spec.Cluster
	Notes   []Note
	// Windows lists what the cluster lacks to run Windows nodes (the
	// prerequisites apply adds when a Windows node is in the spec).
	WindowsMissing []string
}

// clusterConfiguration is the part of kubeadm's ClusterConfiguration
// (kubeadm.k8s.io v1beta3 and v1beta4 name these fields alike) a spec
// describes.
type clusterConfiguration struct {
	ClusterName          string `json:"clusterName"`
	KubernetesVersion    string `json:"kubernetesVersion"`
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
	ImageRepository      string `json:"imageRepository"`
	Networking           struct {
		PodSubnet     string `json:"podSubnet"`
		ServiceSubnet string `json:"serviceSubnet"`
		DNSDomain     string `json:"dnsDomain"`
	} `json:"networking"`
}

var (
	installationGVR = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}
	ipPoolGVRs      = []schema.GroupVersionResource{
		{Group: "projectcalico.org", Version: "v3", Resource: "ippools"},
		{Group: "crd.projectcalico.org", Version: "v1", Resource: "ippools"},
	}
	ipamConfigGVRs = []schema.GroupVersionResource{
		{Group: "projectcalico.org", Version: "v3", Resource: "ipamconfigurations"},
		{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamconfigs"},
	}
)

// Read reads the cluster behind cfg. name, when set, is the spec's
// metadata.name (default: kubeadm's clusterName).
func Read(ctx context.Context, cfg *rest.Config, name string) (*Adopted, error) {
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: kube-system has no kubeadm-config ConfigMap; hybridctl adopts clusters kubeadm built", ErrNotKubeadm)
	}
	if err != nil {
		return nil, fmt.Errorf("reading kube-system/kubeadm-config: %w", err)
	}
	var cc clusterConfiguration
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil || cc.KubernetesVersion == "" {
		return nil, fmt.Errorf("%w: kube-system/kubeadm-config has no readable ClusterConfiguration (%v)", ErrNotKubeadm, err)
	}
	a := &Adopted{}
	c := &a.Cluster
	c.APIVersion, c.Kind = spec.APIVersion, spec.Kind
	c.Metadata.Name = name
	if c.Metadata.Name == "" {
		c.Metadata.Name = cc.ClusterName
	}
	s := &c.Spec
	s.KubernetesVersion = cc.KubernetesVersion
	s.ControlPlaneEndpoint = cc.ControlPlaneEndpoint
	s.Network.PodCIDR = cc.Networking.PodSubnet
	s.Network.ServiceCIDR = cc.Networking.ServiceSubnet
	s.Network.DNSDomain = cc.Networking.DNSDomain
	if s.Network.ServiceCIDR == "" {
		s.Network.ServiceCIDR = spec.DefaultServiceCIDR
	}
	if s.Network.DNSDomain == "" {
		s.Network.DNSDomain = spec.DefaultDNSDomain
	}
	if strings.Contains(s.Network.ServiceCIDR, ",") || strings.Contains(s.Network.PodCIDR, ",") {
		a.note(finding.Error, "spec.network", "the cluster is dual-stack (%s, %s); hybridctl builds IPv4 clusters (Calico for Windows has no dual stack)",
			s.Network.PodCIDR, s.Network.ServiceCIDR)
	}
	if r := cc.ImageRepository; r != "" && r != "registry.k8s.io" && r != "k8s.gcr.io" {
		s.Images.Registry = r
		a.note(finding.Info, "spec.images.registry", "kubeadm pulls from %s; check that every image hybridctl names is mirrored there (hybridctl plan -o json | jq .images)", r)
	}

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Nodes: %w", err)
	}
	a.readNodes(nodes.Items)
	if s.ControlPlaneEndpoint == "" {
		a.endpointFromNodes(cfg)
	}
	a.readKubelet(ctx, cs)
	a.readKubeProxy(ctx, cs)
	if err := a.readCalico(ctx, dyn); err != nil {
		return nil, err
	}
	a.readCNI(ctx, cs)
	a.missingForWindows(ctx, cs, dyn)
	a.unknowns()
	return a, nil
}

func (a *Adopted) note(sev finding.Severity, path, format string, args ...any) {
	// Names and values from the cluster reach a terminal: one line, no
	// control characters.
	a.Notes = append(a.Notes, Note{Severity: sev, Path: oneLine(path), Message: oneLine(fmt.Sprintf(format, args...))})
}

// internalIP is a Node's first InternalIP.
func internalIP(n *corev1.Node) string {
	for _, ad := range n.Status.Addresses {
		if ad.Type == corev1.NodeInternalIP {
			return ad.Address
		}
	}
	return ""
}

// readNodes turns every Node into a spec node (sorted: control planes
// first, then by name) and derives the node network.
func (a *Adopted) readNodes(items []corev1.Node) {
	sort.Slice(items, func(i, j int) bool {
		ci, cj := isControlPlane(&items[i]), isControlPlane(&items[j])
		if ci != cj {
			return ci
		}
		return items[i].Name < items[j].Name
	})
	var addrs []netip.Addr
	runtimes := map[string]bool{}
	for i := range items {
		n := &items[i]
		sn := spec.Node{Name: n.Name, Role: spec.RoleWorker, OS: spec.OSLinux, Address: internalIP(n)}
		if isControlPlane(n) {
			sn.Role = spec.RoleControlPlane
		}
		if n.Labels[corev1.LabelOSStable] == "windows" || n.Status.NodeInfo.OperatingSystem == "windows" {
			sn.OS = spec.OSWindows
			build := windowsBuild(n)
			sn.Windows = &spec.Windows{Build: build}
			if build == "" {
				a.note(finding.Warning, "spec.nodes["+n.Name+"].windows.build", "Node %s does not show its Windows build (label node.kubernetes.io/windows-build or kernel version): fill it in", n.Name)
			}
		}
		if sn.Address == "" {
			a.note(finding.Error, "spec.nodes["+n.Name+"].address", "Node %s reports no InternalIP address: fill in the address hybridctl reaches it at", n.Name)
		} else if ad, err := netip.ParseAddr(sn.Address); err == nil && ad.Is4() {
			addrs = append(addrs, ad)
		}
		if rt := n.Status.NodeInfo.ContainerRuntimeVersion; sn.OS == spec.OSLinux && rt != "" {
			runtimes[rt] = true
		}
		a.Cluster.Spec.Nodes = append(a.Cluster.Spec.Nodes, sn)
	}
	if len(items) == 0 {
		a.note(finding.Error, "spec.nodes", "the cluster has no Nodes")
	}
	a.Cluster.Spec.Network.NodeCIDR = covering(addrs)
	if len(runtimes) == 1 {
		for rt := range runtimes {
			if v, ok := strings.CutPrefix(rt, "containerd://"); ok {
				a.Cluster.Spec.Containerd.Version = strings.TrimPrefix(v, "v")
			} else {
				a.note(finding.Error, "spec.containerd", "the Linux nodes run %s; hybridctl's nodes run containerd", rt)
			}
		}
	} else if len(runtimes) > 1 {
		var rts []string
		for rt := range runtimes {
			rts = append(rts, rt)
		}
		sort.Strings(rts)
		a.note(finding.Warning, "spec.containerd.version", "the Linux nodes run different container runtimes (%s): the spec pins one; hybridctl diff shows each node's", strings.Join(rts, ", "))
	}
}

func isControlPlane(n *corev1.Node) bool {
	_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
	return cp
}

// windowsBuild is a Windows node's build (10.0.26100): the label the
// kubelet sets, else the kernel version's first three parts.
func windowsBuild(n *corev1.Node) string {
	if b := n.Labels["node.kubernetes.io/windows-build"]; b != "" {
		return b
	}
	parts := strings.Split(n.Status.NodeInfo.KernelVersion, ".")
	if len(parts) >= 3 {
		return strings.Join(parts[:3], ".")
	}
	return ""
}

// covering is the /24 holding every address when there is one, else the
// longest prefix that holds them all: a guess the user checks.
func covering(addrs []netip.Addr) string {
	if len(addrs) == 0 {
		return ""
	}
	for bits := 24; bits >= 8; bits-- {
		p, _ := addrs[0].Prefix(bits)
		all := true
		for _, a := range addrs {
			all = all && p.Contains(a)
		}
		if all {
			return p.String()
		}
	}
	return ""
}

// endpointFromNodes uses the first control plane's address when kubeadm
// was given no controlPlaneEndpoint (a single control plane reached by
// its address), with the API port of the kubeconfig.
func (a *Adopted) endpointFromNodes(cfg *rest.Config) {
	port := "6443"
	if i := strings.LastIndexByte(cfg.Host, ':'); i >= 0 && !strings.Contains(cfg.Host[i:], "]") {
		if p := strings.TrimRight(cfg.Host[i+1:], "/"); p != "" && !strings.Contains(p, "/") {
			port = p
		}
	}
	for _, n := range a.Cluster.Spec.Nodes {
		if n.Role == spec.RoleControlPlane && n.Address != "" {
			a.Cluster.Spec.ControlPlaneEndpoint = n.Address + ":" + port
			a.note(finding.Warning, "spec.controlPlaneEndpoint", "kubeadm was given no controlPlaneEndpoint: the spec uses %s's address; a DNS name would let another control plane take over later", n.Name)
			return
		}
	}
	a.note(finding.Error, "spec.controlPlaneEndpoint", "kubeadm was given no controlPlaneEndpoint and no control-plane Node has an address: fill in host:port of the API")
}

// readKubelet reads the kubelet-config ConfigMap: cgroup v1 accepted.
func (a *Adopted) readKubelet(ctx context.Context, cs kubeclient.Interface) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err != nil {
		a.note(finding.Warning, "spec", "kube-system/kubelet-config could not be read (%v): the kubelet's settings are the spec's defaults", err)
		return
	}
	var kc struct {
		CgroupDriver string `json:"cgroupDriver"`
		FailCgroupV1 *bool  `json:"failCgroupV1"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["kubelet"]), &kc); err != nil {
		a.note(finding.Warning, "spec", "kube-system/kubelet-config has no readable KubeletConfiguration: %v", err)
		return
	}
	if kc.FailCgroupV1 != nil && !*kc.FailCgroupV1 {
		a.Cluster.Spec.AllowCgroupV1 = true
	}
	if kc.CgroupDriver != "" && kc.CgroupDriver != "systemd" {
		a.note(finding.Warning, "spec", "the kubelets use the %s cgroup driver; hybridctl's nodes use systemd (new nodes would differ)", kc.CgroupDriver)
	}
}

// readKubeProxy reads kube-proxy's mode from its ConfigMap.
func (a *Adopted) readKubeProxy(ctx context.Context, cs kubeclient.Interface) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.note(finding.Warning, "spec.kubeProxy", "the cluster runs no kube-proxy (kube-system/kube-proxy is absent: a CNI that replaces it?); Windows nodes need kube-proxy, and hybridctl manages the Linux one through kubeadm")
		return
	}
	if err != nil {
		a.note(finding.Warning, "spec.kubeProxy", "kube-system/kube-proxy could not be read: %v", err)
		return
	}
	var kp struct {
		Mode string `json:"mode"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &kp); err != nil {
		a.note(finding.Warning, "spec.kubeProxy", "kube-system/kube-proxy has no readable KubeProxyConfiguration: %v", err)
		return
	}
	switch kp.Mode {
	case "", "iptables":
		a.Cluster.Spec.KubeProxy.Mode = "iptables"
	case "nftables", "ipvs":
		a.Cluster.Spec.KubeProxy.Mode = kp.Mode
	default:
		a.note(finding.Error, "spec.kubeProxy.mode", "kube-proxy runs in mode %q, which hybridctl does not know (nftables, iptables or ipvs)", kp.Mode)
	}
}

// calicoMigration is Calico's documentation of changing a pool's
// encapsulation and turning BGP off, for the notes.
const calicoMigration = "https://docs.tigera.io/calico/latest/networking/configuring/vxlan-ipip"

// readCalico reads the operator's Installation (encapsulation, block size,
// pool, BGP, dataplane), or says how Calico runs without the operator.
func (a *Adopted) readCalico(ctx context.Context, dyn dynamic.Interface) error {
	s := &a.Cluster.Spec
	inst, err := dyn.Resource(installationGVR).Get(ctx, "default", metav1.GetOptions{})
	switch {
	case err == nil:
		net, _, _ := unstructuredMap(inst.Object, "spec", "calicoNetwork")
		if bgp, _ := net["bgp"].(string); bgp != "" {
			s.Calico.BGP = bgp
		}
		if dp, _ := net["linuxDataplane"].(string); dp != "" {
			s.Calico.LinuxDataplane = dp
		}
		pools, _ := net["ipPools"].([]any)
		if len(pools) > 0 {
			p, _ := pools[0].(map[string]any)
			if enc, _ := p["encapsulation"].(string); enc != "" {
				s.Calico.Encapsulation = enc
			}
			if cidr, _ := p["cidr"].(string); cidr != "" {
				s.Network.PodCIDR = cidr
			}
			if bs, ok := p["blockSize"].(int64); ok {
				s.Network.BlockSize = int(bs)
			}
			if nat, _ := p["natOutgoing"].(string); nat != "" {
				v := nat == "Enabled"
				s.Calico.NATOutgoing = &v
			}
		}
		if len(pools) > 1 {
			a.note(finding.Warning, "spec.calico", "the Installation has %d IP pools; the spec describes the first", len(pools))
		}
		if v := calicoVersion(inst.Object); v != "" {
			s.Calico.Version = v
		}
		return nil
	case apierrors.IsNotFound(err), isNoKind(err):
	default:
		return fmt.Errorf("reading Calico's Installation: %w", err)
	}
	for _, gvr := range ipPoolGVRs {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			continue
		}
		p := list.Items[0].Object
		sp, _, _ := unstructuredMap(p, "spec")
		if cidr, _ := sp["cidr"].(string); cidr != "" {
			s.Network.PodCIDR = cidr
		}
		if bs, ok := sp["blockSize"].(int64); ok {
			s.Network.BlockSize = int(bs)
		}
		switch {
		case sp["vxlanMode"] == "Always":
			s.Calico.Encapsulation = "VXLAN"
		case sp["vxlanMode"] == "CrossSubnet":
			s.Calico.Encapsulation = "VXLANCrossSubnet"
		case sp["ipipMode"] == "Always":
			s.Calico.Encapsulation = "IPIP"
		case sp["ipipMode"] == "CrossSubnet":
			s.Calico.Encapsulation = "IPIPCrossSubnet"
		}
		a.note(finding.Error, "spec.calico", "Calico runs without the Tigera operator (IP pools, no Installation): hybridctl installs and configures Calico through the operator; "+
			"migrate it first (https://docs.tigera.io/calico/latest/operations/operator-migration), or skip the calico and calico-ready phases")
		return nil
	}
	return nil
}

// calicoVersion reads the operator's reported Calico version.
func calicoVersion(obj map[string]any) string {
	st, _, _ := unstructuredMap(obj, "status")
	if v, _ := st["calicoVersion"].(string); v != "" {
		return "v" + strings.TrimPrefix(v, "v")
	}
	return ""
}

func unstructuredMap(obj map[string]any, path ...string) (map[string]any, bool, error) {
	cur := obj
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return map[string]any{}, false, nil
		}
		cur = next
	}
	return cur, true, nil
}

func isNoKind(err error) bool {
	return apierrors.IsNotFound(err) || strings.Contains(err.Error(), "the server could not find the requested resource")
}

// knownCNIs are other CNIs' DaemonSets in kube-system, by name prefix.
var knownCNIs = []struct{ prefix, name string }{
	{"kube-flannel", "Flannel"}, {"cilium", "Cilium"}, {"weave-net", "Weave Net"}, {"kube-router", "kube-router"},
	{"canal", "Canal"}, {"antrea-agent", "Antrea"},
}

// readCNI says when the pod network is not Calico's.
func (a *Adopted) readCNI(ctx context.Context, cs kubeclient.Interface) {
	for _, ns := range []string{"calico-system", "kube-system"} {
		if _, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "calico-node", metav1.GetOptions{}); err == nil {
			return
		}
	}
	var found []string
	for _, ns := range []string{"kube-system", "kube-flannel", "cilium"} {
		dss, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, ds := range dss.Items {
			for _, k := range knownCNIs {
				if strings.HasPrefix(ds.Name, k.prefix) {
					found = append(found, k.name+" ("+ns+"/"+ds.Name+")")
				}
			}
		}
	}
	cni := "a pod network hybridctl does not know"
	if len(found) > 0 {
		cni = strings.Join(found, ", ")
	}
	a.note(finding.Warning, "spec.calico", "the cluster runs no Calico but %s: apply --skip-phases calico,calico-ready leaves the pod network alone; "+
		"Windows nodes need Calico in VXLAN mode (%s)", cni, calicoMigration)
}

// missingForWindows lists the Calico-for-Windows prerequisites the
// cluster lacks: what apply adds (each shown by diff first) when the spec
// gets a Windows node.
func (a *Adopted) missingForWindows(ctx context.Context, cs kubeclient.Interface, dyn dynamic.Interface) {
	s := &a.Cluster.Spec
	if s.Calico.Encapsulation != "" && s.Calico.Encapsulation != "VXLAN" {
		a.WindowsMissing = append(a.WindowsMissing, "a VXLAN IP pool (it is "+s.Calico.Encapsulation+"; see "+calicoMigration+")")
	}
	if s.Calico.BGP == "Enabled" {
		a.WindowsMissing = append(a.WindowsMissing, "BGP off (see "+calicoMigration+")")
	}
	if _, err := cs.CoreV1().ConfigMaps("tigera-operator").Get(ctx, "kubernetes-services-endpoint", metav1.GetOptions{}); err != nil {
		a.WindowsMissing = append(a.WindowsMissing, "the tigera-operator/kubernetes-services-endpoint ConfigMap")
	}
	strict := false
	for _, gvr := range ipamConfigGVRs {
		if o, err := dyn.Resource(gvr).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			sp, _, _ := unstructuredMap(o.Object, "spec")
			strict, _ = sp["strictAffinity"].(bool)
			break
		}
	}
	if !strict {
		a.WindowsMissing = append(a.WindowsMissing, "Calico IPAM strictAffinity")
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy-windows", metav1.GetOptions{}); err != nil {
		a.WindowsMissing = append(a.WindowsMissing, "the kube-proxy-windows DaemonSet")
	}
	if rcs, err := dyn.Resource(runtimeClassGVR).List(ctx, metav1.ListOptions{}); err != nil || !anyWindowsRuntimeClass(rcs.Items) {
		a.WindowsMissing = append(a.WindowsMissing, "a RuntimeClass for each Windows build")
	}
}

var runtimeClassGVR = schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}

func anyWindowsRuntimeClass(items []unstructured.Unstructured) bool {
	for _, rc := range items {
		if os, _, _ := unstructured.NestedString(rc.Object, "scheduling", "nodeSelector", corev1.LabelOSStable); os == "windows" {
			return true
		}
	}
	return false
}

// unknowns notes the fields the cluster cannot tell.
func (a *Adopted) unknowns() {
	a.note(finding.Info, "spec.nodes[].ssh", "how hybridctl reaches each node over SSH (user, port, host) cannot be read from the cluster: fill it in (default user root, Administrator on Windows)")
	a.note(finding.Info, "spec.network", "the nodes' gateway, DNS servers, NTP servers and DNS suffix cannot be read from the cluster: with network.configure check they may stay empty (the nodes keep their own); fill them in for new nodes that need them")
}
