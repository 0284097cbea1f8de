package csr

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/spec"
)

func TestDecide(t *testing.T) {
	r := func(vs ...Verdict) []Result {
		var out []Result
		for _, v := range vs {
			out = append(out, Result{Verdict: v})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []Result
		want Decision
	}{
		{"all pass", r(Pass, Pass), Approve},
		{"skips do not block", r(Pass, Skip), Approve},
		{"unknown leaves pending", r(Pass, Unknown), LeavePending},
		{"fail denies", r(Pass, Fail), Deny},
		{"fail wins over unknown", r(Unknown, Fail, Pass), Deny},
		{"unknown after fail still denies", r(Fail, Unknown), Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.in); got != tc.want {
				t.Fatalf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestEvaluate checks whole reviews: every check is reported, and the
// decision and reasons follow from them.
func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      func(t *testing.T) *Input
		want    Decision
		reasons []string // each a substring of some reason
	}{
		{"kubelet ecdsa", good(nil), Approve, []string{"all checks passed"}},
		{"kubelet rsa", good(func(r *req, c *csrObj) {
			r.key = "rsa"
			c.usages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}
		}), Approve, nil},
		{"node not registered", func(t *testing.T) *Input {
			return input(fromNode(n1, nodeReq(n1, "192.168.10.24").build(t)), nil, nil)
		}, LeavePending, []string{"node-exists: Node k8s-lab-node-1 is not registered yet", "ip-addresses:"}},
		{"foreign IP while node missing is still denied with a spec", func(t *testing.T) *Input {
			return input(fromNode(n1, nodeReq(n1, "192.168.10.26").build(t)), nil, labInventory)
		}, Deny, []string{"ip-addresses:"}},
		{"several failures all reported", good(func(r *req, c *csrObj) {
			r.ips = []string{"192.168.10.26"}
			r.emails = []string{"a@example.com"}
			c.usages = []certv1.KeyUsage{certv1.UsageClientAuth}
		}), Deny, []string{"ip-addresses:", "san-kinds:", "usages:"}},
		{"unparseable", func(t *testing.T) *Input { return input(fromNode(n1, []byte("nope")), n1Node, nil) }, Deny, []string{"request-pem:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv := Evaluate(tc.in(t))
			if rv.Decision != tc.want {
				t.Fatalf("decision %s, want %s; results %+v", rv.Decision, tc.want, rv.Results)
			}
			if len(rv.Results) != len(Checks()) {
				t.Fatalf("%d results for %d checks", len(rv.Results), len(Checks()))
			}
			reasons := rv.Reasons()
			for _, want := range tc.reasons {
				if !slices.ContainsFunc(reasons, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("no reason contains %q: %q", want, reasons)
				}
			}
		})
	}
}

func TestIsDecided(t *testing.T) {
	c := &certv1.CertificateSigningRequest{}
	if IsDecided(c) {
		t.Fatal("a CSR without conditions is decided")
	}
	for _, ct := range []certv1.RequestConditionType{certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed} {
		c.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: ct, Status: corev1.ConditionTrue}}
		if !IsDecided(c) {
			t.Errorf("%s is not decided", ct)
		}
	}
}

// FuzzReview feeds arbitrary bytes through the decoding path and the full
// review: no panic, and nothing that fails to decode is ever approved.
func FuzzReview(f *testing.F) {
	f.Add(nodeReq(n1, "192.168.10.24").build(f))
	f.Add(req{key: "rsa", cn: "system:node:" + n1, org: []string{NodesGroup}, dns: []string{n1, "*.x"}, emails: []string{"a@b"}, uris: []string{"https://x"}}.build(f))
	f.Add(req{cn: "x", rawIPs: [][]byte{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 10, 26}}}.build(f))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add([]byte{})
	f.Add(req{cn: "system:node:" + n1, org: []string{NodesGroup}, dns: []string{n1, "K8S-LAB-API.example.com", "k8s-lab-node-2.example.com", "node-1.internal.example.com"},
		ips: []string{"192.168.10.24", "192.168.10.26", "10.96.0.1"}}.build(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := input(fromNode(n1, data), n1Node, labInventory)
		rv := Evaluate(in)
		if in.Request == nil && in.ParseErr == nil {
			t.Fatal("no request and no error")
		}
		if in.Request == nil && rv.Decision != Deny {
			t.Fatalf("undecodable request got %s", rv.Decision)
		}
		if rv.Decision == Approve {
			for _, ip := range in.Request.IPAddresses {
				if a, _ := NormalizeIP(ip); a.String() != "192.168.10.24" {
					t.Fatalf("approved foreign IP %s", ip)
				}
			}
			for _, d := range in.Request.DNSNames {
				if l := strings.ToLower(d); l != n1 && l != n1+".example.com" {
					t.Fatalf("approved foreign DNS name %q", d)
				}
			}
		}
		// Without a spec, from a node that lists the API server's and
		// another node's names and addresses in its own status: none of
		// them is ever approved.
		in = Prepare(fromNode(n1, data).object())
		in.Node, in.Cluster = thief, labView(thief)
		rv = Evaluate(in)
		if rv.Decision != Approve {
			return
		}
		for _, ip := range in.Request.IPAddresses {
			if a, _ := NormalizeIP(ip); a.String() != "192.168.10.24" && a.String() != "192.168.10.27" {
				t.Fatalf("approved, without a spec, the IP %s", ip)
			}
		}
		for _, d := range in.Request.DNSNames {
			l := normName(d)
			if isServiceName(l) || isLocalhost(l) {
				t.Fatalf("approved the name %q", d)
			}
			for _, e := range in.Cluster.APIServer {
				if namesCollide(l, normName(e.Host)) {
					t.Fatalf("approved the API server's name %q", d)
				}
			}
			for _, o := range in.Cluster.Nodes {
				if o.Name != n1 && namesCollide(l, o.Name) {
					t.Fatalf("approved Node %s's name %q", o.Name, d)
				}
			}
		}
	})
}

