package csr

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The tests in this file run against a real kube-apiserver 1.37.2 + etcd
// (internal/testenv); they are skipped under go test -short.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

func clientFor(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func asNode(t testing.TB, env *testenv.Env, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := env.UserConfig(NodeUserPrefix+name, NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	return clientFor(t, cfg)
}

// registerNode creates Node name with the addresses, as a kubelet would
// register it (status included).
func registerNode(t testing.TB, ctx context.Context, admin kubernetes.Interface, name string, addrs ...corev1.NodeAddress) {
	t.Helper()
	n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("registering Node %s: %v", name, err)
	}
	n.Status.Addresses = addrs
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting Node %s addresses: %v", name, err)
	}
}

// oneShot are the options `hybridctl csr approve` reviews with when no
// spec is given: the other Nodes and the API server's names read through
// the API.
func oneShot(env *testenv.Env, admin kubernetes.Interface) Options {
	return Options{Cluster: APIClusterView(admin, env.AdminConfig().Host)}
}

// decisionOf reads the decision back from the API's status.conditions.
func decisionOf(t testing.TB, ctx context.Context, admin kubernetes.Interface, name string) (Decision, string) {
	t.Helper()
	c, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading back %s: %v", name, err)
	}
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certv1.CertificateApproved:
			return Approve, cond.Reason + ": " + cond.Message
		case certv1.CertificateDenied:
			return Deny, cond.Reason + ": " + cond.Message
		}
	}
	return LeavePending, ""
}

// Expected outcomes in the corpus beyond the three decisions.
const (
	// untouched: not a kubelet-serving request, so never listed, never
	// approved or denied by hybridctl.
	untouched Decision = "untouched"
	// rejected: the API server refuses to store it; rejectedBy says why.
	rejected Decision = "rejected-by-api"
)

type corpusCase struct {
	name    string
	creator string // "node:NAME", "admin" or "user:NAME"
	req     req
	raw     []byte // request bytes instead of req
	signer  string
	usages  []certv1.KeyUsage
	expire  *int32
	spec    bool
	want    Decision
	// for denials: every failed check named here must be in the message;
	// for rejections: a substring of the API error.
	why []string
}

var (
	kubeletUsages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}
	rsaUsages     = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}
	mapped26      = netip.MustParseAddr("::ffff:192.168.10.26").AsSlice()
	mapped24      = netip.MustParseAddr("::ffff:192.168.10.24").AsSlice()
)

func with(r req, change func(*req)) req { change(&r); return r }

