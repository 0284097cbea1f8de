package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// labHosts is the guide's lab: one control plane, two Linux workers, one
// Windows worker.
func labHosts() []Host {
	return []Host{
		{Name: "k8s-lab-master-1", Role: RoleControlPlane, OS: Linux},
		{Name: "k8s-lab-node-1", Role: RoleWorker, OS: Linux},
		{Name: "k8s-lab-node-2", Role: RoleWorker, OS: Linux},
		{Name: "k8s-lab-win-1", Role: RoleWorker, OS: Windows},
	}
}

// recorder records which steps ran, in which order, and can inject
// failures and blocking.
type recorder struct {
	mu      sync.Mutex
	seq     int
	started map[string]int // "phase/host" -> sequence number at start
	ended   map[string]int
	runs    map[string]int
	active  int
	maxAct  int
	fail    map[string]error // "phase/host" -> error returned once
	delay   time.Duration
	hook    func(ctx context.Context, key string) error
}

func newRecorder() *recorder {
	return &recorder{started: map[string]int{}, ended: map[string]int{}, runs: map[string]int{}, fail: map[string]error{}}
}

func (r *recorder) run(phase string) func(ctx context.Context, h Host) error {
	return func(ctx context.Context, h Host) error {
		key := phase + "/" + h.Name
		r.mu.Lock()
		r.seq++
		r.started[key] = r.seq
		r.runs[key]++
		r.active++
		r.maxAct = max(r.maxAct, r.active)
		ferr := r.fail[key]
		delete(r.fail, key)
		hook := r.hook
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.active--
			r.seq++
			r.ended[key] = r.seq
			r.mu.Unlock()
		}()
		if r.delay > 0 {
			select {
			case <-time.After(r.delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if hook != nil {
			if err := hook(ctx, key); err != nil {
				return err
			}
		}
		return ferr
	}
}

// labPhases is a skeleton of the guide's procedure with the recorder as
// every phase's body.
func labPhases(r *recorder) []Phase {
	p := func(name string, on func([]Host) []Host, after ...string) Phase {
		return &Func{Name: name, On: on, After: after, RunOnHost: r.run(name)}
	}
	return []Phase{
		p("preflight", Nodes),
		p("linux-prepare", LinuxNodes),
		p("windows-prepare", WindowsNodes),
		p("kubeadm-init", ControlPlanes),
		p("calico", ClusterWide, "kubeadm-init"),
		p("calico-windows-ready", ClusterWide),
		p("join-linux", LinuxWorkers, "calico"),
		p("approve-linux-csrs", ClusterWide, "join-linux"),
		p("join-windows", WindowsNodes, "calico-windows-ready"),
		p("final-doctor", ClusterWide, "join-windows"),
	}
}

func allKeys(phases []Phase, hosts []Host) []string {
	var keys []string
	for _, p := range phases {
		for _, h := range targetsOf(p, hosts) {
			keys = append(keys, name(p)+"/"+h.Name)
		}
	}
	return keys
}

func newEngine(t *testing.T, phases []Phase, hosts []Host, opts Options) *Engine {
	t.Helper()
	e, err := New(phases, hosts, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestOrdering(t *testing.T) {
	r := newRecorder()
	// The two Linux workers' join must overlap: each waits (bounded) until
	// the other has started. Sequential execution would time out.
	var wg sync.WaitGroup
	wg.Add(2)
	r.hook = func(ctx context.Context, key string) error {
		if !strings.HasPrefix(key, "join-linux/") {
			return nil
		}
		wg.Done()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the Linux workers did not join in parallel")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	hosts := labHosts()
	phases := labPhases(r)
	e := newEngine(t, phases, hosts, Options{Cluster: "lab"})
	if err := e.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, k := range allKeys(phases, hosts) {
		if r.runs[k] != 1 {
			t.Errorf("%s ran %d times, want 1", k, r.runs[k])
		}
	}
	before := func(a, b string) {
		t.Helper()
		if r.ended[a] == 0 || r.started[b] == 0 || r.ended[a] > r.started[b] {
			t.Errorf("%s (ended #%d) must finish before %s (started #%d)", a, r.ended[a], b, r.started[b])
		}
	}
	// Per host: list order.
	before("preflight/k8s-lab-master-1", "linux-prepare/k8s-lab-master-1")
	before("linux-prepare/k8s-lab-master-1", "kubeadm-init/k8s-lab-master-1")
	before("preflight/k8s-lab-win-1", "windows-prepare/k8s-lab-win-1")
	// Control plane first, then Calico, then the Linux workers.
	before("kubeadm-init/k8s-lab-master-1", "calico/cluster")
	before("calico/cluster", "join-linux/k8s-lab-node-1")
	before("calico/cluster", "join-linux/k8s-lab-node-2")
	before("join-linux/k8s-lab-node-1", "approve-linux-csrs/cluster")
	before("join-linux/k8s-lab-node-2", "approve-linux-csrs/cluster")
	// Windows after the gate.
	before("calico-windows-ready/cluster", "join-windows/k8s-lab-win-1")
	before("join-windows/k8s-lab-win-1", "final-doctor/cluster")
	// Windows preparation does not wait for the control plane.
	if r.started["windows-prepare/k8s-lab-win-1"] > r.ended["kubeadm-init/k8s-lab-master-1"] &&
		r.started["windows-prepare/k8s-lab-win-1"] > r.started["kubeadm-init/k8s-lab-master-1"] {
		// Both orders are legal; what is not legal is a dependency, which
		// the plan below checks directly.
		t.Log("windows-prepare happened to start after kubeadm-init")
	}
	for _, s := range e.steps {
		if name(s.phase) == "windows-prepare" {
			for _, d := range s.deps {
				if e.steps[d].host.Name != s.host.Name {
					t.Errorf("windows-prepare depends on %s/%s", name(e.steps[d].phase), e.steps[d].host.Name)
				}
			}
		}
	}
}

func TestConcurrencyCap(t *testing.T) {
	r := newRecorder()
	r.delay = 5 * time.Millisecond
	var hosts []Host
	for i := range 12 {
		hosts = append(hosts, Host{Name: fmt.Sprintf("w%02d", i), Role: RoleWorker, OS: Linux})
	}
	phases := []Phase{&Func{Name: "a", RunOnHost: r.run("a")}, &Func{Name: "b", RunOnHost: r.run("b")}}
	e := newEngine(t, phases, hosts, Options{Concurrency: 3})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.maxAct > 3 || r.maxAct < 2 {
		t.Errorf("max concurrent steps = %d, want 2..3 with --concurrency 3", r.maxAct)
	}
}

// TestResumeAtEveryBoundary fails each step in turn, then re-runs: the
// second run must not repeat any step that finished and must finish the
// rest, so every step succeeds exactly once over the two runs.
func TestResumeAtEveryBoundary(t *testing.T) {
	hosts := labHosts()
	keys := allKeys(labPhases(newRecorder()), hosts)
	for _, failAt := range keys {
		t.Run(strings.ReplaceAll(failAt, "/", "@"), func(t *testing.T) {
			statePath := filepath.Join(t.TempDir(), "state.json")
			r := newRecorder()
			r.fail[failAt] = errors.New("injected failure")
			phases := labPhases(r)
			err := newEngine(t, phases, hosts, Options{Cluster: "lab", StatePath: statePath}).Run(context.Background())
			pes := PhaseErrors(err)
			if len(pes) != 1 || pes[0].Phase+"/"+pes[0].Host != failAt {
				t.Fatalf("first run: want one PhaseError for %s, got %v", failAt, err)
			}
			firstRuns := maps(r.runs)
			r2 := newRecorder()
			phases2 := labPhases(r2)
			if err := newEngine(t, phases2, hosts, Options{Cluster: "lab", StatePath: statePath}).Run(context.Background()); err != nil {
				t.Fatalf("second run: %v", err)
			}
			for _, k := range keys {
				succeeded := firstRuns[k] + r2.runs[k]
				if k == failAt {
					succeeded-- // the failed attempt
				}
				if succeeded != 1 {
					t.Errorf("%s: succeeded %d times over both runs (first %d, second %d), want 1", k, succeeded, firstRuns[k], r2.runs[k])
				}
			}
			// A third run does nothing.
			r3 := newRecorder()
			if err := newEngine(t, labPhases(r3), hosts, Options{Cluster: "lab", StatePath: statePath}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(r3.runs) != 0 {
				t.Errorf("third run ran %v", r3.runs)
			}
		})
	}
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestOneHostFailsOthersFinish(t *testing.T) {
	r := newRecorder()
	r.fail["linux-prepare/k8s-lab-node-1"] = errors.New("apt-get: unable to locate package")
	var events []Event
	var mu sync.Mutex
	rep := ReporterFunc(func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() })
	// Give the failed worker's later phase a gate that others wait on, to
	// see blocks propagate across hosts too.
	phases := labPhases(r)
	err := newEngine(t, phases, labHosts(), Options{Cluster: "lab", Reporter: rep}).Run(context.Background())
	pes := PhaseErrors(err)
	if len(pes) != 1 || pes[0].Host != "k8s-lab-node-1" || pes[0].Phase != "linux-prepare" {
		t.Fatalf("want exactly the node-1 failure, got %v", err)
	}
	if !strings.Contains(err.Error(), "apt-get: unable to locate package") {
		t.Errorf("error lost the cause: %v", err)
	}
	for _, k := range []string{"join-linux/k8s-lab-node-2", "join-windows/k8s-lab-win-1", "calico/cluster", "windows-prepare/k8s-lab-win-1"} {
		if r.runs[k] != 1 {
			t.Errorf("%s should have run despite node-1 failing (ran %d)", k, r.runs[k])
		}
	}
	for _, k := range []string{"join-linux/k8s-lab-node-1", "approve-linux-csrs/cluster", "final-doctor/cluster"} {
		if r.runs[k] != 0 {
			t.Errorf("%s must not run after node-1 failed", k)
		}
	}
	var blocked []string
	for _, e := range events {
		if e.Type == EventBlocked {
			blocked = append(blocked, e.Phase+"/"+e.Host)
		}
	}
	slices.Sort(blocked)
	want := []string{"approve-linux-csrs/cluster", "final-doctor/cluster", "join-linux/k8s-lab-node-1", "kubeadm-init/k8s-lab-node-1"}
	want = slices.DeleteFunc(want, func(s string) bool { return s == "kubeadm-init/k8s-lab-node-1" }) // not a target
	if !slices.Equal(blocked, want) {
		t.Errorf("blocked = %v, want %v", blocked, want)
	}
}

func TestTwoHostsFailJoined(t *testing.T) {
	r := newRecorder()
	r.fail["preflight/k8s-lab-node-1"] = errors.New("swap is on")
	r.fail["preflight/k8s-lab-win-1"] = errors.New("build 10.0.20348, want 10.0.26100")
	err := newEngine(t, labPhases(r), labHosts(), Options{}).Run(context.Background())
	pes := PhaseErrors(err)
	hosts := []string{}
	for _, pe := range pes {
		hosts = append(hosts, pe.Host)
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"k8s-lab-node-1", "k8s-lab-win-1"}) {
		t.Fatalf("failed hosts = %v (%v)", hosts, err)
	}
	if _, ok := err.(interface{ Unwrap() []error }); !ok {
		t.Errorf("error is not an errors.Join: %T", err)
	}
}

func TestCancellation(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.json")
	r := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.hook = func(ctx context.Context, key string) error {
		if key == "kubeadm-init/k8s-lab-master-1" {
			cancel() // Ctrl-C while init runs
			<-ctx.Done()
			return fmt.Errorf("kubeadm init: %w", ctx.Err())
		}
		return nil
	}
	phases := labPhases(r)
	done := make(chan error)
	go func() {
		done <- newEngine(t, phases, labHosts(), Options{Cluster: "lab", StatePath: statePath}).Run(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if r.runs["calico/cluster"] != 0 || r.runs["join-linux/k8s-lab-node-1"] != 0 {
		t.Errorf("steps started after cancellation: %v", r.runs)
	}
	// No step may still be running: everything that started has ended.
	for k := range r.started {
		if r.ended[k] == 0 {
			t.Errorf("%s still running after Run returned", k)
		}
	}
	// Resume finishes the rest, not repeating what finished.
	first := maps(r.runs)
	r2 := newRecorder()
	if err := newEngine(t, labPhases(r2), labHosts(), Options{Cluster: "lab", StatePath: statePath}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, n := range first {
		if n > 0 && k != "kubeadm-init/k8s-lab-master-1" && r2.runs[k] > 0 {
			st, _ := LoadState(statePath, "lab")
			t.Errorf("%s ran again after resume (state %v)", k, st.Hosts)
		}
	}
	if r2.runs["kubeadm-init/k8s-lab-master-1"] != 1 || r2.runs["final-doctor/cluster"] != 1 {
		t.Errorf("resume did not finish: %v", r2.runs)
	}
}

func TestIdempotentWithoutStateFile(t *testing.T) {
	// No state file: the phases' own checks make a second run a no-op.
	var mu sync.Mutex
	applied := map[string]bool{}
	runs := 0
	mk := func(name string, on func([]Host) []Host) Phase {
		return &Func{Name: name, On: on,
			Check: func(_ context.Context, h Host) (bool, string, error) {
				mu.Lock()
				defer mu.Unlock()
				if applied[name+"/"+h.Name] {
					return false, "already in place", nil
				}
				return true, "", nil
			},
			RunOnHost: func(_ context.Context, h Host) error {
				mu.Lock()
				defer mu.Unlock()
				applied[name+"/"+h.Name] = true
				runs++
				return nil
			}}
	}
	phases := []Phase{mk("a", Nodes), mk("b", ControlPlanes), mk("c", WindowsNodes)}
	if err := newEngine(t, phases, labHosts(), Options{}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs != 6 {
		t.Fatalf("first run: %d steps, want 6", runs)
	}
	var types []EventType
	rep := ReporterFunc(func(e Event) { types = append(types, e.Type) })
	if err := newEngine(t, phases, labHosts(), Options{Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs != 6 {
		t.Errorf("second run changed something: %d steps total", runs)
	}
	for _, ty := range types {
		if ty == EventStart || ty == EventDone {
			t.Errorf("second run reported %s", ty)
		}
	}
}

func TestSkipAndOnly(t *testing.T) {
	r := newRecorder()
	phases := labPhases(r)
	e := newEngine(t, phases, labHosts(), Options{Only: []string{"preflight", "calico"}})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ran []string
	for k := range r.runs {
		ran = append(ran, k)
	}
	slices.Sort(ran)
	want := []string{"calico/cluster", "preflight/k8s-lab-master-1", "preflight/k8s-lab-node-1", "preflight/k8s-lab-node-2", "preflight/k8s-lab-win-1"}
	if !slices.Equal(ran, want) {
		t.Errorf("--only ran %v, want %v", ran, want)
	}

	r = newRecorder()
	if err := newEngine(t, labPhases(r), labHosts(), Options{Skip: []string{"windows-prepare", "calico"}}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.runs["windows-prepare/k8s-lab-win-1"] != 0 || r.runs["calico/cluster"] != 0 {
		t.Error("--skip-phases did not skip")
	}
	if r.runs["join-linux/k8s-lab-node-1"] != 1 {
		t.Error("a skipped phase must not block the phases after it")
	}

	_, err := New(labPhases(r), labHosts(), Options{Skip: []string{"calcio"}, Only: []string{"nope"}})
	if !errors.Is(err, ErrUnknownPhase) || !strings.Contains(err.Error(), `"calcio"`) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown phases: %v", err)
	}
}

func TestHostFilter(t *testing.T) {
	r := newRecorder()
	if err := newEngine(t, labPhases(r), labHosts(), Options{Hosts: []string{"k8s-lab-node-2"}}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k := range r.runs {
		if !strings.HasSuffix(k, "/k8s-lab-node-2") {
			t.Errorf("--node k8s-lab-node-2 ran %s", k)
		}
	}
	if len(r.runs) != 3 {
		t.Errorf("ran %v", r.runs)
	}
}

func TestValidation(t *testing.T) {
	noop := func(context.Context, Host) error { return nil }
	tests := []struct {
		name   string
		phases []Phase
		hosts  []Host
		want   string
	}{
		{"wait on later phase", []Phase{&Func{Name: "a", After: []string{"b"}, RunOnHost: noop}, &Func{Name: "b", RunOnHost: noop}}, labHosts(), `"a" waits for "b"`},
		{"duplicate phase", []Phase{&Func{Name: "a"}, &Func{Name: "a"}}, labHosts(), `"a" is listed twice`},
		{"bad title", []Phase{&Func{Name: "Kubeadm Init"}}, labHosts(), "not kebab-case"},
		{"duplicate host", []Phase{&Func{Name: "a"}}, append(labHosts(), labHosts()[0]), `host "k8s-lab-master-1" is listed twice`},
		{"reserved host", []Phase{&Func{Name: "a"}}, []Host{{Name: "cluster"}}, "reserved"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.phases, tc.hosts, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.json")
	st := NewState("lab")
	st.Record("k8s-lab-master-1", "preflight", PhaseRecord{FinishedAt: time.Now()})
	if err := st.Save(context.Background(), statePath); err != nil {
		t.Fatal(err)
	}
	checks := 0
	ran := false
	phases := []Phase{
		&Func{Name: "preflight", RunOnHost: func(context.Context, Host) error { ran = true; return nil },
			DryRunFn: func(_ context.Context, h Host) ([]string, error) { return []string{"check " + h.Name}, nil }},
		&Func{Name: "kubeadm-init", On: ControlPlanes,
			Check:     func(context.Context, Host) (bool, string, error) { checks++; return false, "admin.conf exists", nil },
			RunOnHost: func(context.Context, Host) error { ran = true; return nil }},
	}
	var out strings.Builder
	rep := NewTextReporter(&out, Descriptors(phases), labHosts())
	if err := newEngine(t, phases, labHosts(), Options{Cluster: "lab", StatePath: statePath, DryRun: true, Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("dry-run ran a phase")
	}
	if checks != 1 || !strings.Contains(out.String(), "skipped: admin.conf exists") || !strings.Contains(out.String(), "finished in an earlier run") {
		t.Errorf("online dry-run must honour state and checks; got checks=%d\n%s", checks, out.String())
	}
	before, _ := os.ReadFile(statePath)

	out.Reset()
	checks = 0
	if err := newEngine(t, phases, labHosts(), Options{Cluster: "lab", StatePath: statePath, DryRun: true, Offline: true, Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if checks != 0 {
		t.Error("offline dry-run called a check")
	}
	got := out.String()
	for _, h := range labHosts() {
		if !strings.Contains(got, "check "+h.Name) {
			t.Errorf("offline dry-run lacks %s (fresh machines):\n%s", h.Name, got)
		}
	}
	if !strings.Contains(got, "kubeadm-init") || strings.Contains(got, "skipped:") {
		t.Errorf("offline dry-run must show every step as for fresh machines:\n%s", got)
	}
	after, _ := os.ReadFile(statePath)
	if string(before) != string(after) {
		t.Error("dry-run changed the state file")
	}
}

func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	r := newRecorder()
	if err := newEngine(t, labPhases(r), labHosts(), Options{Cluster: "lab", StatePath: statePath}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	st, err := LoadState(statePath, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Finished("k8s-lab-win-1"); !slices.Equal(got, []string{"join-windows", "preflight", "windows-prepare"}) {
		t.Errorf("win-1 finished %v", got)
	}
	if _, err := LoadState(statePath, "other"); err == nil || !strings.Contains(err.Error(), `belongs to cluster "lab"`) {
		t.Errorf("state of another cluster: %v", err)
	}
	if err := os.WriteFile(statePath, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(statePath, "lab"); err == nil || !strings.Contains(err.Error(), statePath) {
		t.Errorf("corrupt state: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestReporters(t *testing.T) {
	r := newRecorder()
	r.fail["kubeadm-init/k8s-lab-master-1"] = &fakeCmdErr{out: "[ERROR Port-6443]: Port 6443 is in use"}
	var text, js strings.Builder
	phases := labPhases(r)
	tr := NewTextReporter(&text, Descriptors(phases), labHosts())
	jr := NewJSONReporter(&js)
	both := ReporterFunc(func(e Event) { tr.Report(e); jr.Report(e) })
	_ = newEngine(t, phases, labHosts(), Options{Reporter: both}).Run(context.Background())
	if !strings.Contains(text.String(), "| [ERROR Port-6443]: Port 6443 is in use") {
		t.Errorf("text output lacks the failed command's output:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "preflight             k8s-lab-node-2    done in") {
		t.Errorf("text lines not aligned:\n%s", text.String())
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if !strings.Contains(lines[len(lines)-1], `"type":"summary"`) {
		t.Errorf("last JSON event is not the summary: %s", lines[len(lines)-1])
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") {
			t.Errorf("not a JSON line: %q", l)
		}
	}
}

type fakeCmdErr struct{ out string }

func (e *fakeCmdErr) Error() string         { return "command failed: exit status 1" }
func (e *fakeCmdErr) CommandOutput() string { return e.out }

func TestWarnEvent(t *testing.T) {
	var got, progress []Event
	rep := ReporterFunc(func(e Event) {
		switch e.Type {
		case EventWarning:
			got = append(got, e)
		case EventProgress:
			progress = append(progress, e)
		}
	})
	phases := []Phase{&Func{Name: "a", On: ControlPlanes, RunOnHost: func(ctx context.Context, h Host) error {
		Warn(ctx, "os-version: %s is not %s", "debian", "ubuntu")
		Progress(ctx, "waiting for %s", "deployment ns/web")
		return nil
	}}}
	Warn(context.Background(), "outside the engine: ignored")
	Progress(context.Background(), "outside the engine: ignored")
	if err := newEngine(t, phases, labHosts(), Options{Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Host != "k8s-lab-master-1" || got[0].Phase != "a" || got[0].Reason != "os-version: debian is not ubuntu" {
		t.Errorf("warnings: %+v", got)
	}
	if len(progress) != 1 || progress[0].Host != "k8s-lab-master-1" || progress[0].Phase != "a" || progress[0].Reason != "waiting for deployment ns/web" {
		t.Errorf("progress: %+v", progress)
	}
}

// TestStepFinishingAfterCancelIsRecorded: a step that completes although
// the run was cancelled while it ran (Windows preparation finishing its
// last command after Ctrl-C) is recorded, and the resumed run does not
// repeat it; the step the cancellation interrupted runs again.
func TestStepFinishingAfterCancelIsRecorded(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.json")
	r := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	winStarted := make(chan struct{})
	r.hook = func(ctx context.Context, key string) error {
		switch key {
		case "windows-prepare/k8s-lab-win-1":
			close(winStarted)
			<-ctx.Done()
			return nil // it finished all the same
		case "kubeadm-init/k8s-lab-master-1":
			<-winStarted
			cancel()
			<-ctx.Done()
			return fmt.Errorf("kubeadm init: %w", ctx.Err())
		}
		return nil
	}
	err := newEngine(t, labPhases(r), labHosts(), Options{Cluster: "lab", StatePath: statePath}).Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	st, err := LoadState(statePath, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Hosts["k8s-lab-win-1"]["windows-prepare"]; !ok {
		t.Fatalf("windows-prepare finished after the cancel but was not recorded: %v", st.Hosts)
	}
	r2 := newRecorder()
	if err := newEngine(t, labPhases(r2), labHosts(), Options{Cluster: "lab", StatePath: statePath}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r2.runs["windows-prepare/k8s-lab-win-1"] != 0 {
		t.Error("windows-prepare ran again after resume")
	}
	if r2.runs["kubeadm-init/k8s-lab-master-1"] != 1 {
		t.Errorf("the interrupted kubeadm-init did not run again: %v", r2.runs)
	}
}

// TestUnknownHostSentinel: an unknown host is recognisable with errors.Is,
// not by its text.
func TestUnknownHostSentinel(t *testing.T) {
	p := &Func{Name: "p", RunOnHost: func(context.Context, Host) error { return nil }}
	_, err := New([]Phase{p}, []Host{{Name: "a", Role: RoleWorker, OS: Linux}}, Options{Cluster: "c", Hosts: []string{"nope"}})
	if !errors.Is(err, ErrUnknownHost) {
		t.Fatalf("err %v, want ErrUnknownHost", err)
	}
	// A node, in words, with the nodes there are, and the closest one to a typo.
	_, err = New([]Phase{p}, []Host{{Name: "k8s-lab-win-1", Role: RoleWorker, OS: Windows}, {Name: "a", Role: RoleWorker, OS: Linux}}, Options{Cluster: "c", Hosts: []string{"k8s-lab-wn-1", "zzzzzz"}})
	for _, want := range []string{
		`unknown node "k8s-lab-wn-1" (the spec's nodes: k8s-lab-win-1, a); did you mean "k8s-lab-win-1"?`,
		`unknown node "zzzzzz" (the spec's nodes: k8s-lab-win-1, a)` + "\n",
	} {
		if err == nil || !strings.Contains(err.Error()+"\n", want) {
			t.Errorf("err %v, want %q", err, want)
		}
	}
	_, err = New([]Phase{p}, nil, Options{Cluster: "c", Only: []string{"q"}, Skip: []string{"pp"}})
	if err == nil || !strings.Contains(err.Error(), `--skip-phases: unknown phase "pp" (phases: p); did you mean "p"?`) {
		t.Errorf("phase typo: %v", err)
	}
	if _, err := New([]Phase{p}, []Host{{Name: "a", Role: RoleWorker, OS: Linux}}, Options{Cluster: "c", Hosts: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
}
