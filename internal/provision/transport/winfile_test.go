package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

func windowsClient(t *testing.T) (*fixture, *Client) {
	t.Helper()
	f := newFixture(t)
	cfg := f.config()
	cfg.OS = engine.Windows
	return f, dial(t, cfg)
}

// A Windows command line of 8,191 characters (cmd.exe's limit, counted in
// UTF-16 code units) is sent; one of 8,192 is refused with the host and the
// length, and nothing reaches the host.
func TestWindowsCommandLineLimit(t *testing.T) {
	f, c := windowsClient(t)
	pad := func(n int) string { return "echo " + strings.Repeat("x", n-len("echo ")) }
	ok := pad(MaxWindowsCommandLine)
	res, err := c.Exec(ctxT(t), ok, nil)
	if err != nil || len(res.Stdout) != MaxWindowsCommandLine-len("echo ")+1 {
		t.Fatalf("a line of %d characters: %v", MaxWindowsCommandLine, err)
	}
	sent := len(f.srv.Commands())
	for name, line := range map[string]string{
		"8192 ASCII": pad(MaxWindowsCommandLine + 1),
		// 8,191 runes, but the last takes two UTF-16 code units.
		"8191 runes, 8192 UTF-16": pad(MaxWindowsCommandLine-1) + "\U0001F600",
	} {
		_, err := c.Exec(ctxT(t), line, nil)
		var ce *CommandError
		if !errors.Is(err, ErrCommandLineTooLong) || !errors.As(err, &ce) || ce.Host != "node-1" ||
			!strings.Contains(err.Error(), "node-1") || !strings.Contains(err.Error(), "8192 characters") {
			t.Errorf("%s: want a refusal naming node-1 and 8192 characters, got %v", name, err)
		}
	}
	if n := len(f.srv.Commands()); n != sent {
		t.Errorf("a refused line reached the host (%d commands, want %d)", n, sent)
	}
	// Linux has no such limit.
	cl := dial(t, f.config())
	if _, err := cl.Exec(ctxT(t), pad(MaxWindowsCommandLine+1), nil); err != nil {
		t.Errorf("Linux: %v", err)
	}
}

// longestEncoded returns the longest script (a comment line) whose
// -EncodedCommand line fits MaxWindowsCommandLine.
func longestEncoded(t *testing.T) string {
	t.Helper()
	s := ""
	for n := 1; ; n++ {
		next := "#" + strings.Repeat("y", n)
		if len(PowerShellCommand(next)) > MaxWindowsCommandLine {
			break
		}
		s = next
	}
	if l := len(PowerShellCommand(s)); l < MaxWindowsCommandLine-4 {
		t.Fatalf("the longest fitting line is %d characters, far from the limit", l)
	}
	return s
}

// A script whose -EncodedCommand line fits is sent that way; one character
// more and it is uploaded to a new file in C:\Windows\Temp, run with -File
// (with the same wrapper and the same standard input), and removed.
func TestRunWindowsLongScriptAsFile(t *testing.T) {
	f, c := windowsClient(t)
	fits := longestEncoded(t)
	res, err := c.RunWithStdin(ctxT(t), fits, strings.NewReader("in-1\n"))
	cmds := f.srv.Commands()
	if err != nil || len(cmds) != 1 || cmds[0] != PowerShellCommand(fits) || string(res.Stdout) != WrapPowerShell(fits) {
		t.Fatalf("the longest fitting script: err %v, commands %d", err, len(cmds))
	}

	long := fits + "y"
	res, err = c.RunWithStdin(ctxT(t), long, strings.NewReader("in-2\n"))
	if err != nil {
		t.Fatal(err)
	}
	cmds = f.srv.Commands()[1:]
	if len(cmds) != 2 {
		t.Fatalf("want an upload and a -File run, got %d commands", len(cmds))
	}
	for _, l := range cmds {
		if len(l) > MaxWindowsCommandLine {
			t.Errorf("a command line of %d characters", len(l))
		}
	}
	run, ok := strings.CutPrefix(cmds[1], `powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "`+WindowsScriptDir+`\hybridctl-`)
	if !ok || len(run) != 32+len(`.ps1"`) || !strings.HasSuffix(run, `.ps1"`) {
		t.Fatalf("run: %q", cmds[1])
	}
	path := WindowsScriptDir + `\hybridctl-` + strings.TrimSuffix(run, `"`)
	up, err := DecodePowerShell(strings.TrimPrefix(cmds[0], "powershell -NoProfile -NonInteractive -EncodedCommand "))
	if err != nil || up != WrapPowerShell(windowsReceiveScript(path, "upload", "", true)) {
		t.Errorf("the upload is not the private receive script for %s (%v)", path, err)
	}
	// What ran: the file's own removal first, then the script in the
	// -EncodedCommand wrapper; standard input reached it.
	want := "Remove-Item -LiteralPath " + PSQuote(path) + " -Force -ErrorAction SilentlyContinue\n" + WrapPowerShell(long)
	if string(res.Stdout) != want {
		t.Errorf("the file ran:\n%.300s\nwant\n%.300s", res.Stdout, want)
	}
	if in, _ := os.ReadFile(filepath.Join(f.srv.Dir, "powershell.stdin")); string(in) != "in-2\n" {
		t.Errorf("stdin of the -File run: %q", in)
	}
	if _, err := os.Stat(f.srv.WindowsFile(path)); !os.IsNotExist(err) {
		t.Errorf("the script file stays on the host: %v", err)
	}
	// Two runs, two names.
	if _, err := c.Run(ctxT(t), long); err != nil {
		t.Fatal(err)
	}
	if again := f.srv.Commands(); again[len(again)-1] == cmds[1] {
		t.Error("the second run reused the first run's file name")
	}
}