// adversarialCorpus is every request the approver must get right, each with
// its expected decision as read back from the API server.
func adversarialCorpus() []corpusCase {
	n1r := nodeReq("k8s-lab-node-1", "192.168.10.24")
	return []corpusCase{
		// Valid requests: approved.
		{name: "valid-ecdsa", creator: "node:k8s-lab-node-1", req: n1r, want: Approve},
		{name: "valid-rsa", creator: "node:k8s-lab-node-2", req: with(nodeReq("k8s-lab-node-2", "192.168.10.26"), func(r *req) { r.key = "rsa" }), usages: rsaUsages, want: Approve},
		{name: "valid-ecdsa-with-spec", creator: "node:k8s-lab-win-1", req: with(nodeReq("k8s-lab-win-1", "192.168.10.25"), func(r *req) { r.dns = append(r.dns, "k8s-lab-win-1.example.com") }), spec: true, want: Approve},
		{name: "valid-rsa-with-spec", creator: "node:k8s-lab-node-2", req: with(nodeReq("k8s-lab-node-2", "192.168.10.26"), func(r *req) { r.key = "rsa" }), usages: rsaUsages, spec: true, want: Approve},
		{name: "valid-mapped-own-ip", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.rawIPs = [][]byte{mapped24} }), want: Approve},
		{name: "valid-short-expiration", creator: "node:k8s-lab-node-1", req: n1r, expire: int32p(86400), want: Approve},
		// Names and addresses that are not the node's: denied.
		{name: "another-nodes-ip", creator: "node:k8s-lab-node-1", req: nodeReq("k8s-lab-node-1", "192.168.10.26"), want: Deny, why: []string{"ip-addresses"}},
		{name: "another-nodes-ip-with-spec", creator: "node:k8s-lab-node-1", req: nodeReq("k8s-lab-node-1", "192.168.10.26"), spec: true, want: Deny, why: []string{"ip-addresses"}},
		{name: "extra-dns-name", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns = append(r.dns, "k8s-lab-node-2") }), want: Deny, why: []string{"dns-names"}},
		{name: "api-server-dns-name", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns = append(r.dns, "kubernetes.default.svc") }), want: Deny, why: []string{"dns-names"}},
		{name: "terminal-escape-in-dns-name", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns = append(r.dns, "x\x1b[2J.example.com") }), want: Deny, why: []string{"dns-names"}},
		{name: "wildcard", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns = []string{"*.example.com"} }), spec: true, want: Deny, why: []string{"dns-names"}},
		{name: "suffix-name-without-spec", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns = append(r.dns, "k8s-lab-node-1.example.com") }), want: Deny, why: []string{"dns-names"}},
		{name: "email-san", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.emails = []string{"root@example.com"} }), want: Deny, why: []string{"san-kinds"}},
		{name: "uri-san", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.uris = []string{"spiffe://cluster.local/ns/kube-system/sa/admin"} }), want: Deny, why: []string{"san-kinds"}},
		{name: "no-san", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.dns, r.ips = nil, nil }), want: Deny, why: []string{"san-kinds"}},
		{name: "mapped-ipv6-foreign-ip", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.rawIPs = [][]byte{mapped26} }), want: Deny, why: []string{"ip-addresses"}},
		// The known limit without a spec: node-2 reports 192.168.10.99 in
		// its own status (a node may), so without -f it gets it.
		{name: "spoofed-node-address-without-spec", creator: "node:k8s-lab-node-2", req: nodeReq("k8s-lab-node-2", "192.168.10.99"), want: Approve},
		{name: "spoofed-node-address-with-spec", creator: "node:k8s-lab-node-2", req: nodeReq("k8s-lab-node-2", "192.168.10.99"), spec: true, want: Deny, why: []string{"ip-addresses"}},
		// Usages and keys: denied.
		{name: "client-auth-usage", creator: "node:k8s-lab-node-1", req: n1r, usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth, certv1.UsageClientAuth}, want: Deny, why: []string{"usages"}},
		{name: "ecdsa-key-encipherment", creator: "node:k8s-lab-node-1", req: n1r, usages: rsaUsages, want: Deny, why: []string{"usages"}},
		{name: "rsa-1024", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.key = "rsa1024" }), usages: rsaUsages, want: Deny, why: []string{"public-key"}},
		{name: "huge-expiration", creator: "node:k8s-lab-node-1", req: n1r, expire: int32p(10 * 365 * 86400), want: Deny, why: []string{"expiration"}},
		// Subject and requester: denied.
		{name: "organization-system-masters", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.org = []string{NodesGroup, "system:masters"} }), want: Deny, why: []string{"subject"}},
		{name: "cn-of-another-node-by-admin", creator: "admin", req: nodeReq("k8s-lab-node-2", "192.168.10.26"), want: Deny, why: []string{"requester", "subject"}},
		{name: "requester-not-a-node", creator: "user:alice", req: n1r, want: Deny, why: []string{"requester", "subject"}},
		// Refused by the API server itself (NodeRestriction, validation):
		// the approver never sees them; its own checks are unit-tested.
		{name: "cn-of-another-node-as-node", creator: "node:k8s-lab-node-1", req: nodeReq("k8s-lab-node-2", "192.168.10.26"), want: rejected, why: []string{"can only create a node CSR with CN=system:node:k8s-lab-node-1"}},
		{name: "unparseable-pem", creator: "node:k8s-lab-node-1", raw: []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), want: rejected, why: []string{"unable to parse csr"}},
		{name: "bad-self-signature", creator: "node:k8s-lab-node-1", req: with(n1r, func(r *req) { r.key, r.badSig = "rsa", true }), usages: rsaUsages, want: rejected, why: []string{"spec.request", "verification"}},
		// Other signers belong to other approvers: never touched.
		{name: "wrong-signer", creator: "node:k8s-lab-node-1", req: n1r, signer: certv1.KubeAPIServerClientSignerName, usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}, want: untouched},
	}
}

