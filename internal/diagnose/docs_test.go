package diagnose

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/node.md's table of checks from Checks")

const (
	docsBegin = "<!-- checks:begin -->\n"
	docsEnd   = "<!-- checks:end -->"
)

// TestDocs fails when docs/node.md's table is not the one generated from
// Checks; -update rewrites it.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "node.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q markers", path, strings.TrimSpace(docsBegin), docsEnd)
	}
	want := doc[:i+len(docsBegin)] + Markdown() + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Fatalf("%s is stale: run go test ./internal/diagnose -run TestDocs -update", path)
	}
	for _, c := range Checks() {
		if !strings.Contains(doc, "| "+c.ID+" | `"+c.Name+"` |") {
			t.Errorf("%s does not list %s %s", path, c.ID, c.Name)
		}
	}
}
