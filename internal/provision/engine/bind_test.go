package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// impl is a bound implementation with every optional capability.
type impl struct {
	mu      sync.Mutex
	active  int
	maxAct  int
	limit   int
	narrow  func([]Host) []Host
	diff    func(h Host) ([]Change, error)
	present map[string]bool // ShouldRun: false on these hosts
	delay   time.Duration
	// meet: a step waits (up to 5 s) until another runs beside it, so a
	// phase allowed to run steps at once shows it even on a loaded
	// machine, and one that may not waits the 5 s out.
	meet bool
}

func (p *impl) Run(ctx context.Context, _ Host) error {
	p.mu.Lock()
	p.active++
	p.maxAct = max(p.maxAct, p.active)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.active--; p.mu.Unlock() }()
	if p.meet {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			p.mu.Lock()
			met := p.maxAct >= 2
			p.mu.Unlock()
			if met {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (p *impl) ShouldRun(_ context.Context, h Host) (bool, string, error) {
	if p.present[h.Name] {
		return false, "in place", nil
	}
	return true, "", nil
}

func (p *impl) Limit() int { return p.limit }

func (p *impl) Narrow(hosts []Host) []Host {
	if p.narrow == nil {
		return hosts
	}
	return p.narrow(hosts)
}

// differ adds Differ to impl.
type differ struct{ *impl }

func (p differ) Diff(_ context.Context, h Host) ([]Change, error) { return p.diff(h) }

// The engine finds a bound implementation's capabilities: its Limiter caps
// the phase's steps at once below the run's cap, its Narrower narrows the
// descriptor's targets, its Skipper is asked before running.
func TestBoundCapabilities(t *testing.T) {
	serial := &impl{limit: 1, delay: 30 * time.Millisecond}
	free := &impl{delay: 30 * time.Millisecond, meet: true}
	noWindows := &impl{narrow: func(hs []Host) []Host {
		var out []Host
		for _, h := range hs {
			if h.OS != Windows {
				out = append(out, h)
			}
		}
		return out
	}, present: map[string]bool{"k8s-lab-node-2": true}}
	phases := []Phase{
		Bind(Descriptor{Name: "serial"}, serial),
		Bind(Descriptor{Name: "free"}, free),
		Bind(Descriptor{Name: "narrowed", Targets: Workers}, noWindows),
	}
	var ran []string
	var mu sync.Mutex
	rep := ReporterFunc(func(e Event) {
		if e.Type == EventDone || e.Type == EventSkip {
			mu.Lock()
			ran = append(ran, e.Phase+"/"+e.Host+"/"+string(e.Type))
			mu.Unlock()
		}
	})
	e, err := New(phases, labHosts(), Options{Reporter: rep})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if serial.maxAct != 1 {
		t.Errorf("a phase limited to 1 ran %d steps at once", serial.maxAct)
	}
	if free.maxAct < 2 {
		t.Errorf("an unlimited phase ran at most %d steps at once (4 hosts, cap 10)", free.maxAct)
	}
	joined := strings.Join(ran, " ")
	for _, want := range []string{"narrowed/k8s-lab-node-1/done", "narrowed/k8s-lab-node-2/skip"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events %s lack %s", joined, want)
		}
	}
	for _, never := range []string{"narrowed/k8s-lab-win-1", "narrowed/k8s-lab-master-1"} {
		if strings.Contains(joined, never) {
			t.Errorf("events %s include %s (narrowed away or not a target)", joined, never)
		}
	}
	if Impl(phases[0]) != serial {
		t.Error("Impl does not return the bound implementation")
	}
	f := &Func{Name: "f"}
	if Impl(f) != f {
		t.Error("Impl of an unbound phase is the phase itself")
	}
}

// Diff: a Differ's changes, "run" changes of phases whose Skipper says
// they would run, nothing for read-only phases, filtered phases or hosts
// already in place; errors name their step while the other steps' changes
// are kept; the state file is not read.
func TestDiff(t *testing.T) {
	objects := differ{&impl{diff: func(Host) ([]Change, error) {
		return []Change{{Object: "ConfigMap kube-system/x", Action: ActionUpdate, Summary: "data differs", Diff: "-a\n+b\n"}}, nil
	}}}
	prepare := &impl{present: map[string]bool{"k8s-lab-master-1": true, "k8s-lab-node-1": true}}
	broken := differ{&impl{diff: func(h Host) ([]Change, error) {
		if h.Name == "k8s-lab-node-2" {
			return nil, errors.New("no route to host")
		}
		return nil, nil
	}}}
	phases := []Phase{
		&Func{Name: "check", ReadOnly: true},
		Bind(Descriptor{Name: "prepare", Targets: LinuxNodes, Does: "prepare the node"}, prepare),
		Bind(Descriptor{Name: "drift", Targets: LinuxNodes}, broken),
		Bind(Descriptor{Name: "objects", Targets: ClusterWide}, objects),
		Bind(Descriptor{Name: "skipped", Targets: ClusterWide}, objects),
	}
	dir := t.TempDir()
	st := NewState("lab")
	for _, h := range labHosts() {
		st.Record(h.Name, "prepare", PhaseRecord{FinishedAt: time.Now()})
	}
	statePath := dir + "/state.json"
	if err := st.Save(context.Background(), statePath); err != nil {
		t.Fatal(err)
	}
	e, err := New(phases, labHosts(), Options{Cluster: "lab", StatePath: statePath, Skip: []string{"skipped"}, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := e.Diff(context.Background())
	var got []string
	for _, c := range changes {
		got = append(got, c.Phase+"/"+c.Host+"/"+c.Action+"/"+c.Object+"/"+c.Summary)
	}
	want := []string{"prepare/k8s-lab-node-2/run//prepare the node", "objects/cluster/update/ConfigMap kube-system/x/data differs"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("changes:\n%q\nwant\n%q", got, want)
	}
	pes := PhaseErrors(err)
	if len(pes) != 1 || pes[0].Phase != "drift" || pes[0].Host != "k8s-lab-node-2" || !strings.Contains(err.Error(), "no route to host") {
		t.Errorf("errors %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Diff(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled diff: %v", err)
	}
}