// setupLab registers the lab's nodes and lets user alice create CSRs; it is
// idempotent (tests share one API server). It returns the admin client.
func setupLab(t *testing.T, env *testenv.Env) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	admin := clientFor(t, env.AdminConfig())
	if _, err := admin.CoreV1().Nodes().Get(ctx, "k8s-lab-win-1", metav1.GetOptions{}); err == nil {
		return admin
	}
	registerNode(t, ctx, admin, "k8s-lab-node-1", hostname("k8s-lab-node-1"), internalIP("192.168.10.24"))
	// node-2 also reports an address that is not its own, as a node with
	// stolen credentials could: only the spec catches it.
	registerNode(t, ctx, admin, "k8s-lab-node-2", hostname("k8s-lab-node-2"), internalIP("192.168.10.26"),
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.168.10.99"})
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-csr-creator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-csr-creator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test-csr-creator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Registered last: its presence means the set-up is complete.
	registerNode(t, ctx, admin, "k8s-lab-win-1", hostname("k8s-lab-win-1"), internalIP("192.168.10.25"))
	return admin
}

func creatorClient(t *testing.T, env *testenv.Env, creator string) kubernetes.Interface {
	t.Helper()
	switch {
	case creator == "admin":
		return clientFor(t, env.AdminConfig())
	case strings.HasPrefix(creator, "node:"):
		return asNode(t, env, strings.TrimPrefix(creator, "node:"))
	case strings.HasPrefix(creator, "user:"):
		cfg, err := env.UserConfig(strings.TrimPrefix(creator, "user:"))
		if err != nil {
			t.Fatal(err)
		}
		return clientFor(t, cfg)
	}
	t.Fatalf("unknown creator %q", creator)
	return nil
}

func (tc corpusCase) object(t testing.TB, name string) *certv1.CertificateSigningRequest {
	request := tc.raw
	if request == nil {
		request = tc.req.build(t)
	}
	signer, usages := tc.signer, tc.usages
	if signer == "" {
		signer = SignerName
	}
	if usages == nil {
		usages = kubeletUsages
	}
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Usages: usages, ExpirationSeconds: tc.expire},
	}
}

var corpusSpec = StaticInventory{Suffix: "example.com", Addresses: map[string]netip.Addr{
	"k8s-lab-master-1": netip.MustParseAddr("192.168.10.23"),
	"k8s-lab-node-1":   netip.MustParseAddr("192.168.10.24"),
	"k8s-lab-win-1":    netip.MustParseAddr("192.168.10.25"),
	"k8s-lab-node-2":   netip.MustParseAddr("192.168.10.26"),
}}

