package finding

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	for _, s := range []string{"", "  ", "\n"} {
		if got := Wrap(s, 78, "  "); got != "" {
			t.Errorf("Wrap(%q) = %q, want \"\"", s, got)
		}
	}
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"a b c", 5, "  a b\n  c"},
		{"a b c", 6, "  a b\n  c"}, // "  a b c" is 7 columns
		{"a b c", 7, "  a b c"},    // exactly the width
		{"abcdefgh x", 5, "  abcdefgh\n  x"},
	} {
		if got := Wrap(c.in, c.width, "  "); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// TestEntryText: every documented part under its label, the empty ones
// left out, and the name only when it is not the ID.
func TestEntryText(t *testing.T) {
	e := Entry{Catalogue: "node diagnose", Command: "node diagnose", ID: "HC505", Name: "clock-skew", Severity: "error",
		What: "the clock", Why: "certificates", Fix: "chrony", Guide: "If the node is NotReady"}
	want := "HC505 clock-skew (error) · node diagnose (hybridctl node diagnose)\n\nthe clock\n\n" +
		"Why:\n  certificates\n\nFix:\n  chrony\n\nGuide:\n  If the node is NotReady\n"
	if got := e.Text(); got != want {
		t.Errorf("Text:\n%s\nwant:\n%s", got, want)
	}
	e = Entry{Catalogue: "preflight", Command: "apply", ID: "swap", Name: "swap", What: "no swap"}
	if got := e.Text(); got != "swap · preflight (hybridctl apply)\n\nno swap\n" {
		t.Errorf("Text without parts: %q", got)
	}
	if strings.Contains(e.Text(), "Why") {
		t.Error("an empty part is shown")
	}
}
