package procedure

import (
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// mustPhases binds the apply procedure to d, failing the test on a
// missing dependency.
func mustPhases(t testing.TB, d Deps) []engine.Phase {
	t.Helper()
	phases, err := Phases(d)
	if err != nil {
		t.Fatal(err)
	}
	return phases
}

// mustResetPhases binds the reset procedure to d.
func mustResetPhases(t testing.TB, d Deps) []engine.Phase {
	t.Helper()
	phases, err := ResetPhases(d)
	if err != nil {
		t.Fatal(err)
	}
	return phases
}

// withReboot is d with a reboot timeout.
func withReboot(d Deps, timeout time.Duration) Deps {
	d.RebootTimeout = timeout
	return d
}

// title is a phase's name.
func title(p engine.Phase) string { return p.Describe().Name }