// TestAdversarialCorpus creates each request as its creator (so the API
// server sets spec.username and groups), runs the one-shot approver exactly
// as `hybridctl csr approve --yes` does, and reads the decision back from
// status.conditions.
func TestAdversarialCorpus(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	corpus := adversarialCorpus()
	if len(corpus) < 20 {
		t.Fatalf("corpus has %d requests, want at least 20", len(corpus))
	}
	stored := map[string]bool{}
	for _, tc := range corpus {
		name := "corpus-" + tc.name
		_, err := creatorClient(t, env, tc.creator).CertificatesV1().CertificateSigningRequests().Create(ctx, tc.object(t, name), metav1.CreateOptions{})
		if tc.want == rejected {
			if err == nil {
				t.Errorf("%s: the API server stored it; want a rejection containing %q", tc.name, tc.why)
				continue
			}
			for _, w := range tc.why {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: rejection %q does not contain %q", tc.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: creating the CSR: %v", tc.name, err)
		}
		stored[name] = true
	}

	// One pass per inventory, as two runs of hybridctl csr approve --yes
	// (with and without -f) would do.
	getNode := APINodeGetter(admin)
	pending, err := ListPending(ctx, admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corpusCase{}
	for _, tc := range corpus {
		byName["corpus-"+tc.name] = tc
	}
	listed := map[string]bool{}
	for i := range pending {
		c := &pending[i]
		tc, ok := byName[c.Name]
		if !ok {
			continue
		}
		listed[c.Name] = true
		opts := oneShot(env, admin)
		if tc.spec {
			opts = Options{Inventory: corpusSpec}
		}
		rv := ReviewCSR(ctx, c, getNode, opts)
		if _, err := ApplyWithRetry(ctx, admin, c, rv, opts); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	for _, tc := range corpus {
		name := "corpus-" + tc.name
		if !stored[name] {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got, msg := decisionOf(t, ctx, admin, name)
			switch tc.want {
			case untouched:
				if listed[name] || got != LeavePending {
					t.Fatalf("a %s request was listed=%v and decided %s; hybridctl must leave other signers alone", tc.signer, listed[name], got)
				}
				return
			case Approve, Deny:
				if got != tc.want {
					t.Fatalf("decision %s (%s), want %s", got, msg, tc.want)
				}
			}
			for _, w := range tc.why {
				if !strings.Contains(msg, w+":") {
					t.Errorf("condition message %q does not name the failed check %q", msg, w)
				}
			}
			wantReason := map[Decision]string{Approve: ReasonApproved, Deny: ReasonDenied}[tc.want]
			if !strings.HasPrefix(msg, wantReason+":") {
				t.Errorf("condition %q, want reason %s", msg, wantReason)
			}
		})
	}
}

// TestNodeNotRegisteredYet: a request from a node whose Node object does not
// exist is left pending (never denied), then approved once it registers.
func TestNodeNotRegisteredYet(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	const node = "k8s-lab-late-1"
	c, err := asNode(t, env, node).CertificatesV1().CertificateSigningRequests().Create(ctx,
		corpusCase{req: nodeReq(node, "192.168.10.31")}.object(t, "late-node"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := ReviewCSR(ctx, c, APINodeGetter(admin), oneShot(env, admin))
	if rv.Decision != LeavePending {
		t.Fatalf("decision %s (%q), want left-pending", rv.Decision, rv.Reasons())
	}
	if _, err := Apply(ctx, admin, c, rv); err != nil {
		t.Fatal(err)
	}
	if got, msg := decisionOf(t, ctx, admin, c.Name); got != LeavePending {
		t.Fatalf("API shows %s (%s) for a request left pending", got, msg)
	}
	registerNode(t, ctx, admin, node, hostname(node), internalIP("192.168.10.31"))
	rv = ReviewCSR(ctx, c, APINodeGetter(admin), oneShot(env, admin))
	if _, err := ApplyWithRetry(ctx, admin, c, rv, oneShot(env, admin)); err != nil {
		t.Fatal(err)
	}
	if got, msg := decisionOf(t, ctx, admin, c.Name); got != Approve {
		t.Fatalf("after the Node registered: %s (%s), want approved", got, msg)
	}
}

// decisions collects the controller's decisions for tests.
type decisions struct {
	mu   sync.Mutex
	seen map[string][]Decision
	ch   chan Outcome
}

func newDecisions() *decisions {
	return &decisions{seen: map[string][]Decision{}, ch: make(chan Outcome, 1024)}
}

func (d *decisions) record(o Outcome) {
	d.mu.Lock()
	d.seen[o.Name] = append(d.seen[o.Name], o.Decision)
	d.mu.Unlock()
	select {
	case d.ch <- o:
	default:
	}
}

// waitFor waits until the controller reports decision for name.
func (d *decisions) waitFor(t testing.TB, name string, want Decision) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		d.mu.Lock()
		got := slices.Contains(d.seen[name], want)
		d.mu.Unlock()
		if got {
			return
		}
		select {
		case <-d.ch:
		case <-deadline:
			t.Fatalf("controller did not decide %s %s within 30s (saw %v)", name, want, d.seen[name])
		}
	}
}

func startController(t testing.TB, client kubernetes.Interface, opts ControllerOptions) *decisions {
	t.Helper()
	d := newDecisions()
	opts.OnDecision = d.record
	c, err := NewController(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("controller did not stop within 10s of cancellation")
		}
	})
	return d
}

