package csr

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const n1 = "k8s-lab-node-1"

var n1Node = nodeObj(n1, hostname(n1), internalIP("192.168.10.24"))

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

// input prepares c as Review would: node nil means "not registered".
// Without an inventory the cluster view holds node alone: no other Node and
// no API server name to collide with.
func input(c csrObj, node *corev1.Node, inv Inventory) *Input {
	in := Prepare(c.object())
	if node != nil {
		in.Node = node
	} else if in.NodeName != "" {
		in.NodeErr = notFound(in.NodeName)
	}
	in.Inventory = inv
	if inv == nil {
		in.Cluster = &ClusterView{}
		if node != nil {
			in.Cluster.Nodes = []*corev1.Node{node}
		}
	}
	return in
}

var labInventory = StaticInventory{Suffix: "example.com", Addresses: map[string]netip.Addr{
	n1:               netip.MustParseAddr("192.168.10.24"),
	"k8s-lab-node-2": netip.MustParseAddr("192.168.10.26"),
}}

type checkCase struct {
	name    string
	in      func(t *testing.T) *Input
	want    Verdict
	message string // substring of the message
}

func runCheck(t *testing.T, fn func(*Input) (Verdict, string), cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, msg := fn(tc.in(t))
			if v != tc.want {
				t.Fatalf("verdict %q (%s), want %q", v, msg, tc.want)
			}
			if !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q does not contain %q", msg, tc.message)
			}
		})
	}
}

// good returns the Input of a correct request from n1, with changes applied.
func good(change func(*req, *csrObj)) func(t *testing.T) *Input {
	return func(t *testing.T) *Input {
		r := nodeReq(n1, "192.168.10.24")
		c := fromNode(n1, nil)
		if change != nil {
			change(&r, &c)
		}
		if c.request == nil {
			c.request = r.build(t)
		}
		return input(c, n1Node, nil)
	}
}

func TestCheckSigner(t *testing.T) {
	runCheck(t, checkSigner, []checkCase{
		{"kubelet-serving", good(nil), Pass, ""},
		{"apiserver-client", good(func(_ *req, c *csrObj) { c.signer = certv1.KubeAPIServerClientSignerName }), Fail, "kube-apiserver-client"},
		{"custom", good(func(_ *req, c *csrObj) { c.signer = "example.com/serving" }), Fail, "example.com/serving"},
	})
}

func TestCheckRequester(t *testing.T) {
	runCheck(t, checkRequester, []checkCase{
		{"node", good(nil), Pass, ""},
		{"plain user", good(func(_ *req, c *csrObj) { c.user, c.groups = "alice", []string{"system:authenticated"} }), Fail, "not a node"},
		{"node name without group", good(func(_ *req, c *csrObj) { c.groups = []string{"system:authenticated"} }), Fail, "not in group system:nodes"},
		{"empty node name", good(func(_ *req, c *csrObj) { c.user = NodeUserPrefix }), Fail, "not a node"},
		{"bad node name", good(func(_ *req, c *csrObj) { c.user = NodeUserPrefix + "Node_1" }), Fail, "DNS subdomain"},
		// A DNS label holds 63 characters: one more is refused.
		{"node name label of 63", good(func(_ *req, c *csrObj) { c.user = NodeUserPrefix + strings.Repeat("a", 63) + ".lab" }), Pass, ""},
		{"node name label of 64", good(func(_ *req, c *csrObj) { c.user = NodeUserPrefix + strings.Repeat("a", 64) + ".lab" }), Fail, "DNS subdomain"},
		{"service account", good(func(_ *req, c *csrObj) {
			c.user, c.groups = "system:serviceaccount:kube-system:x", []string{"system:serviceaccounts", NodesGroup}
		}), Fail, "not a node"},
	})
}

func TestCheckRequestPEM(t *testing.T) {
	runCheck(t, checkRequestPEM, []checkCase{
		{"valid", good(nil), Pass, ""},
		{"empty", good(func(_ *req, c *csrObj) { c.request = []byte("  \n") }), Fail, "empty"},
		{"not PEM", good(func(_ *req, c *csrObj) { c.request = []byte("hello") }), Fail, "no PEM block"},
		{"certificate block", good(func(_ *req, c *csrObj) {
			c.request = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}), Fail, `"CERTIFICATE"`},
		{"garbage DER", good(func(_ *req, c *csrObj) {
			c.request = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
		}), Fail, "not a valid PKCS#10"},
		{"trailing block", func(t *testing.T) *Input {
			p := nodeReq(n1).build(t)
			return input(fromNode(n1, append(p, p...)), n1Node, nil)
		}, Fail, "data after"},
	})
}

