package explain

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/diagnose"
	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/spec"
)

func entries(t *testing.T) []finding.Entry {
	t.Helper()
	es, err := Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// emitted is every ID a finding, diagnostic, skipped check or test result
// of hybridctl can carry, read from the lists the emitters report from
// (not from the catalogues' documentation), with its catalogue.
func emitted(t *testing.T) map[string]string {
	t.Helper()
	ids := map[string]string{}
	add := func(id, catalogue string) {
		if prev, ok := ids[id]; ok && prev != catalogue {
			t.Errorf("ID %s is emitted by the %s and the %s", id, prev, catalogue)
		}
		ids[id] = catalogue
	}
	for _, c := range checks.All() {
		add(c.ID, CatalogueChecks)
	}
	add(report.InputRuleID, CatalogueChecks)
	for _, r := range spec.Rules() {
		add(r.ID, CatalogueSpec)
	}
	// What the loader and the rules really report, over every spec fixture.
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("..", "spec", "testdata", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("spec fixtures in %s: %v (%d files)", dir, err, len(files))
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range spec.Parse(f, data).Diagnostics {
				add(d.Rule, CatalogueSpec)
			}
		}
	}
	for _, c := range diagnose.Checks() {
		add(c.ID, CatalogueDiagnose)
	}
	for _, n := range preflight.Names() {
		add(n, CataloguePreflight)
	}
	for _, c := range csr.Checks() {
		add(c.Name, CatalogueCSR)
	}
	for _, tc := range connectivity.Tests() {
		add(tc.Name, CatalogueConnectivity)
	}
	return ids
}

// TestEveryEmittedIDIsExplainable: each ID any catalogue can emit has
// exactly one entry, in its own catalogue, that says at least what it
// checks and where it shows; the catalogues that document why and how to
// fix do so for every entry.
func TestEveryEmittedIDIsExplainable(t *testing.T) {
	es := entries(t)
	ids := emitted(t)
	if len(ids) < 80 {
		t.Fatalf("only %d IDs found: a catalogue is missing", len(ids))
	}
	for id, catalogue := range ids {
		got, err := Lookup(es, id)
		if err != nil {
			t.Errorf("explain %s: %v", id, err)
			continue
		}
		if got[0].ID != id || got[0].Catalogue != catalogue {
			t.Errorf("explain %s: first entry is %s of the %s, want the %s", id, got[0].ID, got[0].Catalogue, catalogue)
		}
		e := got[0]
		if strings.TrimSpace(e.What) == "" || e.Command == "" {
			t.Errorf("%s: no what or command: %+v", id, e)
		}
		switch catalogue {
		case CatalogueChecks, CatalogueDiagnose:
			if e.Why == "" || e.Fix == "" || e.Severity == "" {
				t.Errorf("%s: why, fix or severity missing: %+v", id, e)
			}
		case CataloguePreflight:
			if e.Fix == "" || e.Runs == "" || e.Severity == "" {
				t.Errorf("%s: fix, runs or severity missing: %+v", id, e)
			}
		case CatalogueConnectivity:
			if e.Fix == "" || e.Requires == "" {
				t.Errorf("%s: fix or requires missing: %+v", id, e)
			}
		}
	}
	// And nothing explainable that no catalogue emits.
	for _, e := range es {
		if _, ok := ids[e.ID]; !ok {
			t.Errorf("entry %s (%s) is emitted by no catalogue", e.ID, e.Catalogue)
		}
	}
}

// TestIDsUnique: an ID names one entry across every catalogue (case
// ignored), and a name is unique within its catalogue.
func TestIDsUnique(t *testing.T) {
	seen := map[string]finding.Entry{}
	names := map[string]bool{}
	for _, e := range entries(t) {
		k := strings.ToLower(e.ID)
		if prev, ok := seen[k]; ok {
			t.Errorf("ID %s is both the %s's and the %s's", e.ID, prev.Catalogue, e.Catalogue)
		}
		seen[k] = e
		if e.Name != "" {
			n := e.Catalogue + "/" + e.Name
			if names[n] {
				t.Errorf("name %s twice in the %s", e.Name, e.Catalogue)
			}
			names[n] = true
		}
	}
}

