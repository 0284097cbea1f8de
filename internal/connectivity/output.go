package connectivity

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// Formats are the output formats of check connectivity.
func Formats() []string { return []string{"table", "json", "junit"} }

// Write writes the report in format.
func Write(w io.Writer, format string, rep *Report) error {
	switch format {
	case "json":
		return termtext.EncodeJSON(w, rep)
	case "junit":
		return writeJUnit(w, rep)
	case "table":
		return writeTable(w, rep)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats(), ", "))
}

func resultWord(o Outcome) string {
	switch {
	case o.Result == Pass:
		return "pass"
	case o.Result == Fail:
		return "FAIL"
	case o.NotRun:
		return "not run"
	}
	return "skipped"
}

func writeTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tFROM\tTO\tRESULT\tREASON")
	for _, o := range rep.Tests {
		reason := o.Reason
		if o.Result == Fail {
			reason = "see below"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Name, termtext.Line(o.From), termtext.Line(o.To), resultWord(o), termtext.Line(reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range rep.Tests {
		if o.Result != Fail {
			continue
		}
		fmt.Fprintf(w, "\nFAIL %s: %s → %s\n  cause:   %s\n", o.Name, termtext.Line(o.From), termtext.Line(o.To), termtext.Line(o.Reason))
		if o.Evidence != nil {
			fmt.Fprintf(w, "  command: %s\n", termtext.Line(o.Evidence.Command))
			if o.Evidence.ExitCode != nil {
				fmt.Fprintf(w, "  exit:    %d (after %d attempts)\n", *o.Evidence.ExitCode, o.Evidence.Attempts)
			}
			if o.Evidence.Output != "" {
				fmt.Fprintf(w, "  output:  %s\n", strings.ReplaceAll(termtext.Text(o.Evidence.Output), "\n", "\n           "))
			}
		}
		if o.Fix != "" {
			fmt.Fprintf(w, "  fix:     %s\n", termtext.Line(o.Fix))
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "\nproblem: %s\n", termtext.Text(p))
	}
	s := rep.Summary
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped, %d not run (namespace %s)\n", s.Pass, s.Fail, s.Skipped, s.NotRun, termtext.Line(rep.Namespace))
	return err
}

// writeJUnit writes one testsuite per test and one testcase per action;
// skipped and not-run actions are <skipped message=...>. It is written also
// when setup failed: every action is then a skipped testcase.
func writeJUnit(w io.Writer, rep *Report) error {
	var suites []finding.JUnitSuite
	idx := map[string]int{}
	for _, o := range rep.Tests {
		i, ok := idx[o.Name]
		if !ok {
			i = len(suites)
			idx[o.Name] = i
			suites = append(suites, finding.JUnitSuite{Name: o.Name})
		}
		c := finding.JUnitCase{Name: o.From + " → " + o.To, Classname: "connectivity." + o.Name}
		switch o.Result {
		case Fail:
			body := ""
			if o.Evidence != nil {
				body = "command: " + o.Evidence.Command + "\noutput: " + o.Evidence.Output
			}
			if o.Fix != "" {
				body += "\nfix: " + o.Fix
			}
			c.Failure = &finding.JUnitFailure{Message: o.Reason, Text: body}
		case Skipped:
			c.Skipped = &finding.JUnitSkipped{Message: o.Reason}
		}
		suites[i].Add(c)
	}
	return finding.WriteJUnitSuites(w, "hybridctl check connectivity", suites)
}
