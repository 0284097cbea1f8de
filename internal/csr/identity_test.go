package csr

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A node whose kubelet credentials were stolen rewrites its own Node status
// (NodeRestriction allows it) to list the API server's names, another
// node's name and addresses, then asks for them. These tests pin every
// claim the review must refuse and the near misses it must not.

func internalDNS(s string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: s}
}

func externalIP(s string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: s}
}

func controlPlane(n *corev1.Node) *corev1.Node {
	n.Labels = map[string]string{ControlPlaneLabel: ""}
	return n
}

// thief is n1 after rewriting its status: its own name and address, then
// every name and address it should not get, and a few of its own that are
// near misses of them.
var thief = nodeObj(n1, hostname(n1), internalIP("192.168.10.24"),
	internalDNS("node-1.internal.example.com"),
	internalDNS("k8s-lab-api.example.com"), internalDNS("k8s-lab-api"), internalDNS("api.lab.example.com"),
	internalDNS("kubernetes.default.svc"), internalDNS("kubernetes.default.svc.cluster.local"), internalDNS("kubernetes"),
	internalDNS("k8s-lab-node-2"), internalDNS("k8s-lab-node-2.example.com"), internalDNS("node-2.internal.example.com"),
	internalDNS("localhost"),
	internalDNS("k8s-lab-apiserver.example.com"), internalDNS("k8s-lab-node-22.example.com"), internalDNS("kubernetesx.example.com"),
	externalIP("192.168.10.26"), externalIP("10.96.0.1"), externalIP("192.168.10.23"), externalIP("192.168.10.27"))

func labView(nodes ...*corev1.Node) *ClusterView {
	return &ClusterView{
		Nodes: append(nodes,
			nodeObj("k8s-lab-node-2", hostname("k8s-lab-node-2"), internalIP("192.168.10.26"), internalDNS("node-2.internal.example.com")),
			controlPlane(nodeObj("k8s-lab-master-1", hostname("k8s-lab-master-1"), internalIP("192.168.10.23")))),
		APIServer: []Endpoint{
			{Host: "k8s-lab-api.example.com", Source: `controlPlaneEndpoint "k8s-lab-api.example.com:6443" in ConfigMap kube-system/kubeadm-config`, ControlPlane: true},
			{Host: "api.lab.example.com", Source: "apiServer.certSANs in ConfigMap kube-system/kubeadm-config", ControlPlane: true},
			{Host: "192.168.10.23", Source: "the server this client connects to, 192.168.10.23:6443", ControlPlane: true},
			{Host: "10.96.0.1", Source: "ClusterIP of Service default/kubernetes"},
		},
	}
}

// claimInput is a request from node (named by its requester) for dns and
// ips, reviewed with view (or inv).
func claimInput(t *testing.T, name string, node *corev1.Node, dns, ips []string, view *ClusterView, inv Inventory) *Input {
	t.Helper()
	r := nodeReq(name, ips...)
	r.dns = dns
	in := Prepare(fromNode(name, r.build(t)).object())
	in.Node = node
	if node == nil {
		in.NodeErr = notFound(name)
	}
	in.Inventory, in.Cluster = inv, view
	return in
}

func TestDNSNamesTheNodeReportsAboutItself(t *testing.T) {
	view := labView(thief)
	for _, tc := range []struct {
		name string
		want Verdict
		msg  string // substring of the message
	}{
		{n1, Pass, ""},
		{"node-1.internal.example.com", Pass, ""},
		// near misses: the boundary is a whole label
		{"k8s-lab-apiserver.example.com", Pass, ""},
		{"k8s-lab-node-22.example.com", Pass, ""},
		{"kubernetesx.example.com", Pass, ""},
		{"k8s-lab-api.example.com", Fail, `"k8s-lab-api.example.com", which Node k8s-lab-node-1 reports about itself, collides with the API server's name "k8s-lab-api.example.com" (controlPlaneEndpoint "k8s-lab-api.example.com:6443" in ConfigMap kube-system/kubeadm-config)`},
		{"K8S-LAB-API.example.com", Fail, "the API server's name"},
		{"k8s-lab-api", Fail, `"k8s-lab-api", which Node k8s-lab-node-1 reports about itself, collides with the API server's name "k8s-lab-api.example.com"`},
		{"api.lab.example.com", Fail, "apiServer.certSANs"},
		{"kubernetes.default.svc", Fail, `"kubernetes.default.svc" is a name of the API server's Service default/kubernetes`},
		{"kubernetes.default.svc.cluster.local", Fail, "Service default/kubernetes"},
		{"kubernetes", Fail, "Service default/kubernetes"},
		{"k8s-lab-node-2", Fail, `collides with Node "k8s-lab-node-2"'s name`},
		{"k8s-lab-node-2.example.com", Fail, `collides with Node "k8s-lab-node-2"'s name`},
		{"node-2.internal.example.com", Fail, `the InternalDNS "node-2.internal.example.com" that Node "k8s-lab-node-2" reports too`},
		{"localhost", Fail, "every machine's own name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, msg := checkDNSNames(claimInput(t, n1, thief, []string{tc.name}, nil, view, nil))
			if v != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: %s (%s), want %s with %q", tc.name, v, msg, tc.want, tc.msg)
			}
		})
	}
}

