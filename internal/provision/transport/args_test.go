//go:build unix

package transport

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// TestRunArgs: positional arguments reach a Linux script as data, exactly
// (quotes, $( ), backquotes, a leading dash, an empty word, a line break),
// through sudo -n as root; the command that ran is the script's quoted word
// and then each argument's; nothing of an argument runs.
func TestRunArgs(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Sudo = true
	c := dial(t, cfg)
	pwned := filepath.Join(t.TempDir(), "pwned")
	args := []string{"it's $(touch " + pwned + ")", "`touch " + pwned + "`", "-o", "", "a\nb"}
	script := `for a in "$0" "$@"; do printf '[%s]\n' "$a"; done`
	res, err := c.RunArgs(ctxT(t), script, args, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := "[hybridctl]\n[it's $(touch " + pwned + ")]\n[`touch " + pwned + "`]\n[-o]\n[]\n[a\nb]\n"
	if string(res.Stdout) != want {
		t.Errorf("the script saw\n%s\nwant\n%s", res.Stdout, want)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("an argument ran a command")
	}
	line := "sudo -n -- sh -c 'set -e\n" + strings.ReplaceAll(script, "'", `'\''`) + "' hybridctl 'it'\\''s $(touch " + pwned + ")' '`touch " + pwned + "`' -o '' 'a\nb'"
	if cmds := f.srv.Commands(); len(cmds) != 1 || cmds[0] != line {
		t.Errorf("command\n%q\nwant\n%q", cmds, line)
	}
	if got, _ := c.CommandLineArgs(script, args...); got != line {
		t.Errorf("CommandLineArgs %q", got)
	}
	// Without arguments the line is CommandLine's; without sudo no sudo.
	if got, _ := c.CommandLineArgs("true"); got != c.CommandLine("true") {
		t.Errorf("no arguments: %q", got)
	}
	cfg.Sudo = false
	if got, _ := dial(t, cfg).CommandLineArgs("true", "x y"); got != "sh -c 'set -e\ntrue' hybridctl 'x y'" {
		t.Errorf("without sudo: %q", got)
	}

	// A NUL cannot be an argument; Windows has no positional form. Neither
	// is sent.
	var ce *CommandError
	if _, err := c.RunArgs(ctxT(t), "true", []string{"ok", "a\x00b"}, nil, Limits{}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "argument 2: command contains a NUL byte") {
		t.Errorf("a NUL: %v", err)
	}
	cfg.OS = engine.Windows
	if _, err := dial(t, cfg).RunArgs(ctxT(t), "true", []string{"x"}, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "a Windows script takes data on standard input") {
		t.Errorf("Windows: %v", err)
	}
	if n := len(f.srv.Commands()); n != 1 {
		t.Errorf("%d commands sent, want only the first", n)
	}
}
