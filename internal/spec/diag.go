package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
)

// Diagnostic is one problem found in a spec, located by file, line and field
// path.
type Diagnostic struct {
	Severity finding.Severity `json:"severity"`
	// Rule is the stable ID of the rule that found it (S101, ...); Name is
	// its kebab-case name.
	Rule    string `json:"check"`
	Name    string `json:"name"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String formats the diagnostic compiler style:
//
//	cluster.yaml:42: spec.nodes[3].name: "k8s-lab-windows-01" is 18 characters; ...
//	cluster.yaml:3: warning: spec.controlPlaneEndpoint: ...
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		b.WriteString(":")
		if d.Line > 0 {
			fmt.Fprintf(&b, "%d:", d.Line)
		}
		b.WriteString(" ")
	}
	if d.Severity == finding.Warning {
		b.WriteString("warning: ")
	}
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Rule != "" {
		fmt.Fprintf(&b, " [%s %s]", d.Rule, d.Name)
	}
	return b.String()
}

// Diagnostics is a list of diagnostics.
type Diagnostics []Diagnostic

// Errors returns the error-severity diagnostics.
func (ds Diagnostics) Errors() Diagnostics { return ds.filter(finding.Error) }

// Warnings returns the warning-severity diagnostics.
func (ds Diagnostics) Warnings() Diagnostics { return ds.filter(finding.Warning) }

func (ds Diagnostics) filter(s finding.Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// sort orders diagnostics by line, then path, then message, so output is
// stable and reads top to bottom like the file.
func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Message < b.Message
	})
}

// InvalidError is returned when a spec has errors. Its message lists every
// error, one per line.
type InvalidError struct {
	File        string
	Diagnostics Diagnostics
}

func (e *InvalidError) Error() string {
	errs := e.Diagnostics.Errors()
	lines := make([]string, 0, len(errs)+1)
	lines = append(lines, fmt.Sprintf("%s: invalid cluster spec (%d error%s)", e.File, len(errs), plural(len(errs))))
	for _, d := range errs {
		lines = append(lines, d.String())
	}
	return strings.Join(lines, "\n")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