func TestDNSNamesWithASpecComeFromTheSpecAlone(t *testing.T) {
	// The spec names the node; what the Node reports is never looked at,
	// not even when no other Node or API server claims it.
	for _, tc := range []struct {
		name, node string
		want       Verdict
		msg        string
	}{
		{n1, n1, Pass, ""},
		{n1 + ".example.com", n1, Pass, ""},
		{"node-1.internal.example.com", n1, Fail, `DNS name "node-1.internal.example.com" does not belong to node k8s-lab-node-1 (allowed by the cluster spec: k8s-lab-node-1, k8s-lab-node-1.example.com)`},
		{"k8s-lab-api.example.com", n1, Fail, "allowed by the cluster spec"},
		{"kubernetes.default.svc", n1, Fail, `"kubernetes.default.svc" is a name of the API server's Service default/kubernetes`},
		{"k8s-lab-node-9", "k8s-lab-node-9", Fail, "node k8s-lab-node-9 is not in the cluster spec, so no DNS name belongs to it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := thief
			if tc.node != n1 {
				node = nodeObj(tc.node, hostname(tc.node))
			}
			// The cluster view is there and empty: the spec alone decides.
			v, msg := checkDNSNames(claimInput(t, tc.node, node, []string{tc.name}, nil, &ClusterView{}, labInventory))
			if v != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: %s (%s), want %s with %q", tc.name, v, msg, tc.want, tc.msg)
			}
		})
	}
}

func TestOwnNameCollisions(t *testing.T) {
	// A node may be registered under any name by whoever holds a
	// bootstrap token: its own name is checked against the API server's
	// names and the other Nodes' names too.
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want Verdict
		msg  string
	}{
		{"k8s-lab-api.example.com", nodeObj("k8s-lab-api.example.com", internalIP("192.168.10.30")), Fail,
			`"k8s-lab-api.example.com", node k8s-lab-api.example.com's own name, collides with the API server's name "k8s-lab-api.example.com"`},
		// The control plane may be reached at its own name: a control-plane
		// Node (a label no kubelet may set) keeps it.
		{"k8s-lab-api.example.com", controlPlane(nodeObj("k8s-lab-api.example.com", internalIP("192.168.10.30"))), Pass, ""},
		// Not registered yet: its labels are unknown, so is the answer.
		{"k8s-lab-api.example.com", nil, Unknown, ""},
		{"kubernetes.default.svc", controlPlane(nodeObj("kubernetes.default.svc", internalIP("192.168.10.30"))), Fail, "Service default/kubernetes"},
		{"k8s-lab-node-2.example.com", nodeObj("k8s-lab-node-2.example.com", internalIP("192.168.10.30")), Fail, `collides with Node "k8s-lab-node-2"'s name`},
		{"k8s-lab-node-2.example.com", nil, Fail, `collides with Node "k8s-lab-node-2"'s name`},
		{"k8s-lab-node-3", nodeObj("k8s-lab-node-3", internalIP("192.168.10.30")), Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := labView()
			if tc.node != nil {
				view = labView(tc.node)
			}
			v, msg := checkDNSNames(claimInput(t, tc.name, tc.node, []string{tc.name}, nil, view, nil))
			if v != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: %s (%s), want %s with %q", tc.name, v, msg, tc.want, tc.msg)
			}
		})
	}
	// Another Node reporting n1's name does not take it from n1: the name
	// of a Node is the anchor.
	squatter := nodeObj("k8s-lab-node-5", internalDNS(n1))
	if v, msg := checkDNSNames(claimInput(t, n1, n1Node, []string{n1}, nil, labView(n1Node, squatter), nil)); v != Pass {
		t.Errorf("n1's own name while another Node reports it: %s (%s), want pass", v, msg)
	}
}