func TestCheckSelfSignature(t *testing.T) {
	runCheck(t, checkSelfSignature, []checkCase{
		{"valid ecdsa", good(nil), Pass, ""},
		{"valid rsa", good(func(r *req, _ *csrObj) { r.key = "rsa" }), Pass, ""},
		{"flipped signature bit", good(func(r *req, _ *csrObj) { r.key, r.badSig = "rsa", true }), Fail, "does not verify"},
		{"unparseable", good(func(_ *req, c *csrObj) { c.request = []byte("x") }), Skip, ""},
	})
}

func TestCheckSubject(t *testing.T) {
	runCheck(t, checkSubject, []checkCase{
		{"kubelet subject", good(nil), Pass, ""},
		{"CN of another node", good(func(r *req, _ *csrObj) { r.cn = NodeUserPrefix + "k8s-lab-node-2" }), Fail, "differs from the requester"},
		{"CN without prefix", good(func(r *req, _ *csrObj) { r.cn = n1 }), Fail, "differs"},
		{"no O", good(func(r *req, _ *csrObj) { r.org = nil }), Fail, "want exactly [system:nodes]"},
		{"extra O", good(func(r *req, _ *csrObj) { r.org = []string{NodesGroup, "system:masters"} }), Fail, "system:masters"},
		{"wrong O", good(func(r *req, _ *csrObj) { r.org = []string{"system:masters"} }), Fail, "want exactly"},
	})
}

func TestCheckPublicKey(t *testing.T) {
	runCheck(t, checkPublicKey, []checkCase{
		{"ecdsa p256", good(nil), Pass, ""},
		{"rsa 2048", good(func(r *req, _ *csrObj) { r.key = "rsa" }), Pass, ""},
		{"rsa 1024", good(func(r *req, _ *csrObj) { r.key = "rsa1024" }), Fail, "1024 bits"},
		{"ecdsa p224", good(func(r *req, _ *csrObj) { r.key = "p224" }), Fail, "P-224"},
	})
}

func TestCheckUsages(t *testing.T) {
	u := func(us ...certv1.KeyUsage) func(*req, *csrObj) {
		return func(_ *req, c *csrObj) { c.usages = us }
	}
	ds, ke, sa, ca := certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth, certv1.UsageClientAuth
	runCheck(t, checkUsages, []checkCase{
		{"ecdsa kubelet usages", good(u(ds, sa)), Pass, ""},
		{"server auth only", good(u(sa)), Pass, ""},
		{"rsa kubelet usages", good(func(r *req, c *csrObj) { r.key = "rsa"; c.usages = []certv1.KeyUsage{ds, ke, sa} }), Pass, ""},
		{"ecdsa with key encipherment", good(u(ds, ke, sa)), Fail, "only for RSA keys; this key is ECDSA"},
		{"client auth added", good(u(ds, sa, ca)), Fail, `"client auth"`},
		{"client auth only", good(u(ds, ca)), Fail, `lack "server auth"`},
		{"cert sign", good(u(sa, certv1.UsageCertSign)), Fail, `"cert sign"`},
		{"unparseable request still checks the list", func(t *testing.T) *Input {
			c := fromNode(n1, []byte("x"))
			c.usages = []certv1.KeyUsage{ca}
			return input(c, n1Node, nil)
		}, Fail, "client auth"},
	})
}

func TestCheckSANKinds(t *testing.T) {
	runCheck(t, checkSANKinds, []checkCase{
		{"dns and ip", good(nil), Pass, ""},
		{"email", good(func(r *req, _ *csrObj) { r.emails = []string{"root@example.com"} }), Fail, "email"},
		{"uri", good(func(r *req, _ *csrObj) { r.uris = []string{"spiffe://cluster.local/ns/x"} }), Fail, "URI"},
		{"none", good(func(r *req, _ *csrObj) { r.dns, r.ips = nil, nil }), Fail, "no DNS name or IP"},
	})
}