func TestInventoryFromSpec(t *testing.T) {
	r := spec.Parse("lab.yaml", examples.Lab)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	inv, err := InventoryFromSpec(r.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if inv.DNSSuffix() != "example.com" {
		t.Errorf("suffix %q", inv.DNSSuffix())
	}
	for name, want := range map[string]string{"k8s-lab-master-1": "192.168.10.23", "k8s-lab-node-1": "192.168.10.24", "k8s-lab-win-1": "192.168.10.25", "k8s-lab-node-2": "192.168.10.26"} {
		if a, ok := inv.NodeAddress(name); !ok || a.String() != want {
			t.Errorf("%s: %v %v, want %s", name, a, ok, want)
		}
	}
	if _, ok := inv.NodeAddress("k8s-lab-node-9"); ok {
		t.Error("a node not in the spec has an address")
	}
	bad := *r.Cluster
	bad.Spec.Nodes = append([]spec.Node{}, r.Cluster.Spec.Nodes...)
	bad.Spec.Nodes[1].Address = "192.168.10.x"
	if _, err := InventoryFromSpec(&bad); err == nil || !strings.Contains(err.Error(), "spec.nodes[1]") {
		t.Errorf("bad address: %v, want an error naming spec.nodes[1]", err)
	}
}

func TestConditionFor(t *testing.T) {
	now := time.Date(2026, 11, 6, 20, 16, 50, 0, time.UTC)
	ok := ConditionFor(&Review{Node: n1, Decision: Approve}, now)
	if ok.Type != certv1.CertificateApproved || ok.Reason != ReasonApproved || ok.Status != corev1.ConditionTrue || !ok.LastUpdateTime.Time.Equal(now) || !strings.Contains(ok.Message, n1) {
		t.Errorf("approval condition %+v", ok)
	}
	long := strings.Repeat("x", 3000)
	deny := ConditionFor(&Review{Node: n1, Decision: Deny, Results: []Result{
		{Check: "ip-addresses", Verdict: Fail, Message: "foreign"},
		{Check: "dns-names", Verdict: Fail, Message: long},
		{Check: "node-exists", Verdict: Pass},
	}}, now)
	if deny.Type != certv1.CertificateDenied || deny.Reason != ReasonDenied {
		t.Errorf("denial condition %+v", deny)
	}
	if !strings.HasPrefix(deny.Message, "hybridctl: ip-addresses: foreign; dns-names: xxx") || len(deny.Message) > maxMessage || !strings.HasSuffix(deny.Message, "...") {
		t.Errorf("denial message %d bytes: %.80q", len(deny.Message), deny.Message)
	}
}

// TestEvaluateAPIError: only an error other than "not found" looking the
// Node up is an API error (the run is incomplete); a Node that is not
// registered, or one that was found, is not.
func TestEvaluateAPIError(t *testing.T) {
	refused := errors.New("connection refused")
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		nodeErr error
		want    error
	}{
		{"found", n1Node, nil, nil},
		{"not registered", nil, notFound(n1), nil},
		{"API error", nil, refused, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Prepare(fromNode(n1, nodeReq(n1, "192.168.10.24").build(t)).object())
			in.Node, in.NodeErr = tc.node, tc.nodeErr
			rv := Evaluate(in)
			if rv.APIError != tc.want {
				t.Fatalf("APIError %v, want %v", rv.APIError, tc.want)
			}
		})
	}
}

// TestEvaluateReviewFields: the review carries what the request asks for,
// every kind of name in its order, as people and -o json see it.
func TestEvaluateReviewFields(t *testing.T) {
	created := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	c := fromNode(n1, req{cn: NodeUserPrefix + n1, org: []string{NodesGroup}, dns: []string{n1, n1 + ".example.com"},
		ips: []string{"192.168.10.24", "fd00::24"}, emails: []string{"a@example.com"}, uris: []string{"spiffe://lab/node"}}.build(t))
	c.name = "fields"
	c.usages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth, certv1.UsageClientAuth}
	obj := c.object()
	obj.CreationTimestamp.Time = created
	in := Prepare(obj)
	in.Node = n1Node
	rv := Evaluate(in)
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"Name", rv.Name, "fields"},
		{"Node", rv.Node, n1},
		{"Requester", rv.Requester, NodeUserPrefix + n1},
		{"Created", rv.Created, created},
		{"DNSNames", rv.DNSNames, []string{n1, n1 + ".example.com"}},
		{"IPs", rv.IPs, []string{"192.168.10.24", "fd00::24"}},
		{"Emails", rv.Emails, []string{"a@example.com"}},
		{"URIs", rv.URIs, []string{"spiffe://lab/node"}},
		{"Usages", rv.Usages, []string{"digital signature", "server auth", "client auth"}},
		{"Decision", rv.Decision, Deny},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s = %#v, want %#v", f.what, f.got, f.want)
		}
	}
	// A request that does not decode has no names; the rest is filled.
	c.request = []byte("nope")
	rv = Evaluate(Prepare(c.object()))
	if rv.DNSNames != nil || rv.IPs != nil || rv.Emails != nil || rv.URIs != nil || rv.Node != n1 || len(rv.Usages) != 3 {
		t.Errorf("undecodable request: %+v", rv)
	}
}
