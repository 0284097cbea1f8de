package checks_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite docs/checks.md from the catalogue")

// fixture headers:
//
//	# expect: HC101 DaemonSet monitoring/ne     (one line per expected finding)
//	# live: true                                (treat the file as a complete live listing)
//	# server-version: v1.37.2
//	# message: HC202 60 pods                      (a finding of HC202 whose message contains "60 pods")
//	# message: HC103 spec.os.name: windows$       (... whose message ends with "spec.os.name: windows")
//	# spec-node: win-1 windows worker 36         (a node of a cluster spec, cluster.yaml, at line 36)
type header struct {
	expect        []string
	messages      []string
	live          bool
	serverVersion string
	spec          *checks.Spec
}

func readHeader(t *testing.T, path string) header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h header
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# expect: "):
			h.expect = append(h.expect, strings.TrimSpace(strings.TrimPrefix(line, "# expect: ")))
		case strings.HasPrefix(line, "# message: "):
			h.messages = append(h.messages, strings.TrimPrefix(line, "# message: "))
		case line == "# live: true":
			h.live = true
		case strings.HasPrefix(line, "# server-version: "):
			h.serverVersion = strings.TrimPrefix(line, "# server-version: ")
		case strings.HasPrefix(line, "# spec-node: "):
			var n checks.SpecNode
			if _, err := fmt.Sscan(strings.TrimPrefix(line, "# spec-node: "), &n.Name, &n.OS, &n.Role, &n.Line); err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			if h.spec == nil {
				h.spec = &checks.Spec{File: "cluster.yaml"}
			}
			h.spec.Nodes = append(h.spec.Nodes, n)
		}
	}
	sort.Strings(h.expect)
	return h
}

func load(t *testing.T, path string, h header) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.LoadFiles(context.Background(), []string{path}, nil)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	for _, d := range s.Diagnostics {
		t.Errorf("fixture %s: %s", path, d)
	}
	if h.live {
		s.Live = true
		for _, k := range append(snapshot.WorkloadKinds(), snapshot.KindNode, snapshot.KindNamespace, snapshot.KindService,
			snapshot.KindConfigMap, snapshot.KindRuntimeClass, snapshot.KindCSR, snapshot.KindInstallation, snapshot.KindTigeraStatus,
			snapshot.KindIPPool, snapshot.KindIPAMConfiguration, snapshot.KindFelixConfiguration, snapshot.KindClusterConfiguration) {
			s.Listed[k] = true
		}
	}
	s.ServerVersion = h.serverVersion
	return s
}

func got(res *checks.Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, f.Check+" "+f.Object.Kind+" "+qualified(f.Object.Namespace, f.Object.Name))
	}
	sort.Strings(out)
	return out
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// TestFixtures runs every check on its failing, passing and near-miss
// fixtures (testdata/HCnnn/fail*.yaml, pass*.yaml, near*.yaml: both sides
// of the check's limit, the mistakes that look right); all checks run, and
// the findings must be exactly the ones the fixture declares, with the
// numbers its "# message:" lines name.
func TestFixtures(t *testing.T) {
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		for _, kind := range []string{"fail", "pass", "near"} {
			paths, _ := filepath.Glob(filepath.Join("testdata", d.ID, kind+"*.yaml"))
			if len(paths) == 0 {
				t.Errorf("check %s needs a testdata/%s/%s.yaml fixture", d.ID, d.ID, kind)
			}
			for _, path := range paths {
				t.Run(strings.TrimSuffix(filepath.ToSlash(path)[len("testdata/"):], ".yaml"), func(t *testing.T) {
					h := readHeader(t, path)
					if kind == "fail" {
						found := false
						for _, e := range h.expect {
							found = found || strings.HasPrefix(e, d.ID+" ")
						}
						if !found {
							t.Fatalf("%s declares no finding of %s", path, d.ID)
						}
					} else if kind == "pass" {
						for _, e := range h.expect {
							if strings.HasPrefix(e, d.ID+" ") {
								t.Fatalf("%s is the passing fixture but expects %s", path, e)
							}
						}
					}
					res, err := checks.Run(load(t, path, h), checks.Options{Spec: h.spec})
					if err != nil {
						t.Fatal(err)
					}
					g := got(res)
					if strings.Join(g, "\n") != strings.Join(h.expect, "\n") {
						var msgs []string
						for _, f := range res.Findings {
							msgs = append(msgs, f.Check+": "+f.Message)
						}
						t.Errorf("%s:\n got  %q\n want %q\nmessages:\n%s", path, g, h.expect, strings.Join(msgs, "\n"))
					}
					checkMessages(t, path, h, res)
					checkSources(t, path, res)
				})
			}
		}
	}
}