func TestCheckDNSNames(t *testing.T) {
	mk := func(dns []string, n *corev1.Node, inv Inventory) func(t *testing.T) *Input {
		return func(t *testing.T) *Input {
			r := nodeReq(n1)
			r.dns = dns
			return input(fromNode(n1, r.build(t)), n, inv)
		}
	}
	withDNS := nodeObj(n1, hostname(n1), internalIP("192.168.10.24"),
		corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: "node-1.internal.example.com"})
	runCheck(t, checkDNSNames, []checkCase{
		{"node name", mk([]string{n1}, n1Node, nil), Pass, ""},
		{"node name upper case", mk([]string{strings.ToUpper(n1)}, n1Node, nil), Pass, ""},
		{"no names", mk(nil, n1Node, nil), Pass, ""},
		{"internal DNS address", mk([]string{n1, "node-1.internal.example.com"}, withDNS, nil), Pass, ""},
		{"suffix with spec", mk([]string{n1 + ".example.com"}, n1Node, labInventory), Pass, ""},
		{"suffix without spec", mk([]string{n1 + ".example.com"}, n1Node, nil), Fail, "does not belong"},
		{"other node's name", mk([]string{n1, "k8s-lab-node-2"}, n1Node, nil), Fail, `"k8s-lab-node-2"`},
		{"api server name", mk([]string{"kubernetes.default.svc"}, n1Node, labInventory), Fail, "kubernetes.default.svc"},
		{"wildcard", mk([]string{"*.example.com"}, n1Node, labInventory), Fail, "wildcard"},
		{"trailing dot", mk([]string{n1 + "."}, n1Node, nil), Fail, "does not belong"},
		{"node name, node missing", mk([]string{n1}, nil, nil), Pass, ""},
		{"extra name, node missing", mk([]string{n1, "node-1.internal.example.com"}, nil, nil), Unknown, "not reported yet"},
		{"extra name, node without addresses yet", mk([]string{n1, "node-1.internal.example.com"}, nodeObj(n1), nil), Unknown, "not reported yet"},
		{"wildcard, node missing", mk([]string{"*.example.com"}, nil, nil), Fail, "wildcard"},
		{"not a node", func(t *testing.T) *Input {
			return input(csrObj{user: "alice", request: nodeReq(n1).build(t)}, nil, nil)
		}, Skip, "not a node"},
	})
}

func TestCheckIPAddresses(t *testing.T) {
	mk := func(ips []string, raw [][]byte, n *corev1.Node, inv Inventory) func(t *testing.T) *Input {
		return func(t *testing.T) *Input {
			r := nodeReq(n1, ips...)
			r.rawIPs = raw
			return input(fromNode(n1, r.build(t)), n, inv)
		}
	}
	mapped := func(s string) []byte { return netip.MustParseAddr("::ffff:" + s).AsSlice() }
	reports := func(addrs ...corev1.NodeAddress) *corev1.Node { return nodeObj(n1, addrs...) }
	runCheck(t, checkIPAddresses, []checkCase{
		{"own internal IP", mk([]string{"192.168.10.24"}, nil, n1Node, nil), Pass, ""},
		{"no IPs", mk(nil, nil, n1Node, nil), Pass, ""},
		{"external IP", mk([]string{"203.0.113.7"}, nil, reports(internalIP("192.168.10.24"),
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}), nil), Pass, ""},
		{"node reports address with leading zeros", mk([]string{"192.168.10.24"}, nil, reports(internalIP("192.168.010.024")), nil), Pass, ""},
		{"another node's IP", mk([]string{"192.168.10.26"}, nil, n1Node, nil), Fail, "192.168.10.26"},
		{"own and another", mk([]string{"192.168.10.24", "192.168.10.26"}, nil, n1Node, nil), Fail, "192.168.10.26"},
		{"mapped own IP", mk(nil, [][]byte{mapped("192.168.10.24")}, n1Node, nil), Pass, ""},
		{"mapped foreign IP", mk(nil, [][]byte{mapped("192.168.10.26")}, n1Node, nil), Fail, "IPv4-mapped 192.168.10.26"},
		{"mapped foreign IP with spec", mk(nil, [][]byte{mapped("192.168.10.26")}, n1Node, labInventory), Fail, "cluster spec"},
		// crypto/x509 refuses a 3-byte IP: request-pem fails, this check skips.
		{"malformed length", mk(nil, [][]byte{{1, 2, 3}}, n1Node, nil), Skip, "did not decode"},
		{"loopback", mk([]string{"127.0.0.1"}, nil, reports(internalIP("127.0.0.1")), nil), Fail, "loopback"},
		{"unspecified", mk([]string{"0.0.0.0"}, nil, n1Node, nil), Fail, "unspecified"},
		{"spec wins over a spoofed node address", mk([]string{"192.168.10.99"}, nil, reports(internalIP("192.168.10.99")), labInventory), Fail, "allowed by the cluster spec: 192.168.10.24"},
		{"spec address the node does not report", mk([]string{"192.168.10.24"}, nil, reports(internalIP("10.0.0.5")), labInventory), Pass, ""},
		{"node not in spec", func(t *testing.T) *Input {
			r := nodeReq("k8s-lab-node-9", "192.168.10.30")
			return input(fromNode("k8s-lab-node-9", r.build(t)), nodeObj("k8s-lab-node-9", internalIP("192.168.10.30")), labInventory)
		}, Fail, "not in the cluster spec"},
		{"node missing, no spec", mk([]string{"192.168.10.24"}, nil, nil, nil), Unknown, "not reported yet"},
		{"node without addresses yet", mk([]string{"192.168.10.24"}, nil, nodeObj(n1), nil), Unknown, "not reported yet"},
		{"node with only a hostname", mk([]string{"192.168.10.24"}, nil, reports(hostname(n1)), nil), Unknown, "not reported yet"},
		{"node without addresses, loopback", mk([]string{"127.0.0.1"}, nil, nodeObj(n1), nil), Fail, "can never belong"},
		{"node missing, spec decides", mk([]string{"192.168.10.24"}, nil, nil, labInventory), Pass, ""},
		{"node missing, spec denies", mk([]string{"192.168.10.26"}, nil, nil, labInventory), Fail, "192.168.10.26"},
		{"node missing, loopback", mk([]string{"127.0.0.1"}, nil, nil, nil), Fail, "can never belong"},
		{"hostname that is an IP", mk([]string{"192.168.10.24"}, nil, reports(hostname("192.168.10.24")), nil), Pass, ""},
		{"ipv6 own", mk([]string{"fd00::24"}, nil, reports(internalIP("fd00:0:0:0::24")), nil), Pass, ""},
	})
}

