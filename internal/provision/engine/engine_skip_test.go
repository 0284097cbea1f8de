package engine

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestSkipReasonsAndRecords: a step whose check finds its effect in place
// is reported with the check's reason ("already in place" when it gives
// none) and recorded in the state file as already in place; a step that
// ran is recorded as run.
func TestSkipReasonsAndRecords(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.json")
	noop := func(context.Context, Host) error { return nil }
	inPlace := func(why string) func(context.Context, Host) (bool, string, error) {
		return func(context.Context, Host) (bool, string, error) { return false, why, nil }
	}
	phases := []Phase{
		&Func{Name: "silent", On: ControlPlanes, Check: inPlace(""), RunOnHost: noop},
		&Func{Name: "explained", On: ControlPlanes, Check: inPlace("admin.conf exists"), RunOnHost: noop},
		&Func{Name: "ran", On: ControlPlanes, RunOnHost: noop},
	}
	var reasons []string
	rep := ReporterFunc(func(e Event) {
		if e.Type == EventSkip {
			reasons = append(reasons, e.Phase+": "+e.Reason)
		}
	})
	if err := newEngine(t, phases, labHosts(), Options{Cluster: "lab", StatePath: statePath, Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"silent: already in place", "explained: admin.conf exists"}; !slices.Equal(reasons, want) {
		t.Errorf("skip reasons %q, want %q", reasons, want)
	}
	st, err := LoadState(statePath, "lab")
	if err != nil {
		t.Fatal(err)
	}
	recs := st.Hosts["k8s-lab-master-1"]
	for phase, want := range map[string]bool{"silent": true, "explained": true, "ran": false} {
		r, ok := recs[phase]
		if !ok || r.AlreadyInPlace != want || r.FinishedAt.IsZero() {
			t.Errorf("%s: record %+v (present %v), want alreadyInPlace %v", phase, r, ok, want)
		}
	}
}

// bare is a phase with nothing but a title and a body.
type bare struct{}

func (bare) Describe() Descriptor            { return Descriptor{Name: "bare"} }
func (bare) Run(context.Context, Host) error { return nil }

// TestDryRunWithoutDescriber: a phase that cannot describe itself is shown
// by its title.
func TestDryRunWithoutDescriber(t *testing.T) {
	var actions [][]string
	rep := ReporterFunc(func(e Event) {
		if e.Type == EventDryRun {
			actions = append(actions, e.Actions)
		}
	})
	hosts := labHosts()[:2]
	if err := newEngine(t, []Phase{bare{}}, hosts, Options{DryRun: true, Reporter: rep}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(actions) != 2 || !slices.Equal(actions[0], []string{"run phase bare"}) || !slices.Equal(actions[1], []string{"run phase bare"}) {
		t.Errorf("dry-run actions %q", actions)
	}
}
