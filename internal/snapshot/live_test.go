package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// One control plane for the package's live tests, loaded with the guide's
// lab (every kind the loader lists has objects there).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Lab: true})
}

// liveKinds is every kind LoadLive can list.
var liveKinds = []Kind{
	KindNode, KindNamespace, KindPod, KindService, KindConfigMap, KindDaemonSet, KindDeployment,
	KindStatefulSet, KindReplicaSet, KindJob, KindCronJob, KindRuntimeClass, KindCSR, KindInstallation,
	KindTigeraStatus, KindIPPool, KindIPAMConfiguration, KindFelixConfiguration, KindClusterConfiguration,
}

// errReadPastBookmark is what a recorded watch body returns when the client
// asks for more after the k8s.io/initial-events-end bookmark: a client
// that does not stop there would otherwise wait for the server's timeout.
var errReadPastBookmark = errors.New("test: read past the initial-events-end bookmark")

// request is one API request the loader made, as the transport saw it.
type request struct {
	path   string
	watch  bool   // watch=true (the watch-list stream); else a LIST
	rv     string // the resourceVersion parameter
	proto  bool   // answered in protobuf (Content-Type)
	status int
	body   *watchBody // the stream, for a watch answered 200
}

func (r request) String() string {
	verb := "list"
	switch {
	case r.watch:
		verb = "watch"
	case r.proto:
		verb = "list-protobuf"
	}
	if r.rv != "" {
		return fmt.Sprintf("%s %s?resourceVersion=%s %d", verb, r.path, r.rv, r.status)
	}
	return fmt.Sprintf("%s %s %d", verb, r.path, r.status)
}

// recorder sits between client-go and the real API server: it records
// every request and hands the loader each watch stream's events one JSON
// line at a time, so it knows exactly which events the client consumed.
type recorder struct {
	// jsonOnly: paths whose requests are sent accepting JSON only, as
	// to a server without protobuf.
	jsonOnly map[string]bool

	mu   sync.Mutex
	reqs []*request
}

func (rec *recorder) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if rec.jsonOnly[req.URL.Path] {
				req = req.Clone(req.Context())
				req.Header.Set("Accept", "application/json")
			}
			resp, err := rt.RoundTrip(req)
			if err != nil || req.URL.Path == "/version" {
				return resp, err
			}
			r := &request{path: req.URL.Path, watch: req.URL.Query().Get("watch") == "true", rv: req.URL.Query().Get("resourceVersion"),
				proto: strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf"), status: resp.StatusCode}
			if r.watch {
				if req.URL.Query().Get("sendInitialEvents") != "true" {
					return nil, fmt.Errorf("test: watch of %s without sendInitialEvents=true", req.URL.Path)
				}
				if resp.StatusCode == http.StatusOK {
					r.body = &watchBody{rc: resp.Body, r: bufio.NewReaderSize(resp.Body, 1<<20)}
					resp.Body = r.body
				}
			}
			rec.mu.Lock()
			rec.reqs = append(rec.reqs, r)
			rec.mu.Unlock()
			return resp, nil
		})
	}
	return cfg
}

func (rec *recorder) requests() []*request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]*request(nil), rec.reqs...)
}