// TestWatchController runs the --watch controller: it approves a good
// request, denies a bad one, leaves a request from an unregistered node
// pending and approves it when the Node appears.
func TestWatchController(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	d := startController(t, clientFor(t, env.AdminConfig()), ControllerOptions{Workers: 2})

	create := func(node, name string, r req) {
		t.Helper()
		if _, err := asNode(t, env, node).CertificatesV1().CertificateSigningRequests().Create(ctx, corpusCase{req: r}.object(t, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("k8s-lab-node-1", "watch-good", nodeReq("k8s-lab-node-1", "192.168.10.24"))
	create("k8s-lab-node-1", "watch-foreign-ip", nodeReq("k8s-lab-node-1", "192.168.10.26"))
	create("k8s-lab-late-2", "watch-late", nodeReq("k8s-lab-late-2", "192.168.10.32"))

	d.waitFor(t, "watch-good", Approve)
	d.waitFor(t, "watch-foreign-ip", Deny)
	d.waitFor(t, "watch-late", LeavePending)
	for name, want := range map[string]Decision{"watch-good": Approve, "watch-foreign-ip": Deny, "watch-late": LeavePending} {
		if got, msg := decisionOf(t, ctx, admin, name); got != want {
			t.Errorf("%s: API shows %s (%s), want %s", name, got, msg, want)
		}
	}
	registerNode(t, ctx, admin, "k8s-lab-late-2", hostname("k8s-lab-late-2"), internalIP("192.168.10.32"))
	d.waitFor(t, "watch-late", Approve)
	if got, msg := decisionOf(t, ctx, admin, "watch-late"); got != Approve {
		t.Errorf("watch-late: API shows %s (%s) after the Node registered", got, msg)
	}
}

// TestInClusterApproverRBAC applies the in-cluster approver's objects to the
// API server and proves, as its ServiceAccount, that the ClusterRole is
// enough to run the controller and approve a kubelet-serving request, and
// not enough to approve a kube-apiserver-client one or to do anything else.
func TestInClusterApproverRBAC(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	lab, err := os.ReadFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := InClusterApprover(DeployOptions{Image: "ghcr.io/hybridctl/hybridctl:test", ClusterSpec: lab})
	if err != nil {
		t.Fatal(err)
	}
	ns := o.Namespace.Name
	mustCreate := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	_, err = admin.CoreV1().Namespaces().Create(ctx, o.Namespace, metav1.CreateOptions{})
	mustCreate("Namespace", err)
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, o.ServiceAccount, metav1.CreateOptions{})
	mustCreate("ServiceAccount", err)
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, o.ClusterSpec, metav1.CreateOptions{})
	mustCreate("ConfigMap", err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, o.ClusterRole, metav1.CreateOptions{})
	mustCreate("ClusterRole", err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, o.ClusterRoleBinding, metav1.CreateOptions{})
	mustCreate("ClusterRoleBinding", err)
	_, err = admin.AppsV1().Deployments(ns).Create(ctx, o.Deployment, metav1.CreateOptions{})
	mustCreate("Deployment", err)

	// Pod Security "restricted" is enforced on the namespace: a pod from
	// the Deployment's template must be admitted (server-side dry run).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "approver-", Namespace: ns, Labels: o.Deployment.Spec.Template.Labels}, Spec: o.Deployment.Spec.Template.Spec}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the approver's pod is not admitted under Pod Security restricted: %v", err)
	}

	saCfg := env.AdminConfig()
	saCfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, o.ServiceAccount.Name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	sa := clientFor(t, saCfg)

	// The whole controller runs with nothing but these permissions, and
	// the spec the Deployment is given (-f).
	parsed := spec.Parse("lab.yaml", lab)
	if err := parsed.Err(); err != nil {
		t.Fatal(err)
	}
	inv, err := InventoryFromSpec(parsed.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	d := startController(t, sa, ControllerOptions{Options: Options{Inventory: inv}, Workers: 1})
	if _, err := asNode(t, env, "k8s-lab-node-1").CertificatesV1().CertificateSigningRequests().Create(ctx,
		corpusCase{req: nodeReq("k8s-lab-node-1", "192.168.10.24")}.object(t, "rbac-serving"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, "rbac-serving", Approve)
	if got, msg := decisionOf(t, ctx, admin, "rbac-serving"); got != Approve {
		t.Fatalf("kubelet-serving CSR approved by the ServiceAccount: API shows %s (%s)", got, msg)
	}

	// A kube-apiserver-client request: the ServiceAccount may not approve it.
	client := corpusCase{req: req{cn: "mallory", org: []string{"dev"}}, signer: certv1.KubeAPIServerClientSignerName,
		usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}}.object(t, "rbac-client")
	c, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, client, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions = append(c.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved, Message: "test"})
	if _, err := sa.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("ServiceAccount approving a kube-apiserver-client CSR: got %v, want Forbidden", err)
	}
	// Nor anything else.
	for what, err := range map[string]error{
		"create a CSR": func() error {
			_, err := sa.CertificatesV1().CertificateSigningRequests().Create(ctx, corpusCase{req: nodeReq("x")}.object(t, "rbac-sa-create"), metav1.CreateOptions{})
			return err
		}(),
		"delete a CSR": sa.CertificatesV1().CertificateSigningRequests().Delete(ctx, "rbac-serving", metav1.DeleteOptions{}),
		"list Secrets": func() error { _, err := sa.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); return err }(),
		"update a Node": func() error {
			n, err := admin.CoreV1().Nodes().Get(ctx, "k8s-lab-node-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = sa.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}(),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("ServiceAccount may %s: got %v, want Forbidden", what, err)
		}
	}
}

