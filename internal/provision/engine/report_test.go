package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// summaryOf runs the engine and returns the summary event's counts.
func summaryOf(t *testing.T, ctx context.Context, phases []Phase, hosts []Host, opts Options) (Summary, error) {
	t.Helper()
	var sums []Summary
	opts.Reporter = ReporterFunc(func(e Event) {
		if e.Type == EventSummary {
			sums = append(sums, *e.Summary)
		}
	})
	err := newEngine(t, phases, hosts, opts).Run(ctx)
	if len(sums) != 1 {
		t.Fatalf("%d summary events, want 1", len(sums))
	}
	s := sums[0]
	s.ElapsedMS = 0
	return s, err
}

// TestSummaryCounts: the summary counts every step once, by outcome: the
// numbers the last line of `hybridctl apply` shows.
func TestSummaryCounts(t *testing.T) {
	hosts := labHosts()
	total := len(allKeys(labPhases(newRecorder()), hosts)) // 16 steps

	r := newRecorder()
	s, err := summaryOf(t, context.Background(), labPhases(r), hosts, Options{})
	if err != nil || s != (Summary{Done: total}) {
		t.Errorf("clean run: %+v (%v), want %d done", s, err, total)
	}

	// One failure blocks the three steps after it (TestOneHostFailsOthersFinish).
	r = newRecorder()
	r.fail["linux-prepare/k8s-lab-node-1"] = errors.New("apt-get failed")
	s, _ = summaryOf(t, context.Background(), labPhases(r), hosts, Options{})
	if want := (Summary{Done: total - 4, Failed: 1, Blocked: 3}); s != want {
		t.Errorf("one failure: %+v, want %+v", s, want)
	}

	// Filtered and already-in-place steps are skipped.
	r = newRecorder()
	phases := labPhases(r)
	phases[1] = &Func{Name: "linux-prepare", On: LinuxNodes, RunOnHost: r.run("linux-prepare"),
		Check: func(_ context.Context, h Host) (bool, string, error) { return h.Name != "k8s-lab-node-2", "", nil }}
	s, _ = summaryOf(t, context.Background(), phases, hosts, Options{Skip: []string{"windows-prepare"}})
	if want := (Summary{Done: total - 2, Skipped: 2}); s != want {
		t.Errorf("skips: %+v, want %+v", s, want)
	}

	// A cancel while the first of two steps runs (one at a time): the
	// second never starts.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	two := []Host{{Name: "a", Role: RoleWorker, OS: Linux}, {Name: "b", Role: RoleWorker, OS: Linux}}
	p := &Func{Name: "p", RunOnHost: func(context.Context, Host) error { cancel(); return nil }}
	s, err = summaryOf(t, ctx, []Phase{p}, two, Options{Concurrency: 1})
	if want := (Summary{Done: 1, NotRun: 1}); s != want || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %+v (%v), want %+v", s, err, want)
	}

	// A dry run counts what would run.
	s, _ = summaryOf(t, context.Background(), labPhases(newRecorder()), hosts, Options{DryRun: true, Offline: true, Only: []string{"preflight"}})
	if want := (Summary{WouldRun: 4, Skipped: total - 4, DryRun: true}); s != want {
		t.Errorf("dry run: %+v, want %+v", s, want)
	}
	// In JSON too: the steps of a dry run would run; none is done.
	var buf bytes.Buffer
	NewJSONReporter(&buf).Report(Event{Type: EventSummary, Summary: &s})
	if out := buf.String(); !strings.Contains(out, `"summary":{"done":0,"wouldRun":4,"skipped":`) || !strings.Contains(out, `"dryRun":true`) {
		t.Errorf("dry run in JSON: %s", out)
	}
}