func (rec *recorder) log() string {
	var b strings.Builder
	for _, r := range rec.requests() {
		fmt.Fprintln(&b, " ", r)
	}
	return b.String()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// watchBody delivers a watch stream line by line (the API server writes
// one JSON event per line) and records the events delivered in full.
type watchBody struct {
	rc  io.Closer
	r   *bufio.Reader
	cur []byte // the rest of the line being delivered
	typ string // its event type

	mu          sync.Mutex
	events      []string // types of the events delivered in full, in order
	added       int
	bookmarkEnd bool // the initial-events-end bookmark was delivered in full
	readAfter   bool // and the client asked for more
	closed      bool
}

func (w *watchBody) Read(p []byte) (int, error) {
	if len(w.cur) == 0 {
		w.mu.Lock()
		end := w.bookmarkEnd
		w.readAfter = w.readAfter || end
		w.mu.Unlock()
		if end {
			return 0, errReadPastBookmark
		}
		line, err := w.r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if jerr := json.Unmarshal(line, &ev); jerr != nil {
			return 0, fmt.Errorf("test: watch line %q: %w", line, jerr)
		}
		w.cur, w.typ = line, ev.Type
		if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
			w.typ = "END"
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	if len(bytes.TrimSpace(w.cur)) == 0 {
		// Only the newline is left: a JSON decoder has the whole event.
		w.cur = nil
		w.mu.Lock()
		w.events = append(w.events, w.typ)
		if w.typ == "ADDED" {
			w.added++
		}
		w.bookmarkEnd = w.typ == "END"
		w.mu.Unlock()
	}
	return n, nil
}

func (w *watchBody) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return w.rc.Close()
}

// check says what is wrong with a finished stream: the client must have
// consumed ADDED events only (want of them: every object of the kind),
// then the initial-events-end bookmark, then stopped reading and closed it.
func (w *watchBody) check(want int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var problems []string
	if w.readAfter {
		problems = append(problems, "the client read on after the initial-events-end bookmark")
	}
	if len(w.events) == 0 || w.events[len(w.events)-1] != "END" {
		problems = append(problems, "the last event consumed is not the initial-events-end bookmark")
	}
	for i, e := range w.events[:max(len(w.events)-1, 0)] {
		if e != "ADDED" {
			problems = append(problems, fmt.Sprintf("event %d is %s, before the bookmark", i, e))
		}
	}
	if w.added != want {
		problems = append(problems, fmt.Sprintf("%d objects streamed, the LIST has %d", w.added, want))
	}
	if !w.closed {
		problems = append(problems, "the stream was not closed")
	}
	if problems == nil {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// listCount is how many objects a plain LIST of path returns (as admin).
func listCount(t *testing.T, env *testenv.Env, path string) int {
	t.Helper()
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("LIST %s: %v", path, err)
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// sameSnapshot fails unless a and b hold the same objects.
func sameSnapshot(t *testing.T, what string, a, b *Snapshot) {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() == 0 || !bytes.Equal(ja, jb) {
		t.Fatalf("%s: %d objects, paginated LISTs %d; the snapshots differ:\n%s\n%s", what, a.Len(), b.Len(), ja, jb)
	}
}

// paginated reads kinds with one-object pages, as admin: the reference.
func paginated(t *testing.T, env *testenv.Env, kinds []Kind) *Snapshot {
	t.Helper()
	s, err := LoadLive(t.Context(), env.AdminConfig(), LiveOptions{Kinds: kinds, Read: ReadPaginated, PageSize: 1})
	if err != nil {
		t.Fatalf("paginated LoadLive: %v", err)
	}
	return s
}

// TestWatchListStreams: against the real kube-apiserver every kind is
// read as a watch-list stream, never a LIST; each stream is consumed as
// exactly the kind's objects (as many as a LIST returns) followed by the
// initial-events-end bookmark, after which the loader stops reading and
// closes it; the snapshot is the one paginated LISTs give.
func TestWatchListStreams(t *testing.T) {
	env := testenv.Get(t)
	var rec recorder
	s, err := LoadLive(t.Context(), rec.config(env.AdminConfig()), LiveOptions{Kinds: liveKinds, Read: ReadWatchList})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	streams := 0
	for _, r := range rec.requests() {
		if !r.watch || r.status != http.StatusOK {
			t.Errorf("%s: want only watch-list streams answered 200\nrequests:\n%s", r, rec.log())
			continue
		}
		streams++
		if err := r.body.check(listCount(t, env, r.path)); err != nil {
			t.Errorf("stream %s: %v", r.path, err)
		}
	}
	// Every kind but ClusterConfiguration (read from the ConfigMaps) has a
	// resource of its own; the lab serves each kind's first resource.
	if streams != len(liveKinds)-1 {
		t.Errorf("%d streams for %d kinds\nrequests:\n%s", streams, len(liveKinds)-1, rec.log())
	}
	if s.Len() < 50 || len(s.IPPools) == 0 || len(s.ClusterConfigs) != 1 || len(s.Unavailable) != 0 {
		t.Errorf("%d objects, %d IP pools, %d ClusterConfigurations, unavailable %v", s.Len(), len(s.IPPools), len(s.ClusterConfigs), s.Unavailable)
	}
	sameSnapshot(t, "watch-list", s, paginated(t, env, liveKinds))
}

// TestWatchListForbiddenFallsBack: a user who may list but not watch
// pods gets them by paginated LISTs after the watch is refused, and still
// streams nodes and namespaces, which it may watch: the refusal is for
// that kind only. Kinds are read one at a time, pods first (then Node,
// Namespace), so a loader that gave up streaming for every kind after one
// refusal would LIST the others.
func TestWatchListForbiddenFallsBack(t *testing.T) {
	env := testenv.Get(t)
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	const user = "snapshot-list-no-watch"
	bind(t, cs, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces", "nodes"}, Verbs: []string{"get", "list", "watch"}},
	})
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []Kind{KindPod, KindNode, KindNamespace}
	var rec recorder
	s, err := LoadLive(t.Context(), rec.config(cfg), LiveOptions{Kinds: kinds, Concurrency: 1, PageSize: 2, Read: ReadWatchList})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	var got []string
	for _, r := range rec.requests() {
		if len(got) == 0 || got[len(got)-1] != r.String() {
			got = append(got, r.String()) // one line for a kind's pages
		}
	}
	want := []string{
		"watch /api/v1/pods 403", "list /api/v1/pods 200",
		"watch /api/v1/nodes 200",
		"watch /api/v1/namespaces 200",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant (pages folded):\n  %s", rec.log(), strings.Join(want, "\n  "))
	}
	for _, r := range rec.requests() {
		if r.body != nil {
			if err := r.body.check(listCount(t, env, r.path)); err != nil {
				t.Errorf("stream %s: %v", r.path, err)
			}
		}
	}
	if len(s.Nodes) < 4 || len(s.Unavailable) != 0 {
		t.Errorf("%d nodes, unavailable %v", len(s.Nodes), s.Unavailable)
	}
	sameSnapshot(t, "list without watch", s, paginated(t, env, kinds))
}

// bind gives user a ClusterRole with rules, removed when the test ends.
func bind(t *testing.T, cs *kubernetes.Clientset, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{})
	})
	// The authorizer learns of the binding from its informer, which can
	// lag the create on a loaded machine: wait (30 s at most) until it
	// allows the first rule.
	r := rules[0]
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}}}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && res.Status.Allowed, err
	}); err != nil {
		t.Fatalf("the binding of %s never took effect: %v", user, err)
	}
}

