package diagnose

import (
	"context"
	"encoding/json"
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

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// Overlay sources: where the cluster's view of the pod network comes from.
const (
	// SourceCalico: Calico's BlockAffinities and the projectcalico.org
	// Node annotations (VXLAN).
	SourceCalico = "calico"
	// SourceFlannel: flannel's Node annotations and spec.podCIDR (VXLAN).
	SourceFlannel = "flannel"
	// SourceRoutes: spec.podCIDR and plain routes via the node addresses
	// (no encapsulation; the hybridctl lab's podnet, or a host-gw network).
	SourceRoutes = "routes"
)

// Annotations the overlay cross-check reads.
const (
	AnnotCalicoTunnelAddr = "projectcalico.org/IPv4VXLANTunnelAddr"
	AnnotCalicoTunnelMAC  = "projectcalico.org/VXLANTunnelMACAddr"
	AnnotFlannelBackend   = "flannel.alpha.coreos.com/backend-data"
	AnnotFlannelType      = "flannel.alpha.coreos.com/backend-type"
	AnnotFlannelPublicIP  = "flannel.alpha.coreos.com/public-ip"
)

// Cluster is what the API says about the pod network: per node its
// blocks, node address, tunnel address and VTEP MAC.
type Cluster struct {
	Source string
	Nodes  []ClusterNode
	// Device is the Linux VXLAN device (vxlan.calico, flannel.1); "" for
	// plain routes. HNSNetwork is the Windows HNS network's name.
	Device     string
	HNSNetwork string
	// Evidence says where the view came from (for messages).
	Evidence string
}

// ClusterNode is one Node as the pod network sees it.
type ClusterNode struct {
	Name    string
	OS      string
	Address netip.Addr // InternalIP (flannel: its public-ip)
	Blocks  []netip.Prefix
	// Tunnel and MAC are the VTEP's address and MAC (VXLAN sources).
	Tunnel netip.Addr
	MAC    string
	// Problems are what is wrong with the Node's own record (a missing
	// annotation, an unparsable value).
	Problems []string
}

// Node returns the named node.
func (c *Cluster) Node(name string) (ClusterNode, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return ClusterNode{}, false
}

// blockAffinityResources are where BlockAffinities live: Calico's native
// v3 CRDs, then the older crd.projectcalico.org/v1.
var blockAffinityResources = []schema.GroupVersionResource{
	{Group: "projectcalico.org", Version: "v3", Resource: "blockaffinities"},
	{Group: "crd.projectcalico.org", Version: "v1", Resource: "blockaffinities"},
}

// LoadCluster reads the pod network's state from the API: Calico when
// BlockAffinities exist, else flannel when the Nodes carry its
// annotations, else the Nodes' spec.podCIDR with plain routes.
func LoadCluster(ctx context.Context, kc kubeclient.Interface, dc dynamic.Interface) (*Cluster, error) {
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	affs, from, err := listBlockAffinities(ctx, dc)
	if err != nil {
		return nil, err
	}
	return buildCluster(nodes.Items, affs, from), nil
}

// affinity is one BlockAffinity's spec.
type affinity struct {
	Name    string
	Node    string
	CIDR    string
	State   string
	Deleted bool
}

func listBlockAffinities(ctx context.Context, dc dynamic.Interface) ([]affinity, string, error) {
	if dc == nil {
		return nil, "", nil
	}
	for _, gvr := range blockAffinityResources {
		var out []affinity
		cont := ""
		for {
			l, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if apierrors.IsNotFound(err) || isNoMatch(err) {
				out = nil
				break
			}
			if err != nil {
				return nil, "", fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
			}
			for _, it := range l.Items {
				out = append(out, affinityOf(it))
			}
			cont = l.GetContinue()
			if cont == "" {
				return out, gvr.GroupResource().String(), nil
			}
		}
	}
	return nil, "", nil
}

func isNoMatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), "the server could not find the requested resource")
}

func affinityOf(u unstructured.Unstructured) affinity {
	a := affinity{Name: u.GetName()}
	a.Node, _, _ = unstructured.NestedString(u.Object, "spec", "node")
	a.CIDR, _, _ = unstructured.NestedString(u.Object, "spec", "cidr")
	a.State, _, _ = unstructured.NestedString(u.Object, "spec", "state")
	if d, ok, _ := unstructured.NestedBool(u.Object, "spec", "deleted"); ok {
		a.Deleted = d
	} else if s, ok, _ := unstructured.NestedString(u.Object, "spec", "deleted"); ok {
		a.Deleted = s == "true" // crd.projectcalico.org/v1 keeps it as a string
	}
	return a
}

func internalIP(n corev1.Node) netip.Addr {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip
		}
	}
	return netip.Addr{}
}

