package finding

import "strings"

// Entry is one catalogue entry as `hybridctl explain` shows it: what any
// ID hybridctl prints means. Catalogue names the list it comes from; ID is
// what findings carry (HC101, S102, a preflight check's name); Name is the
// kebab-case name, when the ID is not one already. Why, Fix, Guide and
// Misses are empty where the catalogue says what and why in one text.
type Entry struct {
	Catalogue string `json:"catalogue"`
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	// Severity is the most severe finding the entry reports ("error",
	// "warning", "info"), or how its failure counts ("warning/error",
	// "fail").
	Severity string `json:"severity,omitempty"`
	What     string `json:"what"`
	Why      string `json:"why,omitempty"`
	Fix      string `json:"fix,omitempty"`
	// Requires says what the entry needs to run at all; Runs where and
	// when it runs.
	Requires string `json:"requires,omitempty"`
	Runs     string `json:"runs,omitempty"`
	Guide    string `json:"guide,omitempty"`
	Misses   string `json:"misses,omitempty"`
	// Command is the hybridctl command (or commands) whose output shows
	// the entry's findings.
	Command string `json:"command"`
}

// Text renders e for a terminal: a heading, what it checks, then each
// documented part under its label, wrapped at 78 columns.
func (e Entry) Text() string {
	var b strings.Builder
	b.WriteString(e.ID)
	if e.Name != "" && e.Name != e.ID {
		b.WriteString(" " + e.Name)
	}
	if e.Severity != "" {
		b.WriteString(" (" + e.Severity + ")")
	}
	b.WriteString(" · " + e.Catalogue + " (hybridctl " + e.Command + ")\n\n")
	b.WriteString(Wrap(e.What, 78, "") + "\n")
	for _, part := range []struct{ label, text string }{
		{"Why", e.Why}, {"Fix", e.Fix}, {"Requires", e.Requires}, {"Runs", e.Runs}, {"Guide", e.Guide}, {"Does not catch", e.Misses},
	} {
		if strings.TrimSpace(part.text) != "" {
			b.WriteString("\n" + part.label + ":\n" + Wrap(part.text, 78, "  ") + "\n")
		}
	}
	return b.String()
}

// Wrap fills s into lines of at most width columns, each starting with
// indent; a word longer than a line stays whole on its own line. Blank s
// is "".
func Wrap(s string, width int, indent string) string {
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