// TestWatchListDisabledServer: kube-apiserver started with
// --feature-gates=WatchList=false refuses the stream; the loader asks
// once, then reads every kind with LISTs, and the snapshot is complete.
func TestWatchListDisabledServer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Lab: true, APIServerFlags: []string{"--feature-gates=WatchList=false"}})
	var rec recorder
	s, err := LoadLive(t.Context(), rec.config(env.AdminConfig()), LiveOptions{Kinds: liveKinds, Concurrency: 1, Read: ReadWatchList})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	reqs := rec.requests()
	var watches []string
	lists := map[string]bool{}
	for _, r := range reqs {
		if r.watch {
			watches = append(watches, r.String())
		} else if r.status == http.StatusOK {
			lists[r.path] = true
		}
	}
	if len(watches) != 1 || reqs[0].body != nil || reqs[0].status < 400 {
		t.Fatalf("want one refused watch-list request, first; requests:\n%s", rec.log())
	}
	if len(lists) != len(liveKinds)-1 {
		t.Errorf("%d resources listed for %d kinds\nrequests:\n%s", len(lists), len(liveKinds)-1, rec.log())
	}
	if s.Len() < 50 || len(s.ClusterConfigs) != 1 || len(s.Unavailable) != 0 {
		t.Errorf("%d objects, %d ClusterConfigurations, unavailable %v", s.Len(), len(s.ClusterConfigs), s.Unavailable)
	}
	sameSnapshot(t, "WatchList=false", s, paginated(t, env, liveKinds))
}