func buildCluster(nodes []corev1.Node, affs []affinity, from string) *Cluster {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	live := 0
	for _, a := range affs {
		if !a.Deleted && a.State != "pending" && a.State != "pendingDeletion" {
			live++
		}
	}
	c := &Cluster{}
	switch {
	case live > 0:
		c.Source, c.Device, c.HNSNetwork = SourceCalico, "vxlan.calico", "Calico"
		c.Evidence = fmt.Sprintf("%d %s and the Nodes' %s/%s annotations", live, from, AnnotCalicoTunnelAddr, AnnotCalicoTunnelMAC)
		blocks := map[string][]netip.Prefix{}
		for _, a := range affs {
			if a.Deleted || a.State == "pending" || a.State == "pendingDeletion" {
				continue
			}
			if p, err := netip.ParsePrefix(a.CIDR); err == nil {
				blocks[a.Node] = append(blocks[a.Node], p.Masked())
			}
		}
		for _, n := range nodes {
			cn := ClusterNode{Name: n.Name, OS: n.Labels[corev1.LabelOSStable], Address: internalIP(n), Blocks: sortPrefixes(blocks[n.Name])}
			cn.Tunnel, cn.MAC, cn.Problems = vtep(n.Annotations[AnnotCalicoTunnelAddr], n.Annotations[AnnotCalicoTunnelMAC], AnnotCalicoTunnelAddr, AnnotCalicoTunnelMAC)
			if len(cn.Blocks) == 0 {
				cn.Problems = append(cn.Problems, "no BlockAffinity is affine to it")
			}
			if !cn.Address.IsValid() {
				cn.Problems = append(cn.Problems, "no IPv4 InternalIP in status.addresses")
			}
			c.Nodes = append(c.Nodes, cn)
		}
	case anyFlannel(nodes):
		c.Source, c.Device, c.HNSNetwork = SourceFlannel, "flannel.1", "vxlan0"
		c.Evidence = fmt.Sprintf("the Nodes' %s and %s annotations and spec.podCIDR", AnnotFlannelBackend, AnnotFlannelPublicIP)
		for _, n := range nodes {
			cn := ClusterNode{Name: n.Name, OS: n.Labels[corev1.LabelOSStable], Blocks: podCIDRs(n)}
			var bd struct {
				VtepMAC string `json:"VtepMAC"`
			}
			if v := n.Annotations[AnnotFlannelBackend]; v == "" {
				cn.Problems = append(cn.Problems, "no "+AnnotFlannelBackend+" annotation")
			} else if err := json.Unmarshal([]byte(v), &bd); err != nil || bd.VtepMAC == "" {
				cn.Problems = append(cn.Problems, fmt.Sprintf("%s %q has no VtepMAC", AnnotFlannelBackend, v))
			} else {
				cn.MAC = hostfacts.NormMAC(bd.VtepMAC)
			}
			if ip, err := netip.ParseAddr(n.Annotations[AnnotFlannelPublicIP]); err == nil {
				cn.Address = ip
			} else {
				cn.Address = internalIP(n)
			}
			if len(cn.Blocks) > 0 {
				// flannel.1 holds the first address of the node's subnet.
				cn.Tunnel = cn.Blocks[0].Addr()
			}
			c.Nodes = append(c.Nodes, cn)
		}
	default:
		c.Source = SourceRoutes
		c.Evidence = "the Nodes' spec.podCIDR and InternalIP (no Calico BlockAffinity, no flannel annotation)"
		for _, n := range nodes {
			cn := ClusterNode{Name: n.Name, OS: n.Labels[corev1.LabelOSStable], Address: internalIP(n), Blocks: podCIDRs(n)}
			if len(cn.Blocks) == 0 {
				cn.Problems = append(cn.Problems, "no spec.podCIDR")
			}
			c.Nodes = append(c.Nodes, cn)
		}
	}
	return c
}

func vtep(addr, mac, addrKey, macKey string) (netip.Addr, string, []string) {
	var problems []string
	a, err := netip.ParseAddr(addr)
	switch {
	case addr == "":
		problems = append(problems, "no "+addrKey+" annotation")
	case err != nil:
		problems = append(problems, fmt.Sprintf("%s %q is not an IP address", addrKey, addr))
	}
	m := hostfacts.NormMAC(mac)
	switch {
	case mac == "":
		problems = append(problems, "no "+macKey+" annotation")
	case !strings.Contains(m, ":") || len(m) != 17:
		problems = append(problems, fmt.Sprintf("%s %q is not a MAC address", macKey, mac))
	}
	return a, m, problems
}

func anyFlannel(nodes []corev1.Node) bool {
	for _, n := range nodes {
		if n.Annotations[AnnotFlannelBackend] != "" || n.Annotations[AnnotFlannelType] == "vxlan" {
			return true
		}
	}
	return false
}

func podCIDRs(n corev1.Node) []netip.Prefix {
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, s := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() && !seen[p.Masked()] {
			seen[p.Masked()] = true
			out = append(out, p.Masked())
		}
	}
	return out
}

func sortPrefixes(ps []netip.Prefix) []netip.Prefix {
	sort.Slice(ps, func(i, j int) bool {
		if c := ps[i].Addr().Compare(ps[j].Addr()); c != 0 {
			return c < 0
		}
		return ps[i].Bits() < ps[j].Bits()
	})
	return ps
}

// ErrNoAPI marks a cluster view that could not be loaded.
var ErrNoAPI = errors.New("the cluster's view could not be read from the API")
