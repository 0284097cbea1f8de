// Package report renders check results for people (table) and machines
// (json, sarif, junit), per the output contract in design §5.
package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/termcolor"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// InputRuleID and InputRuleName name the input diagnostics (documents
// lint could not check) where a format needs a rule: SARIF and JUnit. The
// ID is outside the check catalogue's range.
const (
	InputRuleID   = "HC000"
	InputRuleName = "input-document"
)

// InputRule documents the input diagnostics as a catalogue entry (SARIF's
// rule, hybridctl explain HC000).
func InputRule() checks.Doc {
	return checks.Doc{ID: InputRuleID, Name: InputRuleName, Severity: finding.Error,
		Title: "A document lint could not check",
		Why:   "A document that cannot be read (broken YAML or JSON, over the size limit) is an error; one that is not a Kubernetes object (a kustomization.yaml) is a warning. Either way its objects were not checked.",
		Fix:   "Fix the document, or leave it out of lint's paths; for a kustomization, lint what kustomize build prints."}
}

// Formats returns the output formats, default first.
func Formats() []string { return []string{"table", "json", "sarif", "junit"} }

// Summary counts findings.
type Summary struct {
	Errors     int `json:"errors"`
	Warnings   int `json:"warnings"`
	Info       int `json:"info"`
	Checks     int `json:"checks"`
	Skipped    int `json:"skipped"`
	Suppressed int `json:"suppressed"`
	Objects    int `json:"objects"`
	// InputErrors and InputWarnings count the diagnostics about the input
	// itself (lint): unreadable documents, non-Kubernetes documents.
	InputErrors   int `json:"inputErrors"`
	InputWarnings int `json:"inputWarnings"`
}

// Summarize counts a result.
func Summarize(r *checks.Result, objects int) Summary {
	s := Summary{Checks: len(r.Ran) - len(r.Skipped), Skipped: len(r.Skipped), Suppressed: r.Suppressed, Objects: objects}
	for _, d := range r.Diagnostics {
		if d.Severity == finding.Error {
			s.InputErrors++
		} else {
			s.InputWarnings++
		}
	}
	s.Errors, s.Warnings, s.Info = finding.Count(r.Findings, func(f checks.Finding) finding.Severity { return f.Severity })
	return s
}

// Write renders r in format to w. tool names the command ("doctor" or
// "lint") for SARIF and JUnit.
func Write(w io.Writer, format, tool string, r *checks.Result, objects int) error {
	switch format {
	case "", "table":
		return Table(w, r, objects)
	case "json":
		return JSON(w, r, objects)
	case "sarif":
		return SARIF(w, tool, r)
	case "junit":
		return JUnit(w, tool, r)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats(), ", "))
}

// JSON writes {"findings":[...],"skipped":[...],"diagnostics":[...],
// "notes":[...],"summary":{...}}.
func JSON(w io.Writer, r *checks.Result, objects int) error {
	type jsonFinding struct {
		Check    string      `json:"check"`
		Name     string      `json:"name"`
		Severity string      `json:"severity"`
		Object   interface{} `json:"object"`
		Message  string      `json:"message"`
		Fix      string      `json:"fix"`
		File     string      `json:"file,omitempty"`
		Line     int         `json:"line,omitempty"`
		Template string      `json:"template,omitempty"`
	}
	out := struct {
		Findings    []jsonFinding         `json:"findings"`
		Skipped     []checks.Skipped      `json:"skipped"`
		Diagnostics []snapshot.Diagnostic `json:"diagnostics"`
		Notes       []string              `json:"notes"`
		Summary     Summary               `json:"summary"`
	}{Findings: []jsonFinding{}, Skipped: r.Skipped, Diagnostics: r.Diagnostics, Notes: r.Notes, Summary: Summarize(r, objects)}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	if out.Diagnostics == nil {
		out.Diagnostics = []snapshot.Diagnostic{}
	}
	if out.Skipped == nil {
		out.Skipped = []checks.Skipped{}
	}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, jsonFinding{Check: f.Check, Name: f.Name, Severity: string(f.Severity), Object: f.Object,
			Message: f.Message, Fix: f.Fix, File: f.Source.File, Line: f.Source.Line, Template: f.Source.Template})
	}
	return termtext.EncodeJSON(w, out)
}

// Table writes findings grouped by severity, each with its one-line fix.
func Table(w io.Writer, r *checks.Result, objects int) error {
	return TableColor(w, r, objects, termcolor.Palette{})
}