// TestControllerWithoutPermissionFailsFast: an identity that may not list
// CSRs gets the API's Forbidden at start, not a silent hang.
func TestControllerWithoutPermissionFailsFast(t *testing.T) {
	env := testenv.Get(t)
	cfg, err := env.UserConfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(clientFor(t, cfg), ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(t.Context()); !apierrors.IsForbidden(err) {
		t.Fatalf("Run as an identity without permissions: %v, want Forbidden", err)
	}
}

// TestApplyWithRetryOnConflict: a decision written with a stale object is
// re-read and re-reviewed; a CSR decided by someone else meanwhile is left
// alone.
func TestApplyWithRetryOnConflict(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	node := asNode(t, env, "k8s-lab-node-1").CertificatesV1().CertificateSigningRequests()
	getNode := APINodeGetter(admin)

	stale, err := node.Create(ctx, corpusCase{req: nodeReq("k8s-lab-node-1", "192.168.10.24")}.object(t, "conflict-relabelled"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"touched": "yes"}
	if _, err := csrs.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv := ReviewCSR(ctx, stale, getNode, oneShot(env, admin))
	if _, err := Apply(ctx, admin, stale, rv); !apierrors.IsConflict(err) {
		t.Fatalf("writing with the stale object: %v, want a conflict (else this test proves nothing)", err)
	}
	if _, err := ApplyWithRetry(ctx, admin, stale, rv, oneShot(env, admin)); err != nil {
		t.Fatalf("after a label change: %v", err)
	}
	if got, msg := decisionOf(t, ctx, admin, stale.Name); got != Approve {
		t.Fatalf("API shows %s (%s), want approved", got, msg)
	}

	stale, err = node.Create(ctx, corpusCase{req: nodeReq("k8s-lab-node-1", "192.168.10.24")}.object(t, "conflict-decided"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Status.Conditions = append(other.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "SomeoneElse", Message: "test"})
	if _, err := csrs.UpdateApproval(ctx, other.Name, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv = ReviewCSR(ctx, stale, getNode, oneShot(env, admin))
	if _, err := ApplyWithRetry(ctx, admin, stale, rv, oneShot(env, admin)); err == nil || !strings.Contains(err.Error(), "decided by someone else") {
		t.Fatalf("CSR denied by someone else meanwhile: %v", err)
	}
	if got, msg := decisionOf(t, ctx, admin, stale.Name); got != Deny || !strings.HasPrefix(msg, "SomeoneElse") {
		t.Fatalf("API shows %s (%s), want the other approver's denial kept", got, msg)
	}
}

// TestApplyWithRetryDisagreeingReview: after a conflict the fresh review
// disagrees with the decision the person confirmed (the node's address
// changed meanwhile, so the request now names an address that is not the
// node's): nothing is written, and the error says what the request would
// now be. Driven deterministically on the real API server.
func TestApplyWithRetryDisagreeingReview(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	nodeCSRs := asNode(t, env, "k8s-lab-node-2").CertificatesV1().CertificateSigningRequests()
	getNode := APINodeGetter(admin)

	n, err := admin.CoreV1().Nodes().Get(ctx, "k8s-lab-node-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	stale, err := nodeCSRs.Create(ctx, corpusCase{req: nodeReq("k8s-lab-node-2", ip)}.object(t, "conflict-disagrees"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := ReviewCSR(ctx, stale, getNode, oneShot(env, admin))
	if rv.Decision != Approve {
		t.Fatalf("first review: %s %v, want approve (else this test proves nothing)", rv.Decision, rv.Reasons())
	}
	// Meanwhile the node reports another address, and the CSR changes.
	for i := range n.Status.Addresses {
		if n.Status.Addresses[i].Type == corev1.NodeInternalIP {
			n.Status.Addresses[i].Address = "192.168.10.99"
		}
	}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"touched": "yes"}
	if _, err := csrs.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The first review's getter cached the Node as it was: the retry must
	// read the Node again.
	out, err := ApplyWithRetry(ctx, admin, stale, rv, oneShot(env, admin))
	if err == nil || !strings.Contains(err.Error(), "changed while it was reviewed; it would now be denied") {
		t.Fatalf("want the disagreement reported, got %v", err)
	}
	if out.Decision != LeavePending {
		t.Errorf("returned decision %s, want left pending", out.Decision)
	}
	if got, msg := decisionOf(t, ctx, admin, stale.Name); got != LeavePending {
		t.Fatalf("API shows %s (%s): a decision was written although the new review disagrees", got, msg)
	}
}

// TestListPendingOldestFirst: pending requests come oldest first, not by
// name: order-z, created a second before order-a, is listed before it (the
// API server stamps creation in whole seconds).
func TestListPendingOldestFirst(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := clientFor(t, env.AdminConfig())
	create := func(name string) metav1.Time {
		t.Helper()
		c, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, &certv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       certv1.CertificateSigningRequestSpec{Request: nodeReq("k8s-lab-node-1", "192.168.10.24").build(t), SignerName: SignerName, Usages: kubeletUsages},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.CreationTimestamp
	}
	first := create("order-z")
	// Wait for the next second on the server's clock (bounded by the test's
	// own deadline: the clock moves on).
	for {
		time.Sleep(300 * time.Millisecond)
		if second := create("order-probe"); second.After(first.Time) {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, "order-probe", metav1.DeleteOptions{})
			break
		}
		if err := admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, "order-probe", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("order-a")
	pending, err := ListPending(ctx, admin, []string{"order-a", "order-z"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pending {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "order-z order-a" {
		t.Errorf("pending %v, want the older order-z first", names)
	}
}
