//go:build unix

package transport_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
)

// windowsClient dials the loopback SSH server as a Windows host (its
// powershell stand-in decodes the -EncodedCommand line and saves stdin).
func windowsClient(t *testing.T) (*transport.Client, *sshtest.Server) {
	t.Helper()
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, transport.Config{Host: "win-1", Address: srv.Addr, User: "administrator", OS: engine.Windows,
		KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// sentScript is the PowerShell text of the last command the server
// received, decoded from its -EncodedCommand line.
func sentScript(t *testing.T, srv *sshtest.Server) string {
	t.Helper()
	cmds := srv.Commands()
	const prefix = "powershell -NoProfile -NonInteractive -EncodedCommand "
	last := cmds[len(cmds)-1]
	if !strings.HasPrefix(last, prefix) {
		t.Fatalf("not a PowerShell command line: %.80q", last)
	}
	s, err := transport.DecodePowerShell(strings.TrimPrefix(last, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// at returns the offset of the one occurrence of sub in s.
func at(t *testing.T, name, s, sub string) int {
	t.Helper()
	if n := strings.Count(s, sub); n != 1 {
		t.Errorf("%s: %q occurs %d times, want once", name, sub, n)
		return -1
	}
	return strings.Index(s, sub)
}

// checkReceiveScript checks one upload as the node receives it: the
// temporary file gets a random name and is created new, with a protected
// ACL of Administrators and SYSTEM, before a byte of content is written to
// it; every step after its creation is in a try whose catch removes it; a
// private file is never given another ACL, a public one gets the
// directory's inherited permissions only after it is in place.
func checkReceiveScript(t *testing.T, name, s, tag string, private, checked bool) {
	t.Helper()
	for _, never := range []string{"[System.IO.File]::", "FileMode]::Create,", "FileMode]::OpenOrCreate", "Set-Content", "Out-File", "icacls.exe' @($tmp"} {
		if strings.Contains(s, never) {
			t.Errorf("%s: the script has %q: a file created outside the restricted FileStream", name, never)
		}
	}
	protect := at(t, name, s, "$sec.SetAccessRuleProtection($true, $false)")
	sids := at(t, name, s, "foreach ($sid in @('S-1-5-32-544', 'S-1-5-18')) {")
	rule := at(t, name, s, "$sec.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($id, [System.Security.AccessControl.FileSystemRights]::FullControl, [System.Security.AccessControl.AccessControlType]::Allow)))")
	random := at(t, name, s, "$tmp = $dst + '.hybridctl-"+tag+"-' + [guid]::NewGuid().ToString('N')")
	create := at(t, name, s, "$f = [System.IO.FileStream]::new($tmp, [System.IO.FileMode]::CreateNew, [System.Security.AccessControl.FileSystemRights]::Write, [System.IO.FileShare]::None, 65536, [System.IO.FileOptions]::None, $sec)\ntry {\n")
	write := at(t, name, s, "$f.Write($bytes, 0, $bytes.Length)")
	move := at(t, name, s, "Move-Item -Force -LiteralPath $tmp -Destination $dst\n} catch {\n  Remove-Item -Force -LiteralPath $tmp -ErrorAction SilentlyContinue\n  throw\n}\n")
	if t.Failed() {
		t.Logf("%s:\n%s", name, s)
		return
	}
	if !(protect < rule && sids < rule && rule < create && random < create && create < write && write < move) {
		t.Errorf("%s: order protect %d, rule %d, name %d, create %d, write %d, move %d: the ACL must exist before the file, the file before its content", name, protect, rule, random, create, write, move)
	}
	if got := regexp.MustCompile(`AddAccessRule`).FindAllStringIndex(s, -1); len(got) != 1 {
		t.Errorf("%s: %d access rules added, want the one for the two SIDs", name, len(got))
	}
	if hash := strings.Index(s, "Get-FileHash"); checked && (hash < write || hash > move) {
		t.Errorf("%s: the sha256 is not checked between the write and the move", name)
	}
	reset := strings.Index(s, "Invoke-Native 'icacls.exe' @($dst, '/reset') | Out-Null")
	switch {
	case private && (reset >= 0 || strings.Contains(s, "icacls")):
		t.Errorf("%s: a private file's ACL is changed after creation", name)
	case !private && reset < move:
		t.Errorf("%s: a public file gets the inherited permissions before it is in place (or never): %d", name, reset)
	}
}

// TestWindowsReceiveScriptACLFirst: the Windows upload of a secret (the
// join configuration) and of a bundle file, as sent to the loopback sshd:
// the exact PowerShell it ran, parsed by the PowerShell grammar, with the
// restricted ACL set before the content is written.
func TestWindowsReceiveScriptACLFirst(t *testing.T) {
	c, srv := windowsClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secret := []byte("apiVersion: kubeadm.k8s.io/v1beta4\ntoken: abcdef.0123456789abcdef\n")
	sum := sha256.Sum256(secret)
	var scripts []pwshtest.Script
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		stream  bool
		private bool
	}{
		{"Upload 0600", 0o600, false, true},
		{"Upload 0644", 0o644, false, false},
		{"UploadStream 0644", 0o644, true, false},
		{"UploadStream 0600", 0o600, true, true},
	} {
		var err error
		tag := "upload"
		if tc.stream {
			tag = "part"
			err = c.UploadStream(ctx, `C:\k\join.yaml`, bytes.NewReader(secret), hex.EncodeToString(sum[:]), tc.mode)
		} else {
			err = c.Upload(ctx, `C:\k\join.yaml`, secret, tc.mode)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := sentScript(t, srv)
		if strings.Contains(s, "0123456789abcdef") {
			t.Errorf("%s: the secret is in the command", tc.name)
		}
		checkReceiveScript(t, tc.name, s, tag, tc.private, tc.stream)
		scripts = append(scripts, pwshtest.Script{Name: tc.name, Text: s})
	}
	pwshtest.Check(t, scripts...)
}
