// Package termcolor decides whether output gets colour and paints
// severities: errors red, warnings yellow, info cyan. Colour is only for
// people: it is on only when the stream is a terminal, NO_COLOR is not set
// (https://no-color.org: any non-empty value) and TERM is not dumb, so
// pipes, files, CI logs and scripts always get plain text.
package termcolor

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Palette paints text, or leaves it alone when off (the zero value).
type Palette struct {
	on bool
}

// On returns a palette that always paints (tests, and Auto's result).
func On() Palette { return Palette{on: true} }

// Enabled reports whether the palette paints.
func (p Palette) Enabled() bool { return p.on }

// Auto returns the palette for w: painting only when w is a terminal,
// getenv("NO_COLOR") is empty and getenv("TERM") is not "dumb".
func Auto(w io.Writer, getenv func(string) string) Palette {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return Palette{}
	}
	f, ok := w.(*os.File)
	// On Windows a console shows SGR sequences only once asked to
	// (enableVT); where it cannot be, no colour.
	return Palette{on: ok && IsTerminal(w) && enableVT(f)}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// SGR codes.
const (
	red    = "31"
	yellow = "33"
	cyan   = "36"
	bold   = "1"
)

func (p Palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Severity paints s in the colour of severity sev ("error", "warning",
// "info"); other severities are left plain.
func (p Palette) Severity(sev, s string) string {
	switch sev {
	case "error":
		return p.paint(red, s)
	case "warning":
		return p.paint(yellow, s)
	case "info":
		return p.paint(cyan, s)
	}
	return s
}

// Bold paints s bold.
func (p Palette) Bold(s string) string { return p.paint(bold, s) }