// TestWatchListNotServedKind: on a server without the Calico and operator
// CRDs those kinds are unavailable (not served), and that 404 does not
// stop the loader from streaming the kinds read after them (Concurrency
// 1; after pods, ReplicaSets and nodes, by name: FelixConfiguration,
// IPAMConfiguration, IPPool and Installation come before Job, Namespace,
// RuntimeClass, Service and StatefulSet).
func TestWatchListNotServedKind(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	waitForKubernetesService(t, env)
	var rec recorder
	s, err := LoadLive(t.Context(), rec.config(env.AdminConfig()), LiveOptions{Kinds: liveKinds, Concurrency: 1, Read: ReadWatchList})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	var notServed []string
	for _, r := range rec.requests() {
		switch {
		case r.watch && r.status == http.StatusOK:
			if err := r.body.check(listCount(t, env, r.path)); err != nil {
				t.Errorf("stream %s: %v", r.path, err)
			}
		case r.watch && r.status == http.StatusNotFound:
			notServed = append(notServed, r.path)
		default:
			t.Errorf("%s: want only watch-list streams and 404s\nrequests:\n%s", r, rec.log())
		}
	}
	var unavailable []string
	for k := range s.Unavailable {
		unavailable = append(unavailable, string(k))
	}
	sort.Strings(unavailable)
	want := "FelixConfiguration IPAMConfiguration IPPool Installation TigeraStatus"
	if strings.Join(unavailable, " ") != want {
		t.Errorf("unavailable %v, want %s", s.Unavailable, want)
	}
	// Two resources each for the three Calico kinds, one for the two
	// operator kinds.
	if len(notServed) != 8 {
		t.Errorf("%d watches answered 404, want 8: %v", len(notServed), notServed)
	}
	sameSnapshot(t, "without CRDs", s, paginated(t, env, liveKinds))
}

// waitForKubernetesService waits for default/kubernetes, which the server
// creates shortly after it is ready: a read made before it would miss it
// and the LISTs made after to compare would find it.
func waitForKubernetesService(t *testing.T, env *testenv.Env) {
	t.Helper()
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the kubernetes Service never appeared: %v", err)
	}
}

