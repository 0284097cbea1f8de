package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/termcolor"
)

// sample is a result with one finding of each severity (one from a
// manifest at line 0, one live), a skipped check and a clean check.
func sample() *checks.Result {
	doc := func(id, name string, sev finding.Severity) checks.Doc {
		return checks.Doc{ID: id, Name: name, Severity: sev, Title: name + " title", Why: "why " + id, Fix: "fix " + id, Guide: "guide " + id}
	}
	return &checks.Result{
		Ran: []checks.Doc{
			doc("HC201", "two", finding.Warning),
			doc("HC101", "one", finding.Error),
			doc("HC301", "three", finding.Info),
			doc("HC401", "clean", finding.Error),
			doc("HC402", "skipped", finding.Warning),
		},
		Findings: []checks.Finding{
			{Check: "HC101", Name: "one", Severity: finding.Error, Message: "m1", Fix: "f1",
				Object: snapshot.Ref{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: "kube-system", Name: "ds"},
				Source: snapshot.Source{File: "dir/a.yaml", Line: 0, Template: "chart/templates/ds.yaml"}},
			{Check: "HC201", Name: "two", Severity: finding.Warning, Message: "m2", Fix: "f2",
				Object: snapshot.Ref{APIVersion: "v1", Kind: "Node", Name: "win-1"}},
			{Check: "HC301", Name: "three", Severity: finding.Info, Message: "m3", Fix: "f3",
				Object: snapshot.Ref{APIVersion: "v1", Kind: "Pod", Namespace: "demo", Name: "p"},
				Source: snapshot.Source{File: "b.yaml", Line: 7}},
		},
		Skipped:    []checks.Skipped{{Check: "HC402", Name: "skipped", Reason: "CRD absent"}},
		Notes:      []string{"assumed: a note said once"},
		Suppressed: 2,
	}
}

// withInput adds lint's input diagnostics: one unreadable document and one
// that is not a Kubernetes object.
func withInput(r *checks.Result) *checks.Result {
	r.Diagnostics = []snapshot.Diagnostic{
		{Severity: finding.Error, File: "broken.yaml", Line: 3, Message: "cannot parse"},
		{Severity: finding.Warning, File: "kustomization.yaml", Line: 1, Message: "not a Kubernetes object", Fix: "kustomize build"},
	}
	return r
}

// TestInputDiagnostics: lint's input diagnostics are counted apart from
// findings, listed in JSON (never null), and shown in the table.
func TestInputDiagnostics(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, withInput(sample()), 1); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Diagnostics []map[string]any
		Summary     Summary
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Diagnostics) != 2 || out.Diagnostics[0]["file"] != "broken.yaml" || out.Diagnostics[0]["line"] != float64(3) {
		t.Errorf("diagnostics: %v", out.Diagnostics)
	}
	if out.Summary.InputErrors != 1 || out.Summary.InputWarnings != 1 || out.Summary.Errors != 1 || out.Summary.Warnings != 1 {
		t.Errorf("summary: %+v", out.Summary)
	}
	b.Reset()
	if err := JSON(&b, sample(), 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"diagnostics": []`) {
		t.Errorf("no input diagnostics: want an empty list:\n%s", b.String())
	}
	b.Reset()
	if err := Table(&b, withInput(sample()), 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "broken.yaml:3") || !strings.Contains(b.String(), "kustomization.yaml:1") {
		t.Errorf("table lacks the input diagnostics:\n%s", b.String())
	}
	for _, f := range []string{"sarif", "junit"} {
		b.Reset()
		if err := Write(&b, f, "lint", withInput(sample()), 1); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "broken.yaml") {
			t.Errorf("%s lacks the unreadable document:\n%s", f, b.String())
		}
	}
}

// TestJSONContract: design §5's shape, exactly: no unknown or missing
// keys, lists never null, counts right.
func TestJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "json", "lint", sample(), 42); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"findings", "skipped", "summary"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("top-level key %q missing:\n%s", k, b.String())
		}
	}
	var out struct {
		Findings []struct {
			Check, Name, Severity, Message, Fix string
			Object                              map[string]string
			File                                string
			Line                                int
			Template                            string
		}
		Skipped []map[string]string
		Summary Summary
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Findings) != 3 || out.Findings[0].Check != "HC101" || out.Findings[0].Severity != "error" {
		t.Fatalf("findings: %+v", out.Findings)
	}
	if o := out.Findings[0].Object; o["apiVersion"] != "apps/v1" || o["kind"] != "DaemonSet" || o["namespace"] != "kube-system" || o["name"] != "ds" {
		t.Errorf("object: %v", o)
	}
	if f := out.Findings[0]; f.File != "dir/a.yaml" || f.Template != "chart/templates/ds.yaml" || f.Fix != "f1" {
		t.Errorf("source: %+v", f)
	}
	if f := out.Findings[2]; f.File != "b.yaml" || f.Line != 7 {
		t.Errorf("file:line: %+v", f)
	}
	if len(out.Skipped) != 1 || out.Skipped[0]["check"] != "HC402" || out.Skipped[0]["reason"] != "CRD absent" {
		t.Errorf("skipped: %v", out.Skipped)
	}
	want := Summary{Errors: 1, Warnings: 1, Info: 1, Checks: 4, Skipped: 1, Suppressed: 2, Objects: 42}
	if out.Summary != want {
		t.Errorf("summary %+v, want %+v", out.Summary, want)
	}
	// Nothing found: empty lists, never null.
	b.Reset()
	if err := JSON(&b, &checks.Result{}, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"findings": []`) || !strings.Contains(b.String(), `"skipped": []`) || !strings.Contains(b.String(), `"notes": []`) {
		t.Errorf("empty result:\n%s", b.String())
	}
}

