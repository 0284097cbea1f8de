package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What render writes passes hybridctl's own checks without a single
// finding, info included: the tool agrees with itself.
func TestRenderedOutputLintsClean(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if r := run(t, "", "render", "-f", lab, "-o", out, "--csr-approver-image", "registry.example.com/hybridctl:v1"); r.code != 0 {
		t.Fatalf("render: exit %d: %s", r.code, r.stderr)
	}
	r := run(t, "", "lint", out)
	if r.code != 0 || !strings.Contains(r.stdout, "No problems found.\n0 errors, 0 warnings, 0 info") {
		t.Errorf("lint of the rendered lab: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A value that is not an image reference is a usage error naming the flag
// and the value; nothing is written.
func TestRenderRejectsBadApproverImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	bad := "{\n  \"prefix\": \"192.168.10.1:5000\"\n}/hybridctl-lab/hybridctl:lab"
	r := run(t, "", "render", "-f", lab, "-o", out, "--csr-approver-image", bad)
	if r.code != 2 || !strings.Contains(r.stderr, `--csr-approver-image: "{\n  \"prefix\"`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("render wrote %s: %v", out, err)
	}
}
