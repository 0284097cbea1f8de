package diagnose

import (
	"fmt"
	"io"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"

	"github.com/hybridctl/hybridctl/internal/redact"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// Summary counts a run.
type Summary struct {
	Errors      int `json:"errors"`
	Warnings    int `json:"warnings"`
	Info        int `json:"info"`
	Checks      int `json:"checks"`
	Skipped     int `json:"skipped"`
	Nodes       int `json:"nodes"`
	Unreachable int `json:"unreachable"`
}

// Summarize counts r.
func Summarize(r *Result) Summary {
	s := Summary{Checks: r.Ran, Skipped: len(r.Skipped), Nodes: len(r.Nodes), Unreachable: len(r.Unreached())}
	s.Errors, s.Warnings, s.Info = finding.Count(r.Findings, func(f Finding) finding.Severity { return f.Severity })
	return s
}

// object is doctor's finding object: the Node.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// WriteJSON writes doctor's shape ({"findings","skipped","summary"}) with
// node and evidence on each finding, node on each skipped check, and the
// nodes (with the error of those not reached).
func WriteJSON(w io.Writer, r *Result) error {
	type jsonFinding struct {
		Check    string           `json:"check"`
		Name     string           `json:"name"`
		Severity finding.Severity `json:"severity"`
		Node     string           `json:"node"`
		Object   object           `json:"object"`
		Message  string           `json:"message"`
		Fix      string           `json:"fix"`
		Evidence []string         `json:"evidence"`
	}
	type skipped struct {
		Check  string `json:"check"`
		Name   string `json:"name"`
		Node   string `json:"node"`
		Reason string `json:"reason"`
	}
	out := struct {
		Findings []jsonFinding `json:"findings"`
		Skipped  []skipped     `json:"skipped"`
		Nodes    []NodeResult  `json:"nodes"`
		Overlay  string        `json:"overlay,omitempty"`
		Summary  Summary       `json:"summary"`
	}{Findings: []jsonFinding{}, Skipped: []skipped{}, Nodes: r.Nodes, Overlay: r.Source, Summary: Summarize(r)}
	if out.Nodes == nil {
		out.Nodes = []NodeResult{}
	}
	for _, f := range r.Findings {
		ev := []string{}
		for _, e := range f.Evidence {
			ev = append(ev, redact.String(e))
		}
		out.Findings = append(out.Findings, jsonFinding{Check: f.Check, Name: f.Name, Severity: f.Severity, Node: f.Node,
			Object: object{APIVersion: "v1", Kind: "Node", Name: f.Node}, Message: redact.String(f.Message), Fix: f.Fix, Evidence: ev})
	}
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, skipped{Check: s.Check, Name: s.Name, Node: s.Node, Reason: s.Reason})
	}
	return termtext.EncodeJSON(w, out)
}

// WriteTable writes the findings grouped by severity, as doctor does, each
// with its evidence and fix; then the skipped checks and the nodes not
// reached.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	for _, sev := range finding.Severities() {
		var fs []Finding
		for _, f := range r.Findings {
			if f.Severity == sev {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s (%d)\n", strings.ToUpper(string(sev)), len(fs))
		for _, f := range fs {
			fmt.Fprintf(&b, "  %s %s  Node %s\n", f.Check, f.Name, termtext.Line(f.Node))
			fmt.Fprintf(&b, "      %s\n", termtext.Line(redact.String(f.Message)))
			for _, e := range f.Evidence {
				fmt.Fprintf(&b, "        %s\n", termtext.Line(redact.String(e)))
			}
			fmt.Fprintf(&b, "      fix: %s\n", termtext.Line(f.Fix))
		}
		b.WriteString("\n")
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "SKIPPED (%d)\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "  %s %s  Node %s: %s\n", s.Check, s.Name, termtext.Line(s.Node), termtext.Line(s.Reason))
		}
		b.WriteString("\n")
	}
	if un := r.Unreached(); len(un) > 0 {
		fmt.Fprintf(&b, "NOT REACHED (%d)\n", len(un))
		for _, n := range un {
			fmt.Fprintf(&b, "  %s: %s\n", termtext.Line(n.Name), termtext.Line(n.Error))
		}
		b.WriteString("\n")
	}
	s := Summarize(r)
	if len(r.Findings) == 0 && s.Unreachable == 0 {
		b.WriteString("No problems found.\n")
	}
	overlay := ""
	if r.Source != "" {
		overlay = "; overlay from " + termtext.Line(r.Source)
	}
	fmt.Fprintf(&b, "%s, %s, %d info; %s on %s, %d skipped, %d not reached%s\n",
		report.Plural(s.Errors, "error"), report.Plural(s.Warnings, "warning"), s.Info, report.Plural(s.Checks, "check"),
		report.Plural(s.Nodes, "node"), s.Skipped, s.Unreachable, overlay)
	_, err := io.WriteString(w, b.String())
	return err
}

// Formats are node diagnose's output formats, default first.
func Formats() []string { return []string{"table", "json", "junit"} }

// WriteJUnit writes one testsuite per node with a testcase per selected
// check, as doctor's JUnit does per object: a check without findings is a
// passing case, each finding a failed case (its message, evidence and
// fix, redacted), a skipped check a skipped case. A node not reached is
// one failed case with the reason.
func WriteJUnit(w io.Writer, r *Result) error {
	type key struct{ node, check string }
	found := map[key][]Finding{}
	for _, f := range r.Findings {
		found[key{f.Node, f.Check}] = append(found[key{f.Node, f.Check}], f)
	}
	skipped := map[key]string{}
	for _, s := range r.Skipped {
		skipped[key{s.Node, s.Check}] = s.Reason
	}
	docs := map[string]Check{}
	for _, c := range Checks() {
		docs[c.ID] = c
	}
	var suites []finding.JUnitSuite
	for _, n := range r.Nodes {
		s := finding.JUnitSuite{Name: n.Name}
		if n.Facts == nil {
			s.Add(finding.JUnitCase{Name: "Node " + n.Name, Classname: "reach",
				Failure: &finding.JUnitFailure{Message: redact.String(n.Error), Type: string(finding.Error)}})
			suites = append(suites, s)
			continue
		}
		for _, id := range r.Checks {
			c := docs[id]
			cls := c.ID + " " + c.Name
			k := key{n.Name, id}
			switch {
			case len(found[k]) > 0:
				for _, f := range found[k] {
					var body strings.Builder
					for _, e := range f.Evidence {
						body.WriteString(redact.String(e) + "\n")
					}
					body.WriteString("fix: " + f.Fix)
					s.Add(finding.JUnitCase{Name: "Node " + n.Name, Classname: cls,
						Failure: &finding.JUnitFailure{Message: redact.String(f.Message), Type: string(f.Severity), Text: body.String()}})
				}
			case skipped[k] != "":
				s.Add(finding.JUnitCase{Name: c.Title, Classname: cls, Skipped: &finding.JUnitSkipped{Message: skipped[k]}})
			default:
				s.Add(finding.JUnitCase{Name: c.Title, Classname: cls})
			}
		}
		suites = append(suites, s)
	}
	return finding.WriteJUnitSuites(w, "hybridctl node diagnose", suites)
}