// TestCachedListDefault: by default every kind is read with one LIST from
// the watch cache (resourceVersion=0), never a watch or a page: pods
// answered in protobuf, the rest in JSON; the snapshot is the one
// paginated JSON LISTs give, so the protobuf pods are decoded exactly as
// the JSON ones.
func TestCachedListDefault(t *testing.T) {
	env := testenv.Get(t)
	var rec recorder
	s, err := LoadLive(t.Context(), rec.config(env.AdminConfig()), LiveOptions{Kinds: liveKinds})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	var got []string
	for _, r := range rec.requests() {
		got = append(got, r.String())
	}
	sort.Strings(got)
	// Every kind but ClusterConfiguration (read from the ConfigMaps) has a
	// resource of its own; the lab serves each kind's first resource.
	want := []string{
		"list /api/v1/configmaps?resourceVersion=0 200",
		"list /api/v1/namespaces?resourceVersion=0 200",
		"list /api/v1/nodes?resourceVersion=0 200",
		"list /api/v1/services?resourceVersion=0 200",
		"list /apis/apps/v1/daemonsets?resourceVersion=0 200",
		"list /apis/apps/v1/deployments?resourceVersion=0 200",
		"list /apis/apps/v1/replicasets?resourceVersion=0 200",
		"list /apis/apps/v1/statefulsets?resourceVersion=0 200",
		"list /apis/batch/v1/cronjobs?resourceVersion=0 200",
		"list /apis/batch/v1/jobs?resourceVersion=0 200",
		"list /apis/certificates.k8s.io/v1/certificatesigningrequests?resourceVersion=0 200",
		"list /apis/node.k8s.io/v1/runtimeclasses?resourceVersion=0 200",
		"list /apis/operator.tigera.io/v1/installations?resourceVersion=0 200",
		"list /apis/operator.tigera.io/v1/tigerastatuses?resourceVersion=0 200",
		"list /apis/projectcalico.org/v3/felixconfigurations?resourceVersion=0 200",
		"list /apis/projectcalico.org/v3/ipamconfigurations?resourceVersion=0 200",
		"list /apis/projectcalico.org/v3/ippools?resourceVersion=0 200",
		"list-protobuf /api/v1/pods?resourceVersion=0 200",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(s.Pods)+len(s.Workloads) < 20 || len(s.IPPools) == 0 || len(s.ClusterConfigs) != 1 || len(s.Unavailable) != 0 {
		t.Errorf("%d pods, %d workloads, %d IP pools, %d ClusterConfigurations, unavailable %v",
			len(s.Pods), len(s.Workloads), len(s.IPPools), len(s.ClusterConfigs), s.Unavailable)
	}
	sameSnapshot(t, "cached LISTs", s, paginated(t, env, liveKinds))
}

// TestCachedListPodsWithoutProtobuf: a server that answers the pods' LIST
// in JSON (the client here is made to accept JSON only) is asked again in
// JSON, and the pods are the same.
func TestCachedListPodsWithoutProtobuf(t *testing.T) {
	env := testenv.Get(t)
	rec := recorder{jsonOnly: map[string]bool{"/api/v1/pods": true}}
	kinds := []Kind{KindPod, KindNode}
	s, err := LoadLive(t.Context(), rec.config(env.AdminConfig()), LiveOptions{Kinds: kinds, Concurrency: 1})
	if err != nil {
		t.Fatalf("LoadLive: %v\nrequests:\n%s", err, rec.log())
	}
	want := "list /api/v1/pods?resourceVersion=0 200\nlist /api/v1/pods?resourceVersion=0 200\nlist /api/v1/nodes?resourceVersion=0 200\n"
	var got strings.Builder
	for _, r := range rec.requests() {
		fmt.Fprintln(&got, r)
	}
	if got.String() != want {
		t.Errorf("requests:\n%s\nwant:\n%s", got.String(), want)
	}
	sameSnapshot(t, "pods in JSON", s, paginated(t, env, kinds))
}

// TestCachedListForbidden: a user who may list nodes but not pods gets the
// nodes, and pods are unavailable with the API server's reason, decoded
// from its protobuf answer.
func TestCachedListForbidden(t *testing.T) {
	env := testenv.Get(t)
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	const user = "snapshot-nodes-only"
	bind(t, cs, user, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}})
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadLive(t.Context(), cfg, LiveOptions{Kinds: []Kind{KindPod, KindNode}})
	if err != nil {
		t.Fatalf("LoadLive: %v", err)
	}
	msg := s.Unavailable[KindPod]
	if !strings.HasPrefix(msg, "cannot list pods: ") || !strings.Contains(msg, `User "snapshot-nodes-only" cannot list resource "pods"`) {
		t.Errorf("pods unavailable: %q", msg)
	}
	if s.Listed[KindPod] || !s.Listed[KindNode] || len(s.Pods) != 0 {
		t.Errorf("listed %v, %d pods", s.Listed, len(s.Pods))
	}
}
