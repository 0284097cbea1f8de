package termcolor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctl/hybridctl/internal/testutil/pty"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestAuto: colour only on a real terminal, and never with NO_COLOR set
// or TERM=dumb.
func TestAuto(t *testing.T) {
	tty := pty.Open(t).TTY
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	xterm := map[string]string{"TERM": "xterm-256color"}
	for _, c := range []struct {
		name string
		w    any
		env  map[string]string
		want bool
	}{
		{"terminal", tty, xterm, true},
		{"terminal, no TERM at all", tty, nil, true},
		{"terminal, NO_COLOR=1", tty, map[string]string{"TERM": "xterm", "NO_COLOR": "1"}, false},
		{"terminal, NO_COLOR=0 (any value)", tty, map[string]string{"NO_COLOR": "0"}, false},
		{"terminal, NO_COLOR empty (unset per no-color.org)", tty, map[string]string{"NO_COLOR": ""}, true},
		{"terminal, TERM=dumb", tty, map[string]string{"TERM": "dumb"}, false},
		{"pipe", w, xterm, false},
		{"regular file", file, xterm, false},
		{"buffer", &bytes.Buffer{}, xterm, false},
	} {
		p := Auto(c.w.(interface{ Write([]byte) (int, error) }), env(c.env))
		if p.Enabled() != c.want {
			t.Errorf("%s: colour %v, want %v", c.name, p.Enabled(), c.want)
		}
	}
}

func TestPaint(t *testing.T) {
	on, off := On(), Palette{}
	for _, c := range []struct{ sev, want string }{
		{"error", "\x1b[31mX\x1b[0m"},
		{"warning", "\x1b[33mX\x1b[0m"},
		{"info", "\x1b[36mX\x1b[0m"},
		{"ok", "X"},
	} {
		if got := on.Severity(c.sev, "X"); got != c.want {
			t.Errorf("%s: %q, want %q", c.sev, got, c.want)
		}
		if got := off.Severity(c.sev, "X"); got != "X" {
			t.Errorf("off %s: %q", c.sev, got)
		}
	}
	if on.Severity("error", "") != "" {
		t.Errorf("empty text gets escape codes")
	}
}