// TableColor is Table with the severities (section headings, check IDs,
// input diagnostics) painted by pal; with pal off it is Table.
func TableColor(w io.Writer, r *checks.Result, objects int, pal termcolor.Palette) error {
	sum := Summarize(r, objects)
	bw := &errWriter{w: w}
	if len(r.Diagnostics) > 0 {
		bw.printf("INPUT (%d)\n", len(r.Diagnostics))
		for _, d := range r.Diagnostics {
			bw.printf("  %s:%d %s\n", termtext.Line(d.File), d.Line, pal.Severity(string(d.Severity), string(d.Severity)))
			bw.printf("      %s\n", termtext.Line(d.Message))
			if d.Fix != "" {
				bw.printf("      fix: %s\n", termtext.Line(d.Fix))
			}
		}
		bw.printf("\n")
	}
	for _, sev := range finding.Severities() {
		var fs []checks.Finding
		for _, f := range r.Findings {
			if f.Severity == sev {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		bw.printf("%s\n", pal.Severity(string(sev), fmt.Sprintf("%s (%d)", strings.ToUpper(string(sev)), len(fs))))
		for _, f := range fs {
			where := termtext.Line(f.Object.Kind) + " " + termtext.Line(qualified(f.Object.Namespace, f.Object.Name))
			if f.Source.File != "" {
				where = fmt.Sprintf("%s:%d %s", termtext.Line(f.Source.File), f.Source.Line, where)
			}
			bw.printf("  %s %s  %s\n", pal.Severity(string(sev), f.Check), f.Name, where)
			bw.printf("      %s\n", termtext.Line(f.Message))
			bw.printf("      fix: %s\n", termtext.Line(f.Fix))
		}
		bw.printf("\n")
	}
	if len(r.Skipped) > 0 {
		bw.printf("SKIPPED (%d)\n", len(r.Skipped))
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		for _, s := range r.Skipped {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Check, s.Name, termtext.Line(s.Reason))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		bw.printf("\n")
	}
	if len(r.Notes) > 0 {
		bw.printf("NOTES (%d)\n", len(r.Notes))
		for _, n := range r.Notes {
			bw.printf("  %s\n", termtext.Line(n))
		}
		bw.printf("\n")
	}
	if len(r.Findings) == 0 && len(r.Diagnostics) == 0 {
		bw.printf("No problems found.\n")
	}
	bw.printf("%s, %s, %d info; %s run, %d skipped, %d suppressed; %s\n",
		Plural(sum.Errors, "error"), Plural(sum.Warnings, "warning"), sum.Info, Plural(sum.Checks, "check"),
		sum.Skipped, sum.Suppressed, Plural(sum.Objects, "object"))
	if len(r.Diagnostics) > 0 {
		bw.printf("input: %d unreadable, %d not Kubernetes objects (see INPUT above)\n", sum.InputErrors, sum.InputWarnings)
	}
	return bw.err
}

// Plural is "1 error", "2 errors": counts in messages, never "error(s)".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

// SARIF writes a SARIF 2.1.0 log; findings from manifests carry their file
// and line as a physical location, live findings a logical location.
func SARIF(w io.Writer, tool string, r *checks.Result) error {
	type msg struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID                   string            `json:"id"`
		Name                 string            `json:"name"`
		ShortDescription     msg               `json:"shortDescription"`
		FullDescription      msg               `json:"fullDescription"`
		Help                 msg               `json:"help"`
		HelpURI              string            `json:"helpUri,omitempty"`
		DefaultConfiguration map[string]string `json:"defaultConfiguration"`
	}
	type location struct {
		PhysicalLocation *struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine int `json:"startLine"`
			} `json:"region"`
		} `json:"physicalLocation,omitempty"`
		LogicalLocations []map[string]string `json:"logicalLocations,omitempty"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		RuleIndex int        `json:"ruleIndex"`
		Level     string     `json:"level"`
		Message   msg        `json:"message"`
		Locations []location `json:"locations"`
	}
	var rules []rule
	index := map[string]int{}
	for _, d := range r.Ran {
		index[d.ID] = len(rules)
		rules = append(rules, rule{ID: d.ID, Name: d.Name, ShortDescription: msg{d.Title}, FullDescription: msg{d.Why},
			Help: msg{"Fix: " + d.Fix + " (guide: " + d.Guide + ")"}, HelpURI: "https://github.com/hybridctl/hybridctl/blob/main/docs/checks.md#" + strings.ToLower(d.ID),
			DefaultConfiguration: map[string]string{"level": level(d.Severity)}})
	}
	results := []result{}
	if len(r.Diagnostics) > 0 {
		index[InputRuleID] = len(rules)
		in := InputRule()
		rules = append(rules, rule{ID: in.ID, Name: in.Name, ShortDescription: msg{in.Title},
			FullDescription:      msg{in.Why},
			Help:                 msg{in.Fix},
			DefaultConfiguration: map[string]string{"level": level(in.Severity)}})
	}
	for _, d := range r.Diagnostics {
		loc := location{PhysicalLocation: &struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine int `json:"startLine"`
			} `json:"region"`
		}{}}
		loc.PhysicalLocation.ArtifactLocation.URI = filepath.ToSlash(d.File)
		loc.PhysicalLocation.Region.StartLine = max(d.Line, 1)
		text := d.Message
		if d.Fix != "" {
			text += " Fix: " + d.Fix
		}
		lvl := "warning"
		if d.Severity == finding.Error {
			lvl = "error"
		}
		results = append(results, result{RuleID: InputRuleID, RuleIndex: index[InputRuleID], Level: lvl, Message: msg{text}, Locations: []location{loc}})
	}
	for _, f := range r.Findings {
		loc := location{LogicalLocations: []map[string]string{{
			"fullyQualifiedName": f.Object.Kind + "/" + qualified(f.Object.Namespace, f.Object.Name), "kind": "object"}}}
		if f.Source.File != "" {
			loc.PhysicalLocation = &struct {
				ArtifactLocation struct {
					URI string `json:"uri"`
				} `json:"artifactLocation"`
				Region struct {
					StartLine int `json:"startLine"`
				} `json:"region"`
			}{}
			loc.PhysicalLocation.ArtifactLocation.URI = filepath.ToSlash(f.Source.File)
			loc.PhysicalLocation.Region.StartLine = max(f.Source.Line, 1)
		}
		results = append(results, result{RuleID: f.Check, RuleIndex: index[f.Check], Level: level(f.Severity),
			Message: msg{f.Message + " Fix: " + f.Fix}, Locations: []location{loc}})
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "hybridctl " + tool, "informationUri": "https://github.com/hybridctl/hybridctl", "rules": rules}},
			"results": results,
		}},
	}
	return termtext.EncodeJSON(w, log)
}

func level(s finding.Severity) string {
	switch s {
	case finding.Error:
		return "error"
	case finding.Warning:
		return "warning"
	}
	return "note"
}

// JUnit writes one testsuite with a testcase per check and object: a check
// without findings is one passing case, a skipped check a skipped case.
func JUnit(w io.Writer, tool string, r *checks.Result) error {
	s := finding.JUnitSuite{Name: "hybridctl " + tool}
	byCheck := map[string][]checks.Finding{}
	for _, f := range r.Findings {
		byCheck[f.Check] = append(byCheck[f.Check], f)
	}
	skippedBy := map[string]string{}
	for _, sk := range r.Skipped {
		skippedBy[sk.Check] = sk.Reason
	}
	for _, d := range r.Diagnostics {
		text := ""
		if d.Fix != "" {
			text = "fix: " + d.Fix
		}
		s.Add(finding.JUnitCase{Name: fmt.Sprintf("%s:%d", d.File, d.Line), Classname: InputRuleID + " " + InputRuleName,
			Failure: &finding.JUnitFailure{Message: d.Message, Type: string(d.Severity), Text: text}})
	}
	docs := append([]checks.Doc(nil), r.Ran...)
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	for _, d := range docs {
		cls := d.ID + " " + d.Name
		switch {
		case skippedBy[d.ID] != "":
			s.Add(finding.JUnitCase{Name: d.Title, Classname: cls, Skipped: &finding.JUnitSkipped{Message: skippedBy[d.ID]}})
		case len(byCheck[d.ID]) == 0:
			s.Add(finding.JUnitCase{Name: d.Title, Classname: cls})
		default:
			for _, f := range byCheck[d.ID] {
				name := f.Object.Kind + " " + qualified(f.Object.Namespace, f.Object.Name)
				if f.Source.File != "" {
					name = fmt.Sprintf("%s (%s:%d)", name, f.Source.File, f.Source.Line)
				}
				s.Add(finding.JUnitCase{Name: name, Classname: cls,
					Failure: &finding.JUnitFailure{Message: f.Message, Type: string(f.Severity), Text: "fix: " + f.Fix}})
			}
		}
	}
	return finding.WriteJUnit(w, s)
}