func TestIPAddressesTheNodeReportsAboutItself(t *testing.T) {
	view := labView(thief)
	for _, tc := range []struct {
		ip   string
		want Verdict
		msg  string
	}{
		{"192.168.10.24", Pass, ""},
		{"192.168.10.27", Pass, ""}, // reported by n1 alone
		{"192.168.10.26", Fail, `192.168.10.26, which Node k8s-lab-node-1 reports about itself, is the InternalIP that Node "k8s-lab-node-2" reports too`},
		{"10.96.0.1", Fail, "is the API server's address (ClusterIP of Service default/kubernetes)"},
		{"192.168.10.23", Fail, `is the API server's address (the server this client connects to, 192.168.10.23:6443) and the InternalIP that Node "k8s-lab-master-1" reports too`},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			v, msg := checkIPAddresses(claimInput(t, n1, thief, nil, []string{tc.ip}, view, nil))
			if v != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: %s (%s), want %s with %q", tc.ip, v, msg, tc.want, tc.msg)
			}
		})
	}

	master := controlPlane(nodeObj("k8s-lab-master-1", hostname("k8s-lab-master-1"), internalIP("192.168.10.23"), externalIP("10.96.0.1")))
	others := &ClusterView{Nodes: []*corev1.Node{master, n1Node}, APIServer: labView().APIServer}
	// The control-plane node is reached at its own address: it keeps it.
	if v, msg := checkIPAddresses(claimInput(t, master.Name, master, nil, []string{"192.168.10.23"}, others, nil)); v != Pass {
		t.Errorf("the control-plane node's own address, which is the API server's: %s (%s), want pass", v, msg)
	}
	// The Service's ClusterIP is never a node's, control plane or not.
	if v, msg := checkIPAddresses(claimInput(t, master.Name, master, nil, []string{"10.96.0.1"}, others, nil)); v != Fail || !strings.Contains(msg, "ClusterIP of Service default/kubernetes") {
		t.Errorf("the Service's ClusterIP asked for by a control-plane node: %s (%s), want fail", v, msg)
	}
	// The same address without the label: refused.
	plain := nodeObj("k8s-lab-master-1", internalIP("192.168.10.23"))
	if v, msg := checkIPAddresses(claimInput(t, plain.Name, plain, nil, []string{"192.168.10.23"}, &ClusterView{Nodes: []*corev1.Node{plain}, APIServer: others.APIServer}, nil)); v != Fail || !strings.Contains(msg, "the API server's address (the server this client connects to") {
		t.Errorf("the API server's address asked for by a Node without the control-plane label: %s (%s), want fail", v, msg)
	}
	// With a spec, the spec's address wins: no comparison with others.
	if v, msg := checkIPAddresses(claimInput(t, n1, thief, nil, []string{"192.168.10.24"}, nil, labInventory)); v != Pass {
		t.Errorf("the spec's address: %s (%s)", v, msg)
	}
}

func TestClaimsWithoutAClusterViewAreUndecided(t *testing.T) {
	// Names and addresses from the Node cannot be judged without the
	// other Nodes and the API server: left pending, never approved.
	if v, msg := checkDNSNames(claimInput(t, n1, thief, []string{"node-1.internal.example.com"}, nil, nil, nil)); v != Unknown || !strings.Contains(msg, "were not compared") {
		t.Errorf("DNS name without a view: %s (%s)", v, msg)
	}
	if v, msg := checkDNSNames(claimInput(t, n1, thief, []string{n1}, nil, nil, nil)); v != Unknown {
		t.Errorf("own name without a view: %s (%s)", v, msg)
	}
	if v, msg := checkDNSNames(claimInput(t, n1, thief, []string{"kubernetes.default.svc"}, nil, nil, nil)); v != Fail {
		t.Errorf("the Service's name without a view: %s (%s), want fail", v, msg)
	}
	if v, msg := checkIPAddresses(claimInput(t, n1, thief, nil, []string{"192.168.10.24"}, nil, nil)); v != Unknown || !strings.Contains(msg, "were not compared") {
		t.Errorf("IP without a view: %s (%s)", v, msg)
	}
	in := claimInput(t, n1, thief, []string{"node-1.internal.example.com"}, []string{"192.168.10.24"}, nil, nil)
	in.ClusterErr = errors.New("listing Nodes: connection refused")
	if v, msg := checkDNSNames(in); v != Unknown || !strings.Contains(msg, "connection refused") {
		t.Errorf("DNS name, view failed: %s (%s)", v, msg)
	}
	if v, msg := checkIPAddresses(in); v != Unknown || !strings.Contains(msg, "connection refused") {
		t.Errorf("IP, view failed: %s (%s)", v, msg)
	}
	if rv := Evaluate(in); rv.Decision != LeavePending || rv.APIError == nil {
		t.Errorf("review with a failed view: %s, API error %v; want left pending and the run incomplete", rv.Decision, rv.APIError)
	}
}

func TestEndpointHosts(t *testing.T) {
	for in, want := range map[string]string{
		"k8s-lab-api.example.com:6443": "k8s-lab-api.example.com",
		"k8s-lab-api.example.com":      "k8s-lab-api.example.com",
		"[fd00::1]:6443":               "fd00::1",
		"192.168.10.23:6443":           "192.168.10.23",
		"fd00::1":                      "fd00::1",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
	if a, ok := endpointAddr(Endpoint{Host: "::ffff:10.96.0.1"}); !ok || a != netip.MustParseAddr("10.96.0.1") {
		t.Errorf("an IPv4-mapped endpoint is %v %v, want 10.96.0.1", a, ok)
	}
}