// A -File run that fails (here refused as by an execution policy) or is
// cancelled still removes its file; the failure is the run's, with its
// output and exit code.
func TestRunWindowsFileCleanup(t *testing.T) {
	f, c := windowsClient(t)
	real, err := os.ReadFile(filepath.Join(f.srv.Dir, "bin", "powershell"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Shim("powershell-real", string(real))
	f.srv.Shim("powershell", `#!/bin/sh
[ "$5" = -File ] && ls "$SHIM_DIR/files" > "$SHIM_DIR/seen"
if [ "$5" = -File ] && [ -e "$SHIM_DIR/refuse" ]; then echo "$6 cannot be loaded because running scripts is disabled on this system." >&2; exit 1; fi
if [ "$5" = -File ] && [ -e "$SHIM_DIR/hang" ]; then sleep 30; exit 0; fi
exec powershell-real "$@"
`)
	long := longestEncoded(t) + "y"
	files := func() []string {
		e, _ := os.ReadDir(filepath.Join(f.srv.Dir, "files"))
		var names []string
		for _, x := range e {
			names = append(names, x.Name())
		}
		return names
	}
	seen := func() string {
		b, _ := os.ReadFile(filepath.Join(f.srv.Dir, "seen"))
		return strings.TrimSpace(string(b))
	}

	if err := os.WriteFile(filepath.Join(f.srv.Dir, "refuse"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(ctxT(t), long)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 || ce.Command != long || !strings.Contains(string(ce.Stderr), "running scripts is disabled") {
		t.Errorf("want the run's failure, got %v", err)
	}
	if left := files(); len(left) != 0 || !strings.HasPrefix(seen(), "C__Windows_Temp_hybridctl-") {
		t.Errorf("files left after a failed run: %v (there during the run: %q)", left, seen())
	}
	if n := len(f.srv.Commands()); n != 3 {
		t.Errorf("%d commands, want upload, run, removal", n)
	}

	_ = os.Remove(filepath.Join(f.srv.Dir, "seen"))
	if err := os.Rename(filepath.Join(f.srv.Dir, "refuse"), filepath.Join(f.srv.Dir, "hang")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err = c.Run(ctx, long)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 15*time.Second {
		t.Errorf("cancelled run: %v after %s", err, time.Since(t0))
	}
	if left := files(); len(left) != 0 || !strings.HasPrefix(seen(), "C__Windows_Temp_hybridctl-") {
		t.Errorf("files left after a cancelled run: %v (there during the run: %q)", left, seen())
	}
}

// TestDescribeWindowsRun: a dry run shows a script as Run sends it, on
// both sides of cmd.exe's limit: the -EncodedCommand line up to 8,191
// characters, the upload and -File run from 8,192 on; and the loopback
// server receives exactly that form.
func TestDescribeWindowsRun(t *testing.T) {
	// The longest script whose -EncodedCommand line fits.
	n := 1
	for windowsLineLen(PowerShellCommand(strings.Repeat("a", n+1))) <= MaxWindowsCommandLine {
		n++
	}
	fits, over := strings.Repeat("a", n), strings.Repeat("a", n+1)
	if l := windowsLineLen(PowerShellCommand(fits)); l > MaxWindowsCommandLine || l < MaxWindowsCommandLine-4 {
		t.Fatalf("the longest fitting line is %d characters", l)
	}
	short := DescribeWindowsRun(fits, "WHAT")
	want := fmt.Sprintf("run powershell -NoProfile -NonInteractive -EncodedCommand (%d characters: the script in hybridctl's PowerShell wrapper): WHAT", windowsLineLen(PowerShellCommand(fits)))
	if short != want {
		t.Errorf("fits:\n got %s\nwant %s", short, want)
	}
	long := DescribeWindowsRun(over, "WHAT")
	for _, w := range []string{`upload to C:\Windows\Temp\hybridctl-RANDOM.ps1`, fmt.Sprintf("it would be %d characters, over cmd.exe's 8191", windowsLineLen(PowerShellCommand(over))),
		`run powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\Windows\Temp\hybridctl-RANDOM.ps1"`, ": WHAT"} {
		if !strings.Contains(long, w) {
			t.Errorf("over the limit, lacks %q:\n%s", w, long)
		}
	}

	// What the server receives is the form described.
	f, c := windowsClient(t)
	for _, s := range []string{fits, over} {
		before := len(f.srv.Commands())
		if _, err := c.Run(ctxT(t), s); err != nil {
			t.Fatal(err)
		}
		cmds := f.srv.Commands()[before:]
		last := cmds[len(cmds)-1]
		asFile := strings.HasPrefix(last, `powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\Windows\Temp\hybridctl-`)
		if described := strings.HasPrefix(DescribeWindowsRun(s, ""), "upload "); asFile != described {
			t.Errorf("a script of %d characters: sent as a file %v, described as one %v", len(s), asFile, described)
		}
	}
}
