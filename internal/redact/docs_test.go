package redact

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/node.md's table of redactions from Rules")

const (
	docsBegin = "<!-- redactions:begin -->\n"
	docsEnd   = "<!-- redactions:end -->"
)

// TestDocs fails when docs/node.md's table of redactions is not the one
// generated from Rules; -update rewrites it.
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
		t.Fatalf("%s is stale: run go test ./internal/redact -run TestDocs -update", path)
	}
}