func TestCheckNodeExists(t *testing.T) {
	runCheck(t, checkNodeExists, []checkCase{
		{"exists", good(nil), Pass, ""},
		{"not registered", func(t *testing.T) *Input { return input(fromNode(n1, nodeReq(n1).build(t)), nil, nil) }, Unknown, "not registered yet"},
		{"api error", func(t *testing.T) *Input {
			in := input(fromNode(n1, nodeReq(n1).build(t)), nil, nil)
			in.NodeErr = errors.New("connection refused")
			return in
		}, Unknown, "connection refused"},
		{"not a node", func(t *testing.T) *Input {
			return input(csrObj{user: "alice", request: nodeReq(n1).build(t)}, nil, nil)
		}, Skip, ""},
	})
}

func TestCheckExpiration(t *testing.T) {
	exp := func(s *int32, max time.Duration) func(t *testing.T) *Input {
		return func(t *testing.T) *Input {
			in := good(func(_ *req, c *csrObj) { c.expiration = s })(t)
			in.MaxExpiration = max
			return in
		}
	}
	runCheck(t, checkExpiration, []checkCase{
		{"unset", exp(nil, 0), Pass, ""},
		{"one day", exp(int32p(86400), 0), Pass, ""},
		{"exactly one year", exp(int32p(365*86400), 0), Pass, ""},
		{"ten years", exp(int32p(10*365*86400), 0), Fail, "more than the cap"},
		{"max int32", exp(int32p(1<<31-1), 0), Fail, "more than the cap"},
		{"over a custom cap", exp(int32p(86401), 24*time.Hour), Fail, "24h0m0s"},
	})
}

func TestChecksAreNamedAndDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks() {
		if c.Name == "" || c.Doc == "" || c.Summary == "" || c.Fn == nil {
			t.Errorf("check %q lacks a name, summary, doc or function", c.Name)
		}
		// The help lists "  NAME(15) SUMMARY" in 80 columns.
		if n := 2 + 15 + 1 + len(c.Summary); n > 80 || len(c.Name) > 15 {
			t.Errorf("check %q: its help line is %d columns, more than 80", c.Name, n)
		}
		if seen[c.Name] {
			t.Errorf("check %q listed twice", c.Name)
		}
		seen[c.Name] = true
	}
}

// TestParseRequestSizeLimit: a request of exactly maxRequestBytes (a valid
// PEM block padded with trailing whitespace, which is allowed) is decoded;
// one byte more is refused with both sizes in the message.
func TestParseRequestSizeLimit(t *testing.T) {
	p := nodeReq(n1, "192.168.10.24").build(t)
	atLimit := append(p, bytes.Repeat([]byte("\n"), maxRequestBytes-len(p))...)
	if r, err := ParseRequest(atLimit); err != nil || r == nil {
		t.Fatalf("a request of %d bytes: %v", len(atLimit), err)
	}
	_, err := ParseRequest(append(atLimit, '\n'))
	if want := "spec.request is 65537 bytes, more than the 65536 a serving-certificate request needs"; err == nil || err.Error() != want {
		t.Fatalf("a request of %d bytes: %v, want %q", len(atLimit)+1, err, want)
	}
}
