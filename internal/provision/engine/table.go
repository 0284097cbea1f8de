package engine

import (
	"fmt"
	"strings"
)

// PhaseRow is one phase as `apply --help`, `reset --help` and docs/apply.md
// show it: generated from the phase list itself, so the documentation
// cannot drift from the code.
type PhaseRow struct {
	Name        string
	RunsOn      string   // "every node", "Windows nodes", "cluster", ...
	Waits       []string // gates: phases finished everywhere first
	Description string
}

// sampleHosts is one host of each kind, to find out where a phase runs
// without knowing a cluster: a phase's Targets is a selector.
func sampleHosts() []Host {
	return []Host{
		{Name: "cp", Role: RoleControlPlane, OS: Linux},
		{Name: "lw", Role: RoleWorker, OS: Linux},
		{Name: "win", Role: RoleWorker, OS: Windows},
	}
}

// where names the hosts a phase runs on: its RunsOn label, else derived
// from its selector.
func where(d Descriptor) string {
	if d.RunsOn != "" {
		return d.RunsOn
	}
	targets := d.targets(sampleHosts())
	var names []string
	for _, h := range targets {
		names = append(names, h.Name)
	}
	switch strings.Join(names, ",") {
	case ClusterHostName:
		return "cluster"
	case "cp,lw,win":
		return "every node"
	case "cp,lw":
		return "Linux nodes"
	case "cp":
		return "control plane"
	case "lw":
		return "Linux workers"
	case "win":
		return "Windows nodes"
	case "lw,win":
		return "workers"
	case "":
		return "no host"
	}
	return strings.Join(names, ", ")
}

// Table describes phases in list order.
func Table(phases []Descriptor) []PhaseRow {
	rows := make([]PhaseRow, 0, len(phases))
	for _, d := range phases {
		rows = append(rows, PhaseRow{Name: d.Name, RunsOn: where(d), Waits: d.After, Description: d.Does})
	}
	return rows
}

// Descriptors returns the descriptions of phases, in order.
func Descriptors(phases []Phase) []Descriptor {
	out := make([]Descriptor, len(phases))
	for i, p := range phases {
		out[i] = p.Describe()
	}
	return out
}

// HelpText renders the phase list for a command's --help: one entry per
// phase, in order, with where it runs, its gates and what it does.
func HelpText(phases []Descriptor) string {
	var b strings.Builder
	for i, r := range Table(phases) {
		fmt.Fprintf(&b, "  %2d. %s (%s)", i+1, r.Name, r.RunsOn)
		if len(r.Waits) > 0 {
			fmt.Fprintf(&b, ", after %s everywhere", strings.Join(r.Waits, " and "))
		}
		b.WriteString("\n")
		if r.Description != "" {
			b.WriteString(wrapText(r.Description, 76, "      "))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Markdown renders the phase list as a Markdown table for docs/apply.md.
func Markdown(phases []Descriptor) string {
	var b strings.Builder
	b.WriteString("| # | phase | runs on | waits for (gate) | what it does |\n|---|---|---|---|---|\n")
	for i, r := range Table(phases) {
		var waits []string
		for _, w := range r.Waits {
			waits = append(waits, "`"+w+"`")
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s |\n", i+1, r.Name, r.RunsOn, strings.Join(waits, ", "),
			strings.ReplaceAll(r.Description, "|", `\|`))
	}
	return b.String()
}

// wrapText wraps s at width, each line starting with indent.
func wrapText(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(indent)+len(line)+1+len(w) > width {
			lines = append(lines, indent+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, "\n")
}
