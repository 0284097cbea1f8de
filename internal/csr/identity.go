package csr

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ControlPlaneLabel marks a control-plane Node. kubeadm sets it; a kubelet
// cannot set it on its own Node, at registration or later (NodeRestriction
// forbids kubelets every kubernetes.io label outside the kubelet's own set).
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// normName is a DNS name as compared for collisions: lower case, without
// a trailing dot (a TLS client ignores it).
func normName(n string) string { return strings.TrimSuffix(strings.ToLower(n), ".") }

// isServiceName reports whether n names the kubernetes Service, which is
// the API server inside the cluster: kubernetes, kubernetes.default,
// kubernetes.default.svc, kubernetes.default.svc.DOMAIN, or any other name
// whose first label is kubernetes (a search domain completes it).
func isServiceName(n string) bool {
	n = normName(n)
	return n == "kubernetes" || strings.HasPrefix(n, "kubernetes.")
}

// namesCollide reports whether a and b (normalised) are the same name or one
// is a leading part of the other, label by label: "k8s-lab-api" is the
// short form of "k8s-lab-api.example.com", which a resolver's search domain
// turns into the other.
func namesCollide(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// isControlPlane reports whether node carries the control-plane label.
func isControlPlane(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	_, ok := node.Labels[ControlPlaneLabel]
	return ok
}

// endpointAddr is e's host as an address, when it is one.
func endpointAddr(e Endpoint) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(e.Host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// apiNameClaims says which of the API server's names n collides with. A
// control-plane Node may carry them. (The Service's names are refused
// before: they are never a node's.)
func apiNameClaims(n string, view *ClusterView, node *corev1.Node) []string {
	var out []string
	l := normName(n)
	for _, e := range view.APIServer {
		if _, isAddr := endpointAddr(e); isAddr || e.Host == "" {
			continue
		}
		if e.ControlPlane && isControlPlane(node) {
			continue
		}
		if namesCollide(l, normName(e.Host)) {
			out = append(out, fmt.Sprintf("the API server's name %q (%s)", e.Host, e.Source))
		}
	}
	return out
}

// nodeNameClaims says which other Node's name n collides with.
func nodeNameClaims(n, self string, view *ClusterView) []string {
	var out []string
	l := normName(n)
	for _, o := range view.Nodes {
		if o == nil || o.Name == self {
			continue
		}
		if namesCollide(l, normName(o.Name)) {
			out = append(out, fmt.Sprintf("Node %q's name", o.Name))
		}
	}
	return out
}

// reportedNameClaims says which other Node reports n in its status too.
func reportedNameClaims(n, self string, view *ClusterView) []string {
	var out []string
	l := normName(n)
	for _, o := range view.Nodes {
		if o == nil || o.Name == self {
			continue
		}
		for _, a := range o.Status.Addresses {
			switch a.Type {
			case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
				if a.Address != "" && normName(a.Address) == l {
					out = append(out, fmt.Sprintf("the %s %q that Node %q reports too", a.Type, a.Address, o.Name))
				}
			}
		}
	}
	return out
}

// ownNameClaims are the collisions of the requester's own name: only with
// the API server's names and other Nodes' names (a Node's name is unique
// and fixed, so it is the anchor; what other Nodes report about themselves
// is not compared with it).
func ownNameClaims(in *Input) []string {
	return append(apiNameClaims(in.NodeName, in.Cluster, in.Node), nodeNameClaims(in.NodeName, in.NodeName, in.Cluster)...)
}

// statusNameClaims are the collisions of a name the Node reports about
// itself: with the API server's names, every other Node's name and every
// name another Node reports.
func statusNameClaims(in *Input, n string) []string {
	out := apiNameClaims(n, in.Cluster, in.Node)
	out = append(out, nodeNameClaims(n, in.NodeName, in.Cluster)...)
	return append(out, reportedNameClaims(n, in.NodeName, in.Cluster)...)
}

// addrClaims are the collisions of an address the Node reports about
// itself: another Node reporting it too, or an address of the API server.
func addrClaims(in *Input, a netip.Addr) []string {
	var out []string
	for _, e := range in.Cluster.APIServer {
		ea, ok := endpointAddr(e)
		if !ok || ea != a {
			continue
		}
		if e.ControlPlane && isControlPlane(in.Node) {
			continue
		}
		out = append(out, fmt.Sprintf("the API server's address (%s)", e.Source))
	}
	for _, o := range in.Cluster.Nodes {
		if o == nil || o.Name == in.NodeName {
			continue
		}
		for _, na := range o.Status.Addresses {
			switch na.Type {
			case corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName:
				if oa, ok := parseNodeIP(na.Address); ok && oa == a {
					out = append(out, fmt.Sprintf("the %s that Node %q reports too", na.Type, o.Name))
				}
			}
		}
	}
	return out
}