func TestLookup(t *testing.T) {
	es := entries(t)
	for _, c := range []struct {
		ref  string
		want []string // IDs, in order
	}{
		{"HC101", []string{"HC101"}},
		{"hc101", []string{"HC101"}},
		{" S102 ", []string{"S102"}},
		{"daemonset-os-selector", []string{"HC101"}},
		{"HC000", []string{"HC000"}},
		{"input-document", []string{"HC000"}},
		{"node-services", []string{"HC501"}},
		{"swap", []string{"swap"}},
		{"signer", []string{"signer"}},
		{"dns-fqdn", []string{"dns-fqdn"}},
		// A preflight check's ID that is a node check's name: the ID first.
		{"clock-skew", []string{"clock-skew", "HC505"}},
		// A CSR check's ID that is a spec rule's name.
		{"dns-names", []string{"dns-names", "S107"}},
	} {
		got, err := Lookup(es, c.ref)
		if err != nil {
			t.Errorf("Lookup(%q): %v", c.ref, err)
			continue
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if strings.Join(ids, ",") != strings.Join(c.want, ",") {
			t.Errorf("Lookup(%q) = %v, want %v", c.ref, ids, c.want)
		}
	}
	if got, err := Lookup(es, "ALL"); err != nil || len(got) != len(es) {
		t.Errorf("Lookup(all) = %d entries, %v; want %d", len(got), err, len(es))
	}
	for _, c := range []struct{ ref, suggestion string }{
		{"HC1O1", "HC101"},
		{"nodeservices", "node-services"},
		{"clok-skew", "clock-skew"},
		{"daemonset-os-selectr", "daemonset-os-selector"},
		{"zzzzzzzzzzzz", ""},
		{"", ""},
	} {
		_, err := Lookup(es, c.ref)
		var ue *UnknownError
		if !errors.As(err, &ue) {
			t.Errorf("Lookup(%q): %v, want an UnknownError", c.ref, err)
			continue
		}
		if ue.Suggestion != c.suggestion {
			t.Errorf("Lookup(%q) suggests %q, want %q", c.ref, ue.Suggestion, c.suggestion)
		}
		if c.suggestion != "" && !strings.Contains(err.Error(), `did you mean "`+c.suggestion+`"?`) {
			t.Errorf("Lookup(%q): %v", c.ref, err)
		}
	}
}

// TestWrite: the text shows every documented part; JSON is a list of the
// entries (never null) that reads back equal.
func TestWrite(t *testing.T) {
	es := entries(t)
	got, err := Lookup(es, "HC505")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, "table", got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HC505 clock-skew (error) · node checks (hybridctl node diagnose)\n", "\nWhy:\n  kubeadm", "\nFix:\n  Linux: timedatectl", "\nGuide:\n  If the node is NotReady"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Write(&b, "json", es); err != nil {
		t.Fatal(err)
	}
	var back []finding.Entry
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(es) || back[0] != es[0] || back[len(es)-1] != es[len(es)-1] {
		t.Errorf("JSON round trip: %d entries, want %d", len(back), len(es))
	}
	b.Reset()
	if err := Write(&b, "json", nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("JSON of nothing = %q, %v; want []", b.String(), err)
	}
	if err := Write(&b, "yaml", es); err == nil || !strings.Contains(err.Error(), "table, json") {
		t.Errorf("unknown format: %v", err)
	}
	b.Reset()
	if err := WriteList(&b, "table", es); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(es)+1 || !strings.HasPrefix(lines[0], "ID ") {
		t.Errorf("list: %d lines for %d entries", len(lines), len(es))
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "..."},
		{"abcdef", 5, "ab..."},
		{"a  b\n c", 10, "a b c"},
		{"ééééé", 4, "é..."},
	} {
		if got := shorten(c.in, c.n); got != c.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