// TestCatalogue: every check in All is documented and every documented
// check is in All; IDs and names are unique and well-formed.
func TestCatalogue(t *testing.T) {
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	inAll := map[string]bool{}
	for _, c := range checks.All() {
		if inAll[c.ID] {
			t.Errorf("check %s twice in All", c.ID)
		}
		inAll[c.ID] = true
		if c.Run == nil {
			t.Errorf("check %s has no Run", c.ID)
		}
	}
	ids, names := map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		if !inAll[d.ID] {
			t.Errorf("catalogue entry %s has no check in All", d.ID)
		}
		delete(inAll, d.ID)
		if ids[d.ID] || names[d.Name] {
			t.Errorf("duplicate id or name: %s %s", d.ID, d.Name)
		}
		ids[d.ID], names[d.Name] = true, true
		if len(d.ID) != 5 || !strings.HasPrefix(d.ID, "HC") {
			t.Errorf("bad id %q", d.ID)
		}
		if d.Name != strings.ToLower(d.Name) || strings.ContainsAny(d.Name, " _") {
			t.Errorf("%s: name %q is not kebab-case", d.ID, d.Name)
		}
		if d.Severity.Rank() == 0 || d.Title == "" || d.Why == "" || d.Fix == "" || d.Guide == "" || d.Misses == "" {
			t.Errorf("%s: incomplete entry %+v", d.ID, d)
		}
	}
	for id := range inAll {
		t.Errorf("check %s in All is not in the catalogue", id)
	}
}

// TestDocs fails when docs/checks.md is stale; -update rewrites it.
func TestDocs(t *testing.T) {
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	want := checks.Markdown(docs, corpusStats(t))
	path := filepath.Join("..", "..", "docs", "checks.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/checks -run TestDocs -update)", err)
	}
	if string(b) != want {
		t.Fatalf("docs/checks.md is stale: run go test ./internal/checks -run TestDocs -update")
	}
}

// fixtureObject is the identity of one document of a fixture.
type fixtureObject struct{ kind, namespace, name string }

func readFixtureObject(text string) (fixtureObject, bool) {
	var o struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(text), &o); err != nil || o.Kind == "" {
		return fixtureObject{}, false
	}
	return fixtureObject{o.Kind, o.Metadata.Namespace, o.Metadata.Name}, true
}

// checkSources asserts that a finding about an object the fixture declares
// points at that object's document (lint prints its file and line, SARIF
// its region), not at a stand-in built by the check with no source.
func checkSources(t *testing.T, path string, res *checks.Result) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The documents as lint cuts them (each item of a List on its own),
	// by their first line.
	docAt := map[int]string{}
	declared := map[fixtureObject]bool{}
	err = manifest.Splitter{Items: true}.Split(context.Background(), bytes.NewReader(b), func(d *manifest.Document) error {
		docAt[d.Line] = string(d.Data)
		if o, ok := readFixtureObject(string(d.Data)); ok {
			declared[o] = true
			declared[fixtureObject{o.kind, "", o.name}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		want := fixtureObject{f.Object.Kind, f.Object.Namespace, f.Object.Name}
		if !declared[want] && !declared[fixtureObject{want.kind, "", want.name}] {
			continue
		}
		if f.Source.File != path || f.Source.Line < 1 {
			t.Errorf("%s: the %s finding on %s %s points at %s:%d, not at its document", path, f.Check, want.kind, qualified(want.namespace, want.name), f.Source.File, f.Source.Line)
			continue
		}
		o, ok := readFixtureObject(docAt[f.Source.Line])
		if !ok || o.kind != want.kind || o.name != want.name || (o.namespace != "" && o.namespace != want.namespace) {
			t.Errorf("%s: the %s finding on %s %s points at line %d, which declares %v", path, f.Check, want.kind, qualified(want.namespace, want.name), f.Source.Line, o)
		}
	}
}

// checkMessages asserts the fixture's "# message: HCnnn text" lines: a
// finding of that check whose message contains the text (the numbers in
// messages are part of the contract: 60 vs 61 pods, the taint, the node),
// or, when the text ends with "$", whose message ends with it (nothing
// appended: no empty list, no clause that does not apply).
func checkMessages(t *testing.T, path string, h header, res *checks.Result) {
	t.Helper()
	for _, m := range h.messages {
		id, text, ok := strings.Cut(m, " ")
		if !ok {
			t.Errorf("%s: malformed message line %q", path, m)
			continue
		}
		match := strings.Contains
		if t, ok := strings.CutSuffix(text, "$"); ok {
			text, match = t, strings.HasSuffix
		}
		found := false
		var msgs []string
		for _, f := range res.Findings {
			if f.Check == id {
				found = found || match(f.Message, text)
				msgs = append(msgs, f.Message)
			}
		}
		if !found {
			t.Errorf("%s: no %s finding says %q; its messages:\n%s", path, id, text, strings.Join(msgs, "\n"))
		}
	}
}
