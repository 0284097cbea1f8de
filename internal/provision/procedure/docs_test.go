package procedure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// generated replaces the text between the BEGIN and END markers of name.
func generated(doc, name, body string) (string, bool) {
	begin := "<!-- BEGIN " + name + " phases: generated, do not edit -->\n"
	end := "<!-- END " + name + " phases -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return doc, false
	}
	return doc[:i+len(begin)] + body + doc[j:], true
}

// TestDocs fails when the phase tables in docs/apply.md and
// docs/upgrade.md differ from the phase lists; -update rewrites them.
func TestDocs(t *testing.T) {
	for _, doc := range []struct {
		file   string
		tables []struct {
			name   string
			phases []engine.Descriptor
		}
	}{
		{"apply.md", []struct {
			name   string
			phases []engine.Descriptor
		}{{"apply", ApplyProcedure()}, {"reset", ResetProcedure()}}},
		{"upgrade.md", []struct {
			name   string
			phases []engine.Descriptor
		}{{"upgrade", UpgradeProcedure()}}},
	} {
		path := filepath.Join("..", "..", "..", "docs", doc.file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := string(b)
		for _, l := range doc.tables {
			var ok bool
			want, ok = generated(want, l.name, engine.Markdown(l.phases))
			if !ok {
				t.Fatalf("docs/%s has no %s phases markers", doc.file, l.name)
			}
		}
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if string(b) != want {
			t.Errorf("docs/%s's phase tables are stale: run go test ./internal/provision/procedure -run TestDocs -update", doc.file)
		}
	}
}

// TestDocsWindowsWrapper fails when the wrapper docs/apply.md shows (how
// every Windows script runs, for the dry run's "in hybridctl's PowerShell
// wrapper") differs from transport.WrapPowerShell; -update rewrites it.
func TestDocsWindowsWrapper(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "apply.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := "<!-- BEGIN windows wrapper: generated, do not edit -->\n", "<!-- END windows wrapper -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatal("docs/apply.md has no windows wrapper markers")
	}
	want := doc[:i+len(begin)] + "```powershell\n" + transport.WrapPowerShell("SCRIPT") + "```\n" + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Error("docs/apply.md's Windows wrapper is stale: run go test ./internal/provision/procedure -run TestDocsWindowsWrapper -update")
	}
}