// TestTextReporterFormat: every event type's line, the time stamp, the
// durations rounded by size, actions and command output indented, the
// summary lines.
func TestTextReporterFormat(t *testing.T) {
	var b strings.Builder
	r := NewTextReporter(&b, []Descriptor{{Name: "kubeadm-init"}}, []Host{{Name: "k8s-lab-master-1"}})
	for _, e := range []Event{
		{Type: EventStart, Phase: "kubeadm-init", Host: "k8s-lab-master-1", SinceStartMS: 240},
		{Type: EventDone, Phase: "kubeadm-init", Host: "k8s-lab-master-1", SinceStartMS: 1240, ElapsedMS: 999},
		{Type: EventDone, Phase: "kubeadm-init", Host: "k8s-lab-master-1", SinceStartMS: 61240, ElapsedMS: 41_249},
		{Type: EventDone, Phase: "kubeadm-init", Host: "k8s-lab-master-1", SinceStartMS: 123_400, ElapsedMS: 61_500},
		{Type: EventSkip, Phase: "calico", Host: "cluster", Reason: "already in place"},
		{Type: EventBlocked, Phase: "join", Host: "w", Reason: "calico did not finish on cluster"},
		{Type: EventWarning, Phase: "preflight", Host: "w", Reason: "swap is on"},
		{Type: EventProgress, Phase: "preflight", Host: "w", Reason: "waiting for deployment a/b\x1b[2J"},
		{Type: EventFail, Phase: "join", Host: "w", ElapsedMS: 1500, Error: "exit status 1", Output: "line 1\nline 2\n"},
		{Type: EventDryRun, Phase: "join", Host: "w", Actions: []string{"kubeadm join", "write /etc/x:\n  a: 1\n"}},
		{Type: EventSummary, SinceStartMS: 200_000, Summary: &Summary{Done: 5, Skipped: 4, Failed: 3, Blocked: 2, NotRun: 1, ElapsedMS: 200_000}},
		{Type: EventSummary, SinceStartMS: 900, Summary: &Summary{WouldRun: 6, Skipped: 1, ElapsedMS: 900, DryRun: true}},
	} {
		r.Report(e)
	}
	r.Verb = "reset"
	r.Report(Event{Type: EventSummary, SinceStartMS: 5000, Summary: &Summary{Done: 1, ElapsedMS: 5049}})
	want := `[    0.2s] kubeadm-init  k8s-lab-master-1  started
[    1.2s] kubeadm-init  k8s-lab-master-1  done in 999ms
[   61.2s] kubeadm-init  k8s-lab-master-1  done in 41.2s
[  123.4s] kubeadm-init  k8s-lab-master-1  done in 1m2s
[    0.0s] calico        cluster           skipped: already in place
[    0.0s] join          w                 not run: calico did not finish on cluster
[    0.0s] preflight     w                 warning: swap is on
[    0.0s] preflight     w                 waiting for deployment a/b\x1b[2J
[    0.0s] join          w                 FAILED after 1.5s: exit status 1
          | line 1
          | line 2
[    0.0s] join          w                 would:
            kubeadm join
            write /etc/x:
              a: 1
[  200.0s] applied: 5 done, 4 skipped, 3 failed, 2 blocked, 1 not run in 3m20s
[    0.9s] dry-run: 6 would run, 1 skipped, 0 failed, 0 blocked, 0 not run in 900ms; nothing was changed
[    5.0s] reset: 1 done, 0 skipped, 0 failed, 0 blocked, 0 not run in 5s
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestRedactorLimits: both sides of the two length limits. A secret of 6
// characters is redacted and one of 5 is not (too likely to match
// ordinary text); a line of a multi-line secret (a PEM key) is redacted on
// its own from 16 characters.
func TestRedactorLimits(t *testing.T) {
	var r Redactor
	r.Add(NewSecret("k9x2m7"), NewSecret("q4w8e"))
	r.Add(NewSecret("-----BEGIN KEY-----\nAbCdEfGhIjKlMnOp\nZyXwVuTsRqPoNmL\n-----END KEY-----"))
	got := r.Redact("id k9x2m7 and q4w8e; line AbCdEfGhIjKlMnOp and ZyXwVuTsRqPoNmL")
	if want := "id <redacted> and q4w8e; line <redacted> and ZyXwVuTsRqPoNmL"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// The longest secret is replaced first: a secret that contains a
	// shorter one is not left half-redacted.
	var r2 Redactor
	r2.Add(NewSecret("abcdef"), NewSecret("abcdef.0123456789abcdef"))
	if got := r2.Redact("token abcdef.0123456789abcdef"); got != "token <redacted>" {
		t.Errorf("nested secrets: %q", got)
	}
	// Secrets that overlap in the text are redacted together, whatever
	// their lengths and order: no part of either stays visible.
	var r3 Redactor
	r3.Add(NewSecret("AAAABBBB"), NewSecret("BBBBCCCC"), NewSecret("CCDDDDDDDD"), NewSecret("xyzxyz"))
	for in, want := range map[string]string{
		"a AAAABBBBCCCC b":         "a <redacted> b", // same length, overlapping
		"a AAAABBBBCCCCDDDDDDDD b": "a <redacted> b", // a chain of three, one longer
		"a AAAABBBB BBBBCCCC b":    "a <redacted> <redacted> b",
		"AAAABBBBBBBBCCCC":         "<redacted><redacted>", // adjacent, not overlapping: two markers
		"xyzxyzxyz!":               "<redacted>!",          // a secret overlapping itself
		"nothing here":             "nothing here",
	} {
		if got := r3.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPhaseTable: where each selector runs, as apply --help and
// docs/apply.md name it, and the help text wrapped at 76 columns.
func TestPhaseTable(t *testing.T) {
	cpAndWindows := func(hs []Host) []Host {
		return append(ControlPlanes(hs), WindowsNodes(hs)...)
	}
	none := func([]Host) []Host { return nil }
	workers := func(hs []Host) []Host { return append(LinuxWorkers(hs), WindowsNodes(hs)...) }
	phases := []Descriptor{
		{Name: "a", Does: strings.Repeat("word ", 20) + "end"},
		{Name: "b", Targets: LinuxNodes, After: []string{"a"}},
		{Name: "c", Targets: ControlPlanes, After: []string{"a", "b"}},
		{Name: "d", Targets: LinuxWorkers},
		{Name: "e", Targets: WindowsNodes, Does: "x | y"},
		{Name: "f", Targets: workers},
		{Name: "g", Targets: ClusterWide},
		{Name: "h", Targets: none},
		{Name: "i", Targets: cpAndWindows},
		{Name: "j", Targets: LinuxNodes, RunsOn: "Linux nodes, with a bundle"},
	}
	var got []string
	for _, r := range Table(phases) {
		got = append(got, r.Name+"="+r.RunsOn)
	}
	want := "a=every node b=Linux nodes c=control plane d=Linux workers e=Windows nodes f=workers g=cluster h=no host i=cp, win j=Linux nodes, with a bundle"
	if strings.Join(got, " ") != want {
		t.Errorf("runs on: %s\nwant      %s", strings.Join(got, " "), want)
	}
	help := HelpText(phases[:3])
	wantHelp := "   1. a (every node)\n" +
		"      word word word word word word word word word word word word word word\n" +
		"      word word word word word word end\n" +
		"   2. b (Linux nodes), after a everywhere\n" +
		"   3. c (control plane), after a and b everywhere\n"
	if help != wantHelp {
		t.Errorf("help:\n%s\nwant:\n%s", help, wantHelp)
	}
	md := Markdown(phases[2:5])
	wantMD := "| # | phase | runs on | waits for (gate) | what it does |\n|---|---|---|---|---|\n" +
		"| 1 | `c` | control plane | `a`, `b` |  |\n" +
		"| 2 | `d` | Linux workers |  |  |\n" +
		"| 3 | `e` | Windows nodes |  | x \\| y |\n"
	if md != wantMD {
		t.Errorf("markdown:\n%s\nwant:\n%s", md, wantMD)
	}
	// A word that ends exactly at the width stays on its line; one more
	// character moves it to the next.
	for _, c := range []struct {
		width int
		want  string
	}{
		{11, "  aaaa bbbb\n  cc"},
		{10, "  aaaa\n  bbbb cc"},
	} {
		if got := wrapText("aaaa bbbb cc", c.width, "  "); got != c.want {
			t.Errorf("width %d: %q, want %q", c.width, got, c.want)
		}
	}
}
