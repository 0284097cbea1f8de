package checks

import (
	"fmt"
	"strings"
)

// Explain renders one check's documentation for a terminal.
func Explain(d Doc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s)\n\n%s\n\n", d.ID, d.Name, d.Severity, d.Title)
	fmt.Fprintf(&b, "Why:\n%s\n\n", wrap(d.Why, 78, "  "))
	fmt.Fprintf(&b, "Fix:\n%s\n\n", wrap(d.Fix, 78, "  "))
	fmt.Fprintf(&b, "Guide: %s\n", d.Guide)
	fmt.Fprintf(&b, "Suppress: annotation hybridctl.dev/ignore: %q, or --skip %s\n", d.ID, d.Name)
	return b.String()
}

func wrap(s string, width int, indent string) string {
	var lines []string
	line := indent
	for _, w := range strings.Fields(s) {
		if len(line)+len(w)+1 > width && strings.TrimSpace(line) != "" {
			lines = append(lines, line)
			line = indent
		}
		if strings.TrimSpace(line) != "" {
			line += " "
		}
		line += w
	}
	if strings.TrimSpace(line) != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// Markdown renders the catalogue as docs/checks.md.
func Markdown(docs []Doc) string {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/checks/catalogue.yaml by `go test ./internal/checks -run TestDocs -update`. Do not edit. -->\n\n")
	b.WriteString("# Check reference\n\n")
	b.WriteString("`hybridctl doctor` (a live cluster) and `hybridctl lint` (manifests) run the same checks. Every check has a stable ID and a name; ")
	b.WriteString("either works in `--checks`, `--skip`, `--explain`, the `hybridctl.dev/ignore` annotation and the `--config` file. ")
	b.WriteString("The guide column names the section of the hybrid-cluster guide that explains the requirement.\n\n")
	b.WriteString("| ID | name | severity | what |\n|---|---|---|---|\n")
	for _, d := range docs {
		fmt.Fprintf(&b, "| [%s](#%s) | `%s` | %s | %s |\n", d.ID, strings.ToLower(d.ID), d.Name, d.Severity, d.Title)
	}
	for _, d := range docs {
		fmt.Fprintf(&b, "\n## %s\n\n", d.ID)
		fmt.Fprintf(&b, "**`%s`** · %s · %s\n\n", d.Name, d.Severity, d.Title)
		fmt.Fprintf(&b, "%s\n\n", d.Why)
		fmt.Fprintf(&b, "**Fix:** %s\n\n", d.Fix)
		fmt.Fprintf(&b, "**Guide:** %s\n", d.Guide)
	}
	return b.String()
}
