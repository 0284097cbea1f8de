package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testutil/pty"
)

const esc = "\x1b["

// TestColorOnTerminalsOnly runs lint, plan and an invalid spec with their
// output on a real terminal (a pty) and elsewhere: severities are coloured
// only on the terminal, and never with NO_COLOR set or TERM=dumb.
func TestColorOnTerminalsOnly(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, bytes.Replace(examples.Lab, []byte("name: k8s-lab-win-1"), []byte("name: k8s-lab-windows-01"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	warn := filepath.Join(dir, "warn.yaml")
	if err := os.WriteFile(warn, bytes.Replace(examples.Lab, []byte("mode: nftables"), []byte("mode: ipvs"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	type want struct {
		stream string // "out" or "err": where the coloured text goes
		text   string // a coloured piece
	}
	cases := []struct {
		name string
		args []string
		want want
	}{
		{"lint table", []string{"lint", "testdata/lint-sample.yaml"}, want{"out", esc + "31mERROR ("}},
		{"plan warnings", []string{"plan", "-f", warn}, want{"out", esc + "33mWARNINGS" + esc + "0m"}},
		{"invalid spec", []string{"plan", "-f", bad}, want{"err", esc + "31m" + bad + ":109: spec.nodes[3].name"}},
	}
	runOn := func(t *testing.T, args []string, terminalOut, terminalErr bool) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		var outW, errW any = &out, &errOut
		var to, te *pty.Terminal
		if terminalOut {
			to = pty.Open(t)
			outW = to.TTY
		}
		if terminalErr {
			te = pty.Open(t)
			errW = te.TTY
		}
		Main(context.Background(), args, strings.NewReader(""), outW.(interface{ Write([]byte) (int, error) }), errW.(interface{ Write([]byte) (int, error) }))
		so, se := out.String(), errOut.String()
		if to != nil {
			so = to.Output()
		}
		if te != nil {
			se = te.Output()
		}
		return so, se
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", "")
			t.Setenv("TERM", "xterm-256color")
			onOut, onErr := c.want.stream == "out", c.want.stream == "err"
			so, se := runOn(t, c.args, onOut, onErr)
			got := so
			if onErr {
				got = se
			}
			if !strings.Contains(got, c.want.text) {
				t.Errorf("on a terminal: no %q in\n%q", c.want.text, got)
			}
			// Piped (a buffer), NO_COLOR, TERM=dumb: plain text.
			so, se = runOn(t, c.args, false, false)
			if strings.Contains(so+se, esc) {
				t.Errorf("piped: escape codes in %q", so+se)
			}
			for _, e := range [][2]string{{"NO_COLOR", "1"}, {"TERM", "dumb"}} {
				t.Setenv(e[0], e[1])
				so, se = runOn(t, c.args, onOut, onErr)
				if strings.Contains(so+se, esc) {
					t.Errorf("%s=%s: escape codes in %q", e[0], e[1], so+se)
				}
				t.Setenv("NO_COLOR", "")
				t.Setenv("TERM", "xterm-256color")
			}
		})
	}
	// Machine formats stay plain on a terminal.
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	for _, f := range []string{"json", "sarif", "junit"} {
		if so, _ := runOn(t, []string{"lint", "testdata/lint-sample.yaml", "-o", f}, true, false); strings.Contains(so, esc) || !strings.Contains(so, "HC") {
			t.Errorf("lint -o %s on a terminal: %q", f, so)
		}
	}
}

// TestLiveViewOnTerminalsOnly: apply and reset draw their live view (a
// status block redrawn with cursor movements) only on a terminal, and
// never with NO_COLOR set (any non-empty value) or TERM=dumb: those get
// the plain progress lines, as a pipe does.
func TestLiveViewOnTerminalsOnly(t *testing.T) {
	sess := &session{}
	live := func(out io.Writer, env map[string]string) bool {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		r := sess.reporterFor(&provisionFlags{output: "text"}, out, nil, "apply")
		l, ok := r.(*engine.LiveReporter)
		if ok {
			l.Close()
		}
		return ok
	}
	tty := pty.Open(t).TTY
	if !live(tty, map[string]string{"NO_COLOR": "", "TERM": "xterm-256color"}) {
		t.Errorf("no live view on a terminal")
	}
	for _, env := range []map[string]string{
		{"NO_COLOR": "1", "TERM": "xterm-256color"},
		{"NO_COLOR": "false", "TERM": "xterm-256color"},
		{"NO_COLOR": "", "TERM": "dumb"},
	} {
		if live(tty, env) {
			t.Errorf("%v: a live view on a terminal", env)
		}
	}
	var buf bytes.Buffer
	if live(&buf, map[string]string{"NO_COLOR": "", "TERM": "xterm-256color"}) {
		t.Errorf("a live view on a pipe")
	}
}
