// Package explain is `hybridctl explain`: what any ID hybridctl prints
// means, why it matters and how to fix it. The entries are read from the
// catalogues' own ordered lists (doctor and lint's catalogue, the spec's
// rules, node diagnose's checks, preflight's checks, the CSR checks, check
// connectivity's tests); nothing here holds a second copy of their texts.
package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/diagnose"
	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/suggest"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// All is the argument that explains every entry.
const All = "all"

// Catalogue names, in the order Entries lists them.
const (
	CatalogueChecks       = "cluster checks"
	CatalogueSpec         = "spec rules"
	CatalogueDiagnose     = "node checks"
	CataloguePreflight    = "preflight checks"
	CatalogueCSR          = "CSR checks"
	CatalogueConnectivity = "connectivity tests"
)

// Entries returns every entry of every catalogue: catalogue by catalogue,
// each in its own list order.
func Entries() ([]finding.Entry, error) {
	docs, err := checks.Catalogue()
	if err != nil {
		return nil, err
	}
	var out []finding.Entry
	for _, d := range append(docs, report.InputRule()) {
		cmd := "doctor, lint"
		if d.ID == report.InputRuleID {
			cmd = "lint"
		}
		out = append(out, finding.Entry{Catalogue: CatalogueChecks, Command: cmd, ID: d.ID, Name: d.Name,
			Severity: string(d.Severity), What: d.Title, Why: d.Why, Fix: d.Fix, Guide: d.Guide, Misses: d.Misses})
	}
	for _, r := range spec.Rules() {
		out = append(out, finding.Entry{Catalogue: CatalogueSpec, Command: "plan (and every command that reads a spec)",
			ID: r.ID, Name: r.Name, What: r.Doc})
	}
	for _, c := range diagnose.Checks() {
		e := finding.Entry{Catalogue: CatalogueDiagnose, Command: "node diagnose", ID: c.ID, Name: c.Name,
			Severity: string(c.Severity), What: c.Title, Why: c.Why, Fix: c.Fix, Guide: c.Guide}
		if c.NeedsCluster {
			e.Requires = "the cluster's API (Calico's BlockAffinities and the Nodes); without it the check is skipped"
		}
		out = append(out, e)
	}
	for _, c := range preflight.Checks() {
		out = append(out, finding.Entry{Catalogue: CataloguePreflight, Command: "apply", ID: c.Name(), Severity: c.Severity,
			What: c.Doc, Runs: runsOn(c), Fix: preflightFix})
	}
	for _, c := range csr.Checks() {
		out = append(out, finding.Entry{Catalogue: CatalogueCSR, Command: "csr approve", ID: c.Name, What: c.Doc})
	}
	for _, t := range connectivity.Tests() {
		out = append(out, finding.Entry{Catalogue: CatalogueConnectivity, Command: "check connectivity", ID: t.Name,
			What: t.What, Fix: t.Fix, Requires: t.Requires})
	}
	return out, nil
}

// preflightFix is what to do about any preflight finding: each message
// names the host and what is wrong there.
const preflightFix = "the finding names the host and what is wrong on it: correct the host and run apply again, or let apply go on despite an error with --ignore-preflight-errors=NAME"

// runsOn says where and when a preflight check runs.
func runsOn(c preflight.Check) string {
	on := "every node"
	switch c.OS() {
	case engine.Linux:
		on = "Linux nodes"
	case engine.Windows:
		on = "Windows nodes"
	}
	switch c.Scope() {
	case preflight.ScopeCluster:
		return "all nodes together, in apply's preflight-cluster phase"
	case preflight.ScopePrepared:
		return on + ", in apply's preflight phase (a warning there) and again, as an error, in post-prepare"
	}
	return on + ", in apply's preflight phase"
}

// UnknownError is an argument that is no entry's ID or name.
type UnknownError struct {
	Ref string
	// Suggestion is the nearest ID or name, when one is close.
	Suggestion string
}

func (e *UnknownError) Error() string {
	msg := fmt.Sprintf("unknown ID %q", e.Ref)
	if e.Suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	}
	return msg + "; hybridctl explain with no argument lists every ID"
}

// Lookup returns the entries ref names: the one whose ID it is, or every
// entry whose name it is (a name can be both a preflight check's and a node
// check's), case-insensitively; All returns every entry.
func Lookup(entries []finding.Entry, ref string) ([]finding.Entry, error) {
	ref = strings.TrimSpace(ref)
	if strings.EqualFold(ref, All) {
		return entries, nil
	}
	var byID, byName []finding.Entry
	for _, e := range entries {
		switch {
		case strings.EqualFold(e.ID, ref):
			byID = append(byID, e)
		case e.Name != "" && strings.EqualFold(e.Name, ref):
			byName = append(byName, e)
		}
	}
	if len(byID)+len(byName) > 0 {
		return append(byID, byName...), nil
	}
	var known []string
	for _, e := range entries {
		known = append(known, e.ID)
		if e.Name != "" && e.Name != e.ID {
			known = append(known, e.Name)
		}
	}
	s, _ := suggest.Closest(ref, known)
	return nil, &UnknownError{Ref: ref, Suggestion: s}
}

// Formats are explain's output formats, default first.
func Formats() []string { return []string{"table", "json"} }

// Write writes entries in format: for people, each entry's text; JSON, a
// list of the entries.
func Write(w io.Writer, format string, entries []finding.Entry) error {
	switch format {
	case "json":
		if entries == nil {
			entries = []finding.Entry{}
		}
		return termtext.EncodeJSON(w, entries)
	case "", "table":
		var b strings.Builder
		for i, e := range entries {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(e.Text())
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats(), ", "))
}

// WriteList writes one line per entry (ID, name, catalogue, what it
// checks, shortened), for explain without an argument; JSON is Write's.
func WriteList(w io.Writer, format string, entries []finding.Entry) error {
	if format == "json" {
		return Write(w, format, entries)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCATALOGUE\tWHAT")
	for _, e := range entries {
		name := e.Name
		if name == "" || name == e.ID {
			name = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, name, e.Catalogue, shorten(e.What, 70))
	}
	return tw.Flush()
}

// shorten cuts s to at most n runes, marking the cut with "...".
func shorten(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-3]) + "..."
}