// TestSARIF: one rule per check run, each result's ruleIndex pointing at
// its own rule, levels mapped, physical locations only for manifests with
// line 0 written as 1 (SARIF lines start at 1).
func TestSARIF(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "sarif", "lint", sample(), 0); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID                   string            `json:"id"`
						DefaultConfiguration map[string]string `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						Region           struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []map[string]string `json:"logicalLocations"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "hybridctl lint" {
		t.Fatalf("log: %+v", log)
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != 5 {
		t.Fatalf("rules: %d, want 5", len(run.Tool.Driver.Rules))
	}
	levels := map[string]string{"HC101": "error", "HC201": "warning", "HC301": "note"}
	for _, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("%s: ruleIndex %d points at %s", r.RuleID, r.RuleIndex, run.Tool.Driver.Rules[r.RuleIndex].ID)
		}
		if r.Level != levels[r.RuleID] {
			t.Errorf("%s: level %s, want %s", r.RuleID, r.Level, levels[r.RuleID])
		}
		loc := r.Locations[0]
		switch r.RuleID {
		case "HC101":
			if loc.PhysicalLocation == nil || loc.PhysicalLocation.ArtifactLocation.URI != "dir/a.yaml" || loc.PhysicalLocation.Region.StartLine != 1 {
				t.Errorf("HC101 location: %+v", loc.PhysicalLocation)
			}
		case "HC201":
			if loc.PhysicalLocation != nil {
				t.Errorf("a live finding has a physical location: %+v", loc.PhysicalLocation)
			}
			if len(loc.LogicalLocations) != 1 || loc.LogicalLocations[0]["fullyQualifiedName"] != "Node/win-1" {
				t.Errorf("HC201 logical location: %v", loc.LogicalLocations)
			}
		case "HC301":
			if loc.PhysicalLocation == nil || loc.PhysicalLocation.Region.StartLine != 7 {
				t.Errorf("HC301 location: %+v", loc.PhysicalLocation)
			}
		}
	}
	for _, r := range run.Tool.Driver.Rules {
		if r.ID == "HC301" && r.DefaultConfiguration["level"] != "note" {
			t.Errorf("HC301 default level %v", r.DefaultConfiguration)
		}
	}
}

