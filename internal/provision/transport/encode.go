package transport

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// EncodePowerShell encodes script for powershell.exe -EncodedCommand:
// base64 of the UTF-16LE text. The result uses only [A-Za-z0-9+/=], so it
// passes through cmd.exe (OpenSSH's default shell on Windows), PowerShell
// and any quoting layer unchanged: no quoting can break it.
func EncodePowerShell(script string) string {
	u := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodePowerShell reverses EncodePowerShell.
func DecodePowerShell(encoded string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", fmt.Errorf("-EncodedCommand: %w", err)
	}
	if len(b)%2 != 0 {
		return "", errors.New("-EncodedCommand: odd number of bytes for UTF-16")
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u)), nil
}

// powerShellPreamble makes PowerShell scripts fail like `set -e` shells:
// a terminating error or a native command's non-zero exit code ends the
// script with a non-zero exit code and the message on stderr. Progress bars
// (which would otherwise be serialized as CLIXML onto stderr) are off.
//
// Invoke-Native runs a program with 'Continue' in its own scope: Windows
// PowerShell 5.1 turns every stderr line of a native program into an error
// record when output is redirected (as it is over SSH), and 'Stop' would
// make the first one fatal. stdout goes on, stderr is shown, the exit code
// alone decides (a failure throws). Every program hybridctl runs on Windows
// goes through it (NativeCommand).
const powerShellPreamble = `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
function Invoke-Native {
    param([string] $Program, [object[]] $Arguments = @(), [int[]] $Ok = @(0))
    $app = Get-Command -Name $Program -CommandType Application -ErrorAction Stop | Select-Object -First 1
    $ErrorActionPreference = 'Continue'
    & $app.Source @Arguments 2>&1 | ForEach-Object {
        if ($_ -is [System.Management.Automation.ErrorRecord]) { [Console]::Error.WriteLine("$_") } else { $_ }
    }
    $code = $LASTEXITCODE
    if ($Ok -notcontains $code) { throw "$Program exited with $code" }
}
`

// NativeCommand is the PowerShell line that runs program with args through
// the preamble's Invoke-Native, every word quoted.
func NativeCommand(program string, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = PSQuote(a)
	}
	return "Invoke-Native " + PSQuote(program) + " @(" + strings.Join(q, ", ") + ")"
}

// WrapPowerShell returns the full script hybridctl sends for script: the
// preamble, the script in a script block, and an exit code that reflects
// both PowerShell errors and the last native command's exit code.
func WrapPowerShell(script string) string {
	return powerShellPreamble + "try {\n& {\n" + script + "\n}\nif ($LASTEXITCODE) { exit $LASTEXITCODE }\n} catch {\n[Console]::Error.WriteLine($_.ToString())\nexit 1\n}\n"
}

// PowerShellCommand is the command line that runs script on a Windows host
// over OpenSSH.
func PowerShellCommand(script string) string {
	return "powershell -NoProfile -NonInteractive -EncodedCommand " + EncodePowerShell(WrapPowerShell(script))
}

// PSQuote quotes s as a PowerShell single-quoted string literal (in which
// only the single quote is special, written twice).
func PSQuote(s string) string {
	// PowerShell also treats the typographic single quotes as quote
	// characters; double them too.
	r := strings.NewReplacer("'", "''", "\u2018", "\u2018\u2018", "\u2019", "\u2019\u2019", "\u201a", "\u201a\u201a", "\u201b", "\u201b\u201b")
	return "'" + r.Replace(s) + "'"
}

// ShellQuote quotes s for a POSIX shell as one word: single quotes, with
// embedded single quotes written as '\”.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// validText reports whether s can be sent as a command: valid UTF-8 and
// no NUL bytes (which neither sh -c nor a Windows command line can carry).
func validText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("command is not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New("command contains a NUL byte")
	}
	return nil
}
