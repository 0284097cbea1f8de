package csr

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The controller tests run the --watch controller against the real API
// server (internal/testenv) and observe it through OnDecision, its log and
// the CSRs' status.conditions as the API server stores them.

// logBuffer is a slog destination the controller's goroutines may write
// to at once.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines are the log lines that contain every one of parts.
func (b *logBuffer) lines(parts ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
			out = append(out, l)
		}
	}
	return out
}

// waitLine waits (30 s at most) for a log line containing every part.
func (b *logBuffer) waitLine(t testing.TB, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l := b.lines(parts...); len(l) > 0 {
			return l[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within 30s; log:\n%s", parts, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// outcomes records every Outcome the controller reports, reasons included.
type outcomes struct {
	mu  sync.Mutex
	all []Outcome
}

func (o *outcomes) record(out Outcome) {
	o.mu.Lock()
	o.all = append(o.all, out)
	o.mu.Unlock()
}

// waitFor waits (30 s at most) for an outcome of name with decision want
// and a reason containing reason ("" for any), and returns it.
func (o *outcomes) waitFor(t testing.TB, name string, want Decision, reason string) Outcome {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o.mu.Lock()
		var seen []Outcome
		for _, out := range o.all {
			if out.Name != name {
				continue
			}
			seen = append(seen, out)
			if out.Decision == want && slices.ContainsFunc(out.Reasons, func(r string) bool { return strings.Contains(r, reason) }) {
				o.mu.Unlock()
				return out
			}
		}
		o.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("controller did not report %s %s (reason %q) within 30s; saw %+v", name, want, reason, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runController starts c and returns a function that cancels it and
// returns what Run returned (failing when Run does not return within 10 s).
func runController(t testing.TB, c *Controller) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("the controller did not stop within 10s of cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func createAsNode(t *testing.T, env *testenv.Env, node, name string, r req) {
	t.Helper()
	if _, err := asNode(t, env, node).CertificatesV1().CertificateSigningRequests().Create(t.Context(), corpusCase{req: r}.object(t, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestControllerLogsAndDefaults: with Workers unset the controller runs two
// workers and says so; Workers: 1 runs one; the log states whether a spec
// is used and whether the run is dry, and a decision's line carries the
// request's names, addresses, reasons and age.
func TestControllerLogsAndDefaults(t *testing.T) {
	env := testenv.Get(t)
	admin := setupLab(t, env)

	var log logBuffer
	var got outcomes
	c, err := NewController(clientFor(t, env.AdminConfig()), ControllerOptions{Logger: log.logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	stop := runController(t, c)
	if l, want := log.waitLine(t, `msg="starting kubelet-serving CSR approver"`), " workers=2 dryRun=false spec=false"; !strings.HasSuffix(l, want) {
		t.Fatalf("start line %s, want it to end in %q", l, want)
	}
	createAsNode(t, env, "k8s-lab-node-1", "log-good", nodeReq("k8s-lab-node-1", "192.168.10.24"))
	createAsNode(t, env, "k8s-lab-node-1", "log-foreign", nodeReq("k8s-lab-node-1", "192.168.10.26"))
	got.waitFor(t, "log-good", Approve, "all checks passed")
	got.waitFor(t, "log-foreign", Deny, "ip-addresses: IP address 192.168.10.26 is not node k8s-lab-node-1's")
	line := log.waitLine(t, `msg="kubelet-serving CSR approved" csr=log-good`)
	for _, want := range []string{" node=k8s-lab-node-1 ", " requester=system:node:k8s-lab-node-1 ", " decision=approved ",
		" dnsNames=k8s-lab-node-1 ", " ips=192.168.10.24 ", ` reasons="all checks passed" `, " dryRun=false ", " age="} {
		if !strings.Contains(line, want) {
			t.Errorf("decision line lacks %q: %s", want, line)
		}
	}
	log.waitLine(t, `msg="kubelet-serving CSR denied" csr=log-foreign`, "reasons=\"ip-addresses: IP address 192.168.10.26 is not node k8s-lab-node-1's")
	if err := stop(); err != nil {
		t.Fatalf("Run after cancellation: %v", err)
	}
	log.waitLine(t, `msg="stopping kubelet-serving CSR approver"`)
	if got, msg := decisionOf(t, t.Context(), admin, "log-good"); got != Approve {
		t.Errorf("log-good: API shows %s (%s)", got, msg)
	}

	// One worker, asked for, is one worker; a spec is reported.
	var log1 logBuffer
	c, err = NewController(clientFor(t, env.AdminConfig()), ControllerOptions{Workers: 1, Logger: log1.logger(), Options: Options{Inventory: corpusSpec}})
	if err != nil {
		t.Fatal(err)
	}
	stop = runController(t, c)
	if l, want := log1.waitLine(t, `msg="starting kubelet-serving CSR approver"`), " workers=1 dryRun=false spec=true"; !strings.HasSuffix(l, want) {
		t.Fatalf("start line %s, want it to end in %q", l, want)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after cancellation: %v", err)
	}
}

// TestControllerDryRun: a dry run reports and logs the decisions it would
// write and writes none.
func TestControllerDryRun(t *testing.T) {
	env := testenv.Get(t)
	admin := setupLab(t, env)
	var log logBuffer
	var got outcomes
	c, err := NewController(clientFor(t, env.AdminConfig()), ControllerOptions{DryRun: true, Workers: 1, Logger: log.logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	stop := runController(t, c)
	createAsNode(t, env, "k8s-lab-node-1", "dry-good", nodeReq("k8s-lab-node-1", "192.168.10.24"))
	createAsNode(t, env, "k8s-lab-node-1", "dry-foreign", nodeReq("k8s-lab-node-1", "192.168.10.26"))
	got.waitFor(t, "dry-good", Approve, "")
	got.waitFor(t, "dry-foreign", Deny, "ip-addresses:")
	log.waitLine(t, `msg="kubelet-serving CSR approved" csr=dry-good`, " dryRun=true")
	log.waitLine(t, `msg="kubelet-serving CSR denied" csr=dry-foreign`, " dryRun=true")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dry-good", "dry-foreign"} {
		if got, msg := decisionOf(t, t.Context(), admin, name); got != LeavePending {
			t.Errorf("%s: a dry run wrote %s (%s)", name, got, msg)
		}
	}
}

// TestControllerFollowsNodeAddresses: a request from a registered Node that
// has reported no InternalIP/ExternalIP yet is left pending; it is reviewed
// again, and approved, when the Node's addresses change, whether the list
// grows (Hostname, then Hostname and InternalIP) or an address is replaced
// by another in a list of the same length (Hostname, then InternalIP).
func TestControllerFollowsNodeAddresses(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	var got outcomes
	c, err := NewController(clientFor(t, env.AdminConfig()), ControllerOptions{Workers: 1, Logger: (&logBuffer{}).logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)

	for _, tc := range []struct {
		node, ip string
		after    func(node, ip string) []corev1.NodeAddress
	}{
		{"k8s-lab-addr-1", "192.168.10.41", func(node, ip string) []corev1.NodeAddress {
			return []corev1.NodeAddress{hostname(node), internalIP(ip)}
		}},
		{"k8s-lab-addr-2", "192.168.10.42", func(_, ip string) []corev1.NodeAddress { return []corev1.NodeAddress{internalIP(ip)} }},
	} {
		name := "addr-" + tc.node
		createAsNode(t, env, tc.node, name, nodeReq(tc.node, tc.ip))
		got.waitFor(t, name, LeavePending, "node-exists: Node "+tc.node+" is not registered yet")
		// Registered with its host name only, status included in the
		// create as a kubelet registers.
		n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.node},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{hostname(tc.node)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Status.Addresses) != 1 {
			t.Fatalf("the API server stored the Node's addresses as %v, want the host name (else this test proves nothing)", n.Status.Addresses)
		}
		got.waitFor(t, name, LeavePending, "ip-addresses: IP addresses can only be checked against Node "+tc.node+"'s addresses, which it has not reported yet")
		n.Status.Addresses = tc.after(tc.node, tc.ip)
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got.waitFor(t, name, Approve, "")
		if d, msg := decisionOf(t, ctx, admin, name); d != Approve {
			t.Errorf("%s: API shows %s (%s), want approved", name, d, msg)
		}
	}
}

// TestControllerRetriesAPIErrors: an identity that may read CSRs and Nodes
// but not yet approve gets Forbidden writing the decision; the controller
// logs it, retries with backoff, and approves once the permission is
// granted.
func TestControllerRetriesAPIErrors(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	const user = "csr-controller-retry"
	grant := func(role string, rules []rbacv1.PolicyRule, verb, group, resource, subresource, name string) {
		t.Helper()
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The authorizer learns of the binding from its informer: wait
		// (30 s at most) until it allows what the role grants.
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: subresource, Name: name}}}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed, err
		}); err != nil {
			t.Fatalf("the binding %s never took effect: %v", role, err)
		}
	}
	rules := ApproverRules()
	var read, write []rbacv1.PolicyRule
	for _, r := range rules {
		if slices.Contains(r.Verbs, "list") {
			read = append(read, r)
		} else {
			write = append(write, r)
		}
	}
	grant("test-csr-retry-read", read, "list", certv1.GroupName, "certificatesigningrequests", "", "")
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	var got outcomes
	c, err := NewController(clientFor(t, cfg), ControllerOptions{Workers: 1, Logger: log.logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)
	createAsNode(t, env, "k8s-lab-node-1", "retry-good", nodeReq("k8s-lab-node-1", "192.168.10.24"))
	line := log.waitLine(t, `msg="will retry CertificateSigningRequest" csr=retry-good`)
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "forbidden") || !strings.Contains(line, "writing Approved condition to CertificateSigningRequest retry-good") {
		t.Errorf("retry line %s: want a warning with the API's Forbidden", line)
	}
	if d, msg := decisionOf(t, ctx, admin, "retry-good"); d != LeavePending {
		t.Fatalf("retry-good decided (%s %s) without the permission to", d, msg)
	}
	grant("test-csr-retry-write", write, "update", certv1.GroupName, "certificatesigningrequests", "approval", "")
	got.waitFor(t, "retry-good", Approve, "")
	if d, msg := decisionOf(t, ctx, admin, "retry-good"); d != Approve {
		t.Fatalf("after the permission was granted: API shows %s (%s), want approved", d, msg)
	}
}

// TestControllerStopsWhileCachesSync: cancelled while its informers cannot
// list (the API server goes away after the start-up checks), Run returns
// nil, as after any cancellation, not a sync error.
func TestControllerStopsWhileCachesSync(t *testing.T) {
	env := testenv.Get(t)
	setupLab(t, env)
	cfg := env.AdminConfig()
	refused := make(chan string, 100)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			// The start-up checks list one item (and get the API
			// server's names); the informers list and watch the
			// collections without that limit.
			collection := strings.HasSuffix(r.URL.Path, "/nodes") || strings.HasSuffix(r.URL.Path, "/certificatesigningrequests")
			if collection && r.URL.Query().Get("limit") != "1" {
				select {
				case refused <- r.URL.Path:
				default:
				}
				return nil, errors.New("test: the informers' requests are refused")
			}
			return rt.RoundTrip(r)
		})
	}
	var log logBuffer
	c, err := NewController(clientFor(t, cfg), ControllerOptions{Workers: 1, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	stop := runController(t, c)
	select {
	case <-refused:
	case <-time.After(30 * time.Second):
		t.Fatal("the informers made no request within 30s")
	}
	log.waitLine(t, `msg="starting kubelet-serving CSR approver"`)
	if err := stop(); err != nil {
		t.Fatalf("Run cancelled while its caches sync: %v, want nil", err)
	}
	if l := log.lines("stopping"); len(l) != 0 {
		t.Errorf("the workers never started, yet: %s", l)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestControllerLogsPendingOncePerReasons: a request left pending is
// reported once, not again each time it is looked at for the same reasons
// (here: its labels change); deleted and created again under the same name,
// it is a new request and reported again. A request that one worker takes
// after it is the barrier: once that one is decided, the other was looked at.
func TestControllerLogsPendingOncePerReasons(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	var got outcomes
	c, err := NewController(clientFor(t, env.AdminConfig()), ControllerOptions{Workers: 1, Logger: (&logBuffer{}).logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)
	const node, name = "k8s-lab-gone-1", "pending-once"
	pending := func() int {
		got.mu.Lock()
		defer got.mu.Unlock()
		n := 0
		for _, o := range got.all {
			if o.Name == name && o.Decision == LeavePending {
				n++
			}
		}
		return n
	}
	barrier := func(b string) {
		t.Helper()
		createAsNode(t, env, "k8s-lab-node-1", b, nodeReq("k8s-lab-node-1", "192.168.10.24"))
		got.waitFor(t, b, Approve, "")
	}

	createAsNode(t, env, node, name, nodeReq(node, "192.168.10.51"))
	got.waitFor(t, name, LeavePending, "node-exists: Node "+node+" is not registered yet")
	cur, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels = map[string]string{"touched": "yes"}
	if _, err := csrs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	barrier("pending-once-barrier-1")
	if n := pending(); n != 1 {
		t.Fatalf("reported left pending %d times for the same reasons, want once", n)
	}

	if err := csrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createAsNode(t, env, node, name, nodeReq(node, "192.168.10.51"))
	barrier("pending-once-barrier-2")
	if n := pending(); n != 2 {
		t.Fatalf("reported left pending %d times after it was created again, want twice", n)
	}
}

// TestControllerConflictIsNotAnError: when the CSR changes between the
// controller's read and its write (here: a label set just before the
// controller's first approval reaches the API server), the write conflicts;
// the controller does not warn or back off but reviews the newer object the
// informer delivers, and approves it.
func TestControllerConflictIsNotAnError(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin := setupLab(t, env)
	const name = "conflict-watch"
	var mu sync.Mutex
	var statuses []int
	cfg := env.AdminConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/certificatesigningrequests/"+name+"/approval") {
				return rt.RoundTrip(r)
			}
			mu.Lock()
			first := len(statuses) == 0
			mu.Unlock()
			if first {
				cur, err := admin.CertificatesV1().CertificateSigningRequests().Get(r.Context(), name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				cur.Labels = map[string]string{"touched": "yes"}
				if _, err := admin.CertificatesV1().CertificateSigningRequests().Update(r.Context(), cur, metav1.UpdateOptions{}); err != nil {
					return nil, err
				}
			}
			resp, err := rt.RoundTrip(r)
			if err == nil {
				mu.Lock()
				statuses = append(statuses, resp.StatusCode)
				mu.Unlock()
			}
			return resp, err
		})
	}
	var log logBuffer
	var got outcomes
	c, err := NewController(clientFor(t, cfg), ControllerOptions{Workers: 1, Logger: log.logger(), OnDecision: got.record})
	if err != nil {
		t.Fatal(err)
	}
	stop := runController(t, c)
	createAsNode(t, env, "k8s-lab-node-1", name, nodeReq("k8s-lab-node-1", "192.168.10.24"))
	got.waitFor(t, name, Approve, "")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(statuses) != 2 || statuses[0] != http.StatusConflict || statuses[1] != http.StatusOK {
		t.Fatalf("approval writes answered %v, want a conflict, then OK (else this test proves nothing)", statuses)
	}
	if l := log.lines("will retry", "csr="+name); len(l) != 0 {
		t.Errorf("a conflict was logged as an error to retry: %s", l)
	}
	if d, msg := decisionOf(t, ctx, admin, name); d != Approve {
		t.Errorf("API shows %s (%s), want approved", d, msg)
	}
}