// TestJUnit: one case per finding, one passing case per clean check, a
// skipped case per skipped check, counts that match, ordered by check ID.
func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "junit", "doctor", sample(), 0); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Type string `xml:"type,attr"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "hybridctl doctor" || s.Tests != 5 || s.Failures != 3 || s.Skipped != 1 || len(s.Cases) != 5 {
		t.Fatalf("suite: name %q tests %d failures %d skipped %d cases %d", s.Name, s.Tests, s.Failures, s.Skipped, len(s.Cases))
	}
	var order []string
	for _, c := range s.Cases {
		order = append(order, strings.Fields(c.Classname)[0])
	}
	if strings.Join(order, " ") != "HC101 HC201 HC301 HC401 HC402" {
		t.Errorf("case order %v", order)
	}
	if c := s.Cases[0]; c.Failure == nil || c.Failure.Type != "error" || !strings.Contains(c.Name, "(dir/a.yaml:0)") {
		t.Errorf("HC101 case: %+v", c)
	}
	if c := s.Cases[3]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("clean check HC401 is not a passing case: %+v", c)
	}
	if c := s.Cases[4]; c.Skipped == nil || c.Skipped.Message != "CRD absent" {
		t.Errorf("skipped check HC402: %+v", c)
	}
}

// TestTableGroupsBySeverity: errors before warnings before info, each
// finding with its place and fix, the skipped checks with their reasons.
func TestTableGroupsBySeverity(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "table", "lint", sample(), 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	idx := func(s string) int {
		i := strings.Index(out, s)
		if i < 0 {
			t.Fatalf("table lacks %q:\n%s", s, out)
		}
		return i
	}
	if !(idx("ERROR (1)") < idx("WARNING (1)") && idx("WARNING (1)") < idx("INFO (1)") && idx("INFO (1)") < idx("SKIPPED (1)")) {
		t.Errorf("sections out of order:\n%s", out)
	}
	idx("dir/a.yaml:0 DaemonSet kube-system/ds")
	idx("fix: f2")
	idx("CRD absent")
	if strings.Contains(out, "INPUT") {
		t.Errorf("an INPUT section without input diagnostics:\n%s", out)
	}
	// A severity with no findings has no section.
	only := sample()
	only.Findings = only.Findings[1:2]
	b.Reset()
	if err := Table(&b, only, 1); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "ERROR (") || strings.Contains(s, "INFO (") || !strings.Contains(s, "WARNING (1)") {
		t.Errorf("sections for a single warning:\n%s", s)
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

var errFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteErrorsReachTheCaller: a write that fails part-way through is
// returned by every format, wherever it happens.
func TestWriteErrorsReachTheCaller(t *testing.T) {
	for _, f := range Formats() {
		for _, after := range []int{0, 10, 200} {
			if err := Write(&failingWriter{n: after}, f, "lint", sample(), 1); !errors.Is(err, errFull) {
				t.Errorf("%s, failing after %d bytes: err = %v", f, after, err)
			}
		}
	}
	// Without a skipped section (whose tabwriter also reports the error).
	noSkip := sample()
	noSkip.Skipped = nil
	for _, after := range []int{0, 10, 200} {
		if err := Table(&failingWriter{n: after}, noSkip, 1); !errors.Is(err, errFull) {
			t.Errorf("table without skipped checks, failing after %d bytes: err = %v", after, err)
		}
	}
	if err := Write(&bytes.Buffer{}, "yaml", "lint", sample(), 1); err == nil || !strings.Contains(err.Error(), "table, json, sarif, junit") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestTableColor: painted, the table has the severity colours on its
// headings and check IDs, and nothing else changes: without the escape
// codes it is Table's output byte for byte.
func TestTableColor(t *testing.T) {
	var plain, painted bytes.Buffer
	if err := Table(&plain, withInput(sample()), 3); err != nil {
		t.Fatal(err)
	}
	if err := TableColor(&painted, withInput(sample()), 3, termcolor.On()); err != nil {
		t.Fatal(err)
	}
	out := painted.String()
	for _, want := range []string{"\x1b[31mERROR (1)\x1b[0m", "\x1b[33mWARNING (1)\x1b[0m", "\x1b[36mINFO (1)\x1b[0m", "\x1b[31mHC"} {
		if !strings.Contains(out, want) {
			t.Errorf("painted table lacks %q:\n%q", want, out)
		}
	}
	if got := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, ""); got != plain.String() {
		t.Errorf("without colour codes the table differs:\n%s\nwant:\n%s", got, plain.String())
	}
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("Table wrote escape codes")
	}
}
