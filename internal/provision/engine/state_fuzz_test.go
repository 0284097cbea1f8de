package engine

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzLoadState(f *testing.F) {
	f.Add(`{"apiVersion":"hybridctl.dev/v1alpha1","kind":"ApplyState","cluster":"lab","hosts":{"a":{"preflight":{"finishedAt":"2026-11-29T00:00:00Z","alreadyInPlace":true}}}}`)
	f.Add(`{"apiVersion":"hybridctl.dev/v1alpha1","kind":"ApplyState","cluster":"lab","hosts":null}`)
	f.Add(`{"hosts":{"a":null}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, data string) {
		p := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadState(p, "lab")
		if err != nil {
			return
		}
		// A loaded state is usable.
		_ = st.Done("a", "preflight")
		st.Record("a", "x", PhaseRecord{})
		_ = st.Finished("a")
	})
}
