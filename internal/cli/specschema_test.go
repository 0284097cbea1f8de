package cli

import (
	"os"
	"testing"
)

// TestSpecSchema: `hybridctl spec schema` prints exactly the committed
// docs/cluster.schema.json (internal/spec keeps that file in step with the
// types), and takes no arguments.
func TestSpecSchema(t *testing.T) {
	want, err := os.ReadFile("../../docs/cluster.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "spec", "schema")
	if r.code != 0 || r.stdout != string(want) || r.stderr != "" {
		t.Errorf("exit %d, stdout equal to docs/cluster.schema.json: %v, stderr %q", r.code, r.stdout == string(want), r.stderr)
	}
	if r := run(t, "", "spec", "schema", "extra"); r.code != 2 {
		t.Errorf("spec schema extra: exit %d, want 2", r.code)
	}
}
