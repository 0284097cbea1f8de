package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf16"
)

// MaxWindowsCommandLine is the longest command line, in UTF-16 code units,
// sent to a Windows host. Win32-OpenSSH runs an exec request through the
// default shell, cmd.exe unless HKLM\SOFTWARE\OpenSSH\DefaultShell names
// another (Microsoft, "OpenSSH Server configuration for Windows"), and
// cmd.exe refuses a command longer than 8,191 characters with "The command
// line is too long." (Microsoft, "Command prompt (Cmd.exe) command-line
// string limitation"). A longer line is refused before it is sent.
const MaxWindowsCommandLine = 8191

// WindowsScriptDir is where a script too long for a command line is
// uploaded on a Windows host: the system's temporary directory, present on
// every Windows installation, so running a read-only script creates no
// directory of its own.
const WindowsScriptDir = `C:\Windows\Temp`

// ErrCommandLineTooLong is the cause of a Windows command line refused for
// its length.
var ErrCommandLineTooLong = errors.New("command line too long for cmd.exe")

// windowsLineLen is the length of line as cmd.exe counts it (UTF-16 code
// units).
func windowsLineLen(line string) int {
	n := 0
	for _, r := range line {
		n += utf16.RuneLen(r)
	}
	return n
}

// checkWindowsLine refuses a command line longer than MaxWindowsCommandLine.
func checkWindowsLine(line string) error {
	if n := windowsLineLen(line); n > MaxWindowsCommandLine {
		return fmt.Errorf("%w: the command line is %d characters, cmd.exe (OpenSSH's default shell on Windows) accepts at most %d; nothing was sent", ErrCommandLineTooLong, n, MaxWindowsCommandLine)
	}
	return nil
}

// WindowsFileCommand is the command line that runs the script file path
// with Windows PowerShell: -File as the last parameter (everything after it
// is the script's path and arguments, about_PowerShell_exe), no profile, no
// prompts, and the process's execution policy Bypass (as apply runs
// prepare.ps1: Group Policy's MachinePolicy and UserPolicy scopes still take
// precedence, about_Execution_Policies). The path is in double quotes, as
// cmd.exe passes it through and PowerShell's argument parsing removes them;
// it must hold no double quote or % (which cmd.exe expands even in quotes),
// as the names runWindowsFile makes do not.
func WindowsFileCommand(path string) string {
	return `powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + path + `"`
}

// windowsScriptFile is what is uploaded to path for script: UTF-8 with a
// byte order mark (Windows PowerShell 5.1 reads a script file without one
// in the ANSI code page, ExternalScriptInfo.ReadScriptContents), a first
// line that removes the file, and the script in the same wrapper as
// -EncodedCommand (WrapPowerShell). PowerShell has read the whole file
// before it runs its first line (ReadScriptContents reads to the end and
// closes the file), so the file is gone as soon as the script starts, even
// if the connection drops later.
func windowsScriptFile(path, script string) []byte {
	return []byte("\ufeffRemove-Item -LiteralPath " + PSQuote(path) + " -Force -ErrorAction SilentlyContinue\n" + WrapPowerShell(script))
}

// runWindowsFile runs a script whose -EncodedCommand line would be longer
// than cmd.exe accepts. The script is uploaded to a new file under a random
// name in WindowsScriptDir (Upload: created with an Administrators-and-
// SYSTEM ACL before its first byte, removed if the upload fails), run with
// -File, and removed: by its own first line, or, when the run fails (it may
// have never started, e.g. refused by an execution policy from Group
// Policy), by hybridctl, on a context of its own so a cancelled run still
// cleans up.
//
// Standard input goes to the script as with -EncodedCommand: PowerShell's
// console host reads it into the pipeline for -File exactly as for
// -Command, only when the script's text names $input (ConsoleHost.cs,
// AstSearcher.IsUsingDollarInput), so [Console]::In is the script's own.
// That is why the script is uploaded rather than sent on standard input
// ahead of the script's own input: standard input stays the script's, with
// no framing of its own, and -File is how apply already runs prepare.ps1
// (so it needs nothing more of the host's execution policy).
func (c *Client) runWindowsFile(ctx context.Context, script string, stdin io.Reader, l Limits) (*Result, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, &CommandError{Host: c.cfg.Host, Command: script, ExitCode: -1, Err: err}
	}
	path := WindowsScriptDir + `\hybridctl-` + hex.EncodeToString(b[:]) + ".ps1"
	if err := c.Upload(ctx, path, windowsScriptFile(path, script), 0o600); err != nil {
		return nil, fmt.Errorf("sending a script of %d characters to %s as a file: %w", len(script), c.cfg.Host, err)
	}
	res, err := c.exec(ctx, script, WindowsFileCommand(path), stdin, l)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		rm := "Remove-Item -LiteralPath " + PSQuote(path) + " -Force -ErrorAction SilentlyContinue"
		_, _ = c.exec(rctx, rm, PowerShellCommand(rm), nil, Limits{})
		cancel()
	}
	return res, err
}

// DescribeWindowsRun says, for a dry run, how Run would send script to a
// Windows host, shown as what: as the -EncodedCommand line, with its
// length, or, when that line would be longer than MaxWindowsCommandLine,
// as the upload and -File run that really happen (runWindowsFile), under
// the name pattern the upload uses (its 32 hex digits are random).
// Either way the script runs inside hybridctl's wrapper (WrapPowerShell).
func DescribeWindowsRun(script, what string) string {
	n := windowsLineLen(PowerShellCommand(script))
	if n > MaxWindowsCommandLine {
		path := WindowsScriptDir + `\hybridctl-RANDOM.ps1`
		return fmt.Sprintf("upload to %s (the script in hybridctl's PowerShell wrapper: as -EncodedCommand it would be %d characters, over cmd.exe's %d), run %s, the file removed by its own first line: %s",
			path, n, MaxWindowsCommandLine, WindowsFileCommand(path), what)
	}
	return fmt.Sprintf("run powershell -NoProfile -NonInteractive -EncodedCommand (%d characters: the script in hybridctl's PowerShell wrapper): %s", n, what)
}
