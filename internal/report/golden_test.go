package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctl/hybridctl/internal/checks"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// hostile is sample() with lint's input diagnostics and text from outside
// that holds what a terminal or an XML reader must not get raw: escape
// sequences, C1 controls, a bidirectional override, a newline.
func hostile() *checks.Result {
	r := withInput(sample())
	r.Findings[0].Message = "m1 \x1b[1A\x1b[2K erased"
	r.Findings[0].Object.Name = "ds\u202e"
	r.Findings[1].Fix = "f2\nsecond line\r"
	r.Findings[2].Source.File = "b\x9b.yaml"
	r.Skipped[0].Reason = "CRD absent \x07"
	r.Diagnostics[0].Message = "cannot parse \x1b]0;title\x07"
	return r
}

// TestGolden: every format of doctor and lint, byte for byte, for a result
// with every kind of entry and for the same result with hostile text. The
// output shapes are contracts (docs/design.md §5); a change to a golden is a
// change of contract.
func TestGolden(t *testing.T) {
	for name, r := range map[string]*checks.Result{"sample": withInput(sample()), "hostile": hostile()} {
		for _, format := range Formats() {
			var b bytes.Buffer
			if err := Write(&b, format, "lint", r, 4); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "golden", name+"."+format), b.Bytes())
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
