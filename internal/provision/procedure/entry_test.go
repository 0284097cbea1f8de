package procedure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// events records what Apply reports, and the phase list it was given.
type events struct {
	mu     sync.Mutex
	phases []string
	list   []engine.Event
}

func (r *events) reporter(phases []engine.Descriptor) engine.Reporter {
	for _, p := range phases {
		r.phases = append(r.phases, p.Name)
	}
	return engine.ReporterFunc(func(e engine.Event) {
		r.mu.Lock()
		r.list = append(r.list, e)
		r.mu.Unlock()
	})
}

func (r *events) of(t engine.EventType) []engine.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.Event
	for _, e := range r.list {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// connectCounter is a Connect that fails and counts its calls.
type connectCounter struct {
	mu    sync.Mutex
	calls int
}

func (c *connectCounter) connect(context.Context, string) (*transport.Client, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return nil, errors.New("this test allows no connection")
}

func (c *connectCounter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestApplyOptionErrors: each option that cannot work is refused with
// ErrInvalidOption naming it, before anything connects, reports or writes
// the state file; the valid baseline the cases start from runs.
func TestApplyOptionErrors(t *testing.T) {
	ctx := context.Background()
	lab, labLinux := planFile(t, "lab.yaml"), planFile(t, "lab-linux.yaml")
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	var cc connectCounter
	base := func() Options {
		return Options{Plan: lab, Kubeconfig: filepath.Join(dir, "kubeconfig"), StatePath: state, DryRun: true, Connect: cc.connect}
	}
	for _, c := range []struct {
		name   string
		change func(o *Options)
		want   []string
	}{
		{"no plan", func(o *Options) { o.Plan = nil }, []string{"apply option Plan: no plan given"}},
		{"no kubeconfig", func(o *Options) { o.Kubeconfig = "" }, []string{"apply option Kubeconfig: no kubeconfig file given"}},
		{"offline without dry run", func(o *Options) { o.DryRun = false; o.Offline = true }, []string{"apply option Offline: only makes sense with DryRun"}},
		{"negative concurrency", func(o *Options) { o.Concurrency = -1 }, []string{"apply option Concurrency: -1 is negative"}},
		{"negative reboot timeout", func(o *Options) { o.RebootTimeout = -time.Second }, []string{"apply option RebootTimeout: -1s is negative"}},
		{"negative calico timeout", func(o *Options) { o.CalicoTimeout = -time.Minute }, []string{"apply option CalicoTimeout: -1m0s is negative"}},
		{"a misspelt preflight check", func(o *Options) { o.IgnorePreflight = []string{"swapp"} },
			[]string{`apply option IgnorePreflight: unknown preflight check "swapp"; did you mean "swap"?`}},
		{"all with another check", func(o *Options) { o.IgnorePreflight = []string{"all", "swap"} }, []string{"apply option IgnorePreflight: ", `"all"`}},
		{"a bundle plan without a bundle", func(o *Options) { o.Plan = labLinux },
			[]string{"apply option BundleDir: the plan's packages.source is bundle: a bundle directory is required"}},
		{"a bundle for an upstream plan", func(o *Options) { o.BundleDir = dir },
			[]string{"apply option BundleDir: a bundle directory is for packages.source bundle; the plan's packages.source is upstream"}},
		{"several at once, all named", func(o *Options) { o.Plan = nil; o.Kubeconfig = ""; o.Concurrency = -2 },
			[]string{"option Plan:", "option Kubeconfig:", "option Concurrency: -2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ev events
			o := base()
			o.Reporter = ev.reporter
			c.change(&o)
			sum, err := Apply(ctx, o)
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("err = %v, want ErrInvalidOption", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if sum != (engine.Summary{}) || len(ev.phases) > 0 || len(ev.list) > 0 {
				t.Errorf("something ran: %+v, %d phases, %d events", sum, len(ev.phases), len(ev.list))
			}
		})
	}
	// An unknown phase is the engine's error; nothing runs either.
	o := base()
	o.Only = []string{"calcio"}
	if _, err := Apply(ctx, o); !errors.Is(err, engine.ErrUnknownPhase) || errors.Is(err, ErrInvalidOption) {
		t.Errorf("--only calcio: %v", err)
	}
	if cc.n() > 0 {
		t.Errorf("%d connections for refused options", cc.n())
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state file was touched: %v", err)
	}
	// A plan that was changed after it was derived, into one that cannot
	// be rendered or used: ErrPlanNotUsable, and no option is blamed.
	broken := *lab
	broken.Nodes = slices.Clone(lab.Nodes)
	broken.Nodes[1].Address = "192.168.10.x"
	o = base()
	o.Plan = &broken
	if _, err := Apply(ctx, o); !errors.Is(err, ErrPlanNotUsable) || errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), `"192.168.10.x"`) {
		t.Errorf("a node address that is not one: %v", err)
	}
	// The baseline is valid: offline, it runs the whole procedure.
	o = base()
	o.Offline = true
	if _, err := Apply(ctx, o); err != nil {
		t.Errorf("the baseline: %v", err)
	}
}

// TestApplyDryRunOffline: the whole procedure for the guide's lab, as for
// fresh machines: every phase of Phases reported, a summary counting what
// would run, no connection and no state file.
func TestApplyDryRunOffline(t *testing.T) {
	p := labPlan(t)
	dir := t.TempDir()
	var cc connectCounter
	var ev events
	sum, err := Apply(context.Background(), Options{Plan: p, Kubeconfig: filepath.Join(dir, "kubeconfig"),
		StatePath: filepath.Join(dir, "state.json"), DryRun: true, Offline: true, Connect: cc.connect, Reporter: ev.reporter})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ph := range ApplyProcedure() {
		want = append(want, ph.Name)
	}
	if !slices.Equal(ev.phases, want) {
		t.Errorf("phases given to the reporter:\n%q\nwant\n%q", ev.phases, want)
	}
	dry := ev.of(engine.EventDryRun)
	if !sum.DryRun || sum.WouldRun != len(dry) || sum.WouldRun < 20 || sum.Done+sum.Failed+sum.Blocked+sum.NotRun != 0 {
		t.Errorf("summary %+v for %d dry-run steps", sum, len(dry))
	}
	if got := ev.of(engine.EventSummary); len(got) != 1 || *got[0].Summary != sum {
		t.Errorf("the reported summary %v is not the returned %+v", got, sum)
	}
	if cc.n() > 0 {
		t.Errorf("%d connections in an offline dry run", cc.n())
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("an offline dry run wrote %v", entries)
	}
}

// TestApplyBundle: with a bundle, bundle-upload runs on every node and the
// Calico manifests come from the bundle; a corrupted bundle stops Apply
// before any phase is even made.
func TestApplyBundle(t *testing.T) {
	p := planFile(t, "lab-linux.yaml")
	bdir, _ := testBundle(t, "lab-linux.yaml")
	dir := t.TempDir()
	var ev events
	o := Options{Plan: p, Kubeconfig: filepath.Join(dir, "kubeconfig"), DryRun: true, Offline: true,
		BundleDir: bdir, Connect: noConnect, Reporter: ev.reporter}
	if _, err := Apply(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	uploads := map[string]bool{}
	var calico string
	for _, e := range ev.of(engine.EventDryRun) {
		switch e.Phase {
		case "bundle-upload":
			uploads[e.Host] = true
		case "calico":
			calico = strings.Join(e.Actions, "\n")
		}
	}
	if len(uploads) != len(p.Nodes) {
		t.Errorf("bundle-upload on %v, want every node of %d", uploads, len(p.Nodes))
	}
	if !strings.Contains(calico, filepath.Join(bdir, "manifests")) {
		t.Errorf("calico does not read the bundle's manifests:\n%s", calico)
	}
	if err := os.WriteFile(filepath.Join(bdir, "linux-amd64", "kubelet"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ev2 events
	o.Reporter = ev2.reporter
	if _, err := Apply(context.Background(), o); !errors.Is(err, ErrBundleIncomplete) || !strings.Contains(err.Error(), "linux-amd64/kubelet") {
		t.Errorf("a corrupted bundle: %v", err)
	}
	if len(ev2.phases) > 0 {
		t.Errorf("phases made for a corrupted bundle: %q", ev2.phases)
	}
}

// sshPlan is the guide's lab with every node's SSH pointed at srv.
func sshPlan(t *testing.T, srv *sshtest.Server) *plan.Plan {
	t.Helper()
	p := labPlan(t)
	host, port, _ := strings.Cut(srv.Addr, ":")
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Nodes {
		p.Nodes[i].SSH.Host, p.Nodes[i].SSH.Port = host, n
	}
	return p
}

// TestApplyOverSSH: Apply connects with Options.SSH (its own pool):
// an unknown host key is refused on every node with nothing written; with
// AcceptNewHostKeys preflight really runs on each node, and the Windows
// stand-in (a Linux shell) fails it.
func TestApplyOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	p := sshPlan(t, srv)
	dir := t.TempDir()
	kh, state := filepath.Join(dir, "known_hosts"), filepath.Join(dir, "state.json")
	o := Options{Plan: p, Kubeconfig: filepath.Join(dir, "kubeconfig"), StatePath: state, Only: []string{"preflight"},
		SSH: SSHOptions{Identities: []string{key.Path}, KnownHosts: kh, ConnectTimeout: time.Minute}}
	sum, err := Apply(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--accept-new-host-keys") || sum.Failed != len(p.Nodes) || sum.Done != 0 {
		t.Fatalf("unknown host keys: %+v %v", sum, err)
	}
	if _, err := os.Stat(kh); !os.IsNotExist(err) {
		t.Errorf("known_hosts written without AcceptNewHostKeys: %v", err)
	}
	if n := len(srv.Commands()); n > 0 {
		t.Errorf("%d commands ran on a refused host", n)
	}

	o.SSH.AcceptNewHostKeys = true
	var ev events
	o.Reporter = ev.reporter
	sum, err = Apply(context.Background(), o)
	if len(ev.of(engine.EventStart)) != len(p.Nodes) || sum.Done+sum.Failed != len(p.Nodes) {
		t.Fatalf("preflight on %d nodes: %+v %v", len(ev.of(engine.EventStart)), sum, err)
	}
	failed := map[string]bool{}
	for _, pe := range engine.PhaseErrors(err) {
		failed[pe.Host] = true
	}
	if !failed["k8s-lab-win-1"] {
		t.Errorf("the Windows stand-in passed preflight: %v", err)
	}
	if len(srv.Commands()) < len(p.Nodes) {
		t.Errorf("commands run: %d", len(srv.Commands()))
	}
	if b, _ := os.ReadFile(kh); !strings.Contains(string(b), srv.KnownHostsLine()) {
		t.Errorf("known_hosts:\n%s", b)
	}
}

// TestApplyCanceled: canceling the context while the first step runs
// stops Apply with context.Canceled; the steps that never started are
// counted as not run, and Apply returns rather than running them.
func TestApplyCanceled(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	p := sshPlan(t, srv)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev events
	o := Options{Plan: p, Kubeconfig: filepath.Join(dir, "kubeconfig"), StatePath: filepath.Join(dir, "state.json"),
		Only: []string{"preflight"}, Concurrency: 1,
		SSH: SSHOptions{Identities: []string{key.Path}, KnownHosts: filepath.Join(dir, "known_hosts"), AcceptNewHostKeys: true},
		Reporter: func(phases []engine.Descriptor) engine.Reporter {
			r := ev.reporter(phases)
			return engine.ReporterFunc(func(e engine.Event) {
				r.Report(e)
				if e.Type == engine.EventStart {
					cancel()
				}
			})
		}}
	sum, err := Apply(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if started := len(ev.of(engine.EventStart)); started != 1 || sum.NotRun != len(p.Nodes)-1 {
		t.Errorf("%d started, summary %+v: want 1 started and %d not run", started, sum, len(p.Nodes)-1)
	}
}

// TestApplyAgainstAPIServer: Apply's kubeconfig and manifests options reach
// the API phases. calico runs alone against the real kube-apiserver through
// the context named after the cluster, with the vendored manifests; the
// state file records it and a second Apply skips it.
func TestApplyAgainstAPIServer(t *testing.T) {
	env := testenv.Get(t)
	calicoDir, err := testenv.ThirdPartyDir(t.Context(), testenv.CalicoVendored)
	if err != nil {
		t.Fatal(err)
	}
	p := labPlan(t)
	dir := t.TempDir()
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[p.Cluster] = cfg.Contexts[cfg.CurrentContext]
	delete(cfg.Contexts, cfg.CurrentContext)
	cfg.CurrentContext = ""
	kc := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := Options{Plan: p, Kubeconfig: kc, StatePath: state, Only: []string{"calico"}, ManifestsDir: calicoDir, Connect: noConnect}
	var first events
	o.Reporter = first.reporter
	sum, err := Apply(ctx, o)
	// Another test of this package may have applied Calico to the shared
	// API server already: then the phase's server-side dry run finds
	// every object in place and it is skipped, which reaches the API too.
	inPlace := false
	for _, e := range first.of(engine.EventSkip) {
		if e.Phase == "calico" && strings.Contains(e.Reason, "already as the spec wants them") {
			inPlace = sum.Done == 0
		}
	}
	if err != nil || (sum.Done != 1 && !inPlace) || sum.Failed != 0 {
		t.Fatalf("calico: %+v %v", sum, err)
	}
	o.Reporter = nil
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}).
		Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the Installation: %v", err)
	}
	if b, err := os.ReadFile(state); err != nil || !strings.Contains(string(b), `"calico"`) {
		t.Errorf("state file: %v\n%s", err, b)
	}
	var ev events
	o.Reporter = ev.reporter
	if sum, err := Apply(ctx, o); err != nil || sum.Done != 0 || sum.Failed != 0 {
		t.Errorf("second run: %+v %v", sum, err)
	}
	recorded := 0
	for _, e := range ev.of(engine.EventSkip) {
		if e.Phase == "calico" && strings.Contains(e.Reason, "earlier run") {
			recorded++
		}
	}
	if recorded != 1 {
		t.Errorf("the second run did not skip calico as recorded: %+v", ev.of(engine.EventSkip))
	}
	o.Reporter = nil
	// Without the cluster's context the phase fails, naming the file.
	o.Kubeconfig, o.StatePath = env.KubeconfigPath(), ""
	if _, err := Apply(ctx, o); err == nil || !strings.Contains(err.Error(), `has no context "`+p.Cluster+`"`) {
		t.Errorf("without the cluster's context: %v", err)
	}
}

// TestApplyTeachesCallersRedactor: the secrets a phase learns (here
// admin.conf's client key) go into the Redactor the caller passed, the one
// the CLI redacts its own output with, not into one of Apply's own.
func TestApplyTeachesCallersRedactor(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	const secret = "c2VjcmV0LWNsaWVudC1rZXktb2YtdGhlLWFkbWluLWNvbmY="
	srv.Shim("cat", "#!/bin/sh\nprintf 'apiVersion: v1\\nkind: Config\\nusers:\\n- name: admin\\n  user:\\n    client-key-data: "+secret+"\\n'\n")
	p := sshPlan(t, srv)
	dir := t.TempDir()
	red := &engine.Redactor{}
	o := Options{Plan: p, Kubeconfig: filepath.Join(dir, "kubeconfig"), StatePath: filepath.Join(dir, "state.json"),
		Only: []string{"kubeconfig"}, Redactor: red,
		SSH: SSHOptions{Identities: []string{key.Path}, KnownHosts: filepath.Join(dir, "known_hosts"), AcceptNewHostKeys: true, ConnectTimeout: time.Minute}}
	_, err := Apply(context.Background(), o)
	// The import fails (this admin.conf names no cluster); the key was
	// learned before it.
	if err == nil {
		t.Fatal("the import of a kubeconfig without a cluster succeeded")
	}
	if !slices.ContainsFunc(srv.Commands(), func(c string) bool { return strings.Contains(c, "admin.conf") }) {
		t.Fatalf("admin.conf was not read: %q", srv.Commands())
	}
	if got := red.Redact("key " + secret); strings.Contains(got, secret) {
		t.Errorf("the caller's redactor did not learn admin.conf's key: %q", got)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the key: %v", err)
	}
}
