package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// fixture is a server, a client key it trusts and a known_hosts file that
// has the server's key.
type fixture struct {
	srv        *sshtest.Server
	key        *sshtest.Key
	knownHosts string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	return &fixture{srv: srv, key: key, knownHosts: kh}
}

func (f *fixture) config() Config {
	return Config{Host: "node-1", Address: f.srv.Addr, User: "user", KeyFiles: []string{f.key.Path},
		KnownHosts: &KnownHosts{Path: f.knownHosts}, ConnectTimeout: 5 * time.Second}
}

func dial(t *testing.T, cfg Config) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestKeyAuthAndRun(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	res, err := c.Run(ctxT(t), "echo hello; echo warning >&2")
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "hello\n" || string(res.Stderr) != "warning\n" || res.ExitCode != 0 {
		t.Errorf("got stdout %q stderr %q code %d", res.Stdout, res.Stderr, res.ExitCode)
	}
	// Sessions are independent and concurrent.
	errs := make(chan error, 5)
	for range 5 {
		go func() { _, err := c.Run(ctxT(t), "sleep 0.1"); errs <- err }()
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// serveAgent serves keyring as an SSH agent on a Unix socket until the end
// of the test and returns the socket's path; open, when not nil, counts
// the agent connections not closed yet.
func serveAgent(t *testing.T, keyring agent.Agent, open *atomic.Int64) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if open != nil {
				open.Add(1)
			}
			go func() {
				_ = agent.ServeAgent(keyring, c)
				_ = c.Close()
				if open != nil {
					open.Add(-1)
				}
			}()
		}
	}()
	return sock
}

func TestAgentAuth(t *testing.T) {
	f := newFixture(t)
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: f.key.Priv}); err != nil {
		t.Fatal(err)
	}
	sock := serveAgent(t, keyring, nil)
	cfg := f.config()
	cfg.KeyFiles = nil
	cfg.AgentSocket = sock
	c := dial(t, cfg)
	res, err := c.Run(ctxT(t), "echo via-agent")
	if err != nil || string(res.Stdout) != "via-agent\n" {
		t.Fatalf("agent auth: %v", err)
	}
}

func TestUnauthorizedKeyRefused(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.KeyFiles = []string{sshtest.NewKey(t).Path}
	_, err := Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "unable to authenticate") || !strings.Contains(err.Error(), "node-1") {
		t.Fatalf("want an authentication error naming the host, got %v", err)
	}
}

func TestEncryptedKeyFileSaysUseAgent(t *testing.T) {
	f := newFixture(t)
	blk, err := ssh.MarshalPrivateKeyWithPassphrase(f.key.Priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_enc")
	if err := os.WriteFile(p, pemEncode(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := f.config()
	cfg.KeyFiles = []string{p}
	_, err = Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "ssh-add") {
		t.Fatalf("want advice to use the agent, got %v", err)
	}
}

func TestUnknownHostKeyRefused(t *testing.T) {
	f := newFixture(t)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	cfg := f.config()
	cfg.KnownHosts = &KnownHosts{Path: empty}
	_, err := Dial(ctxT(t), cfg)
	var uerr *UnknownHostKeyError
	if !errors.As(err, &uerr) {
		t.Fatalf("want UnknownHostKeyError, got %v", err)
	}
	fp := ssh.FingerprintSHA256(f.srv.HostKey.PublicKey())
	if !strings.Contains(err.Error(), fp) || !strings.Contains(err.Error(), "--accept-new-host-keys") {
		t.Errorf("message must give the fingerprint and the flag: %v", err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a refused key must not be written")
	}
}

func TestAcceptNewAppends(t *testing.T) {
	f := newFixture(t)
	kh := filepath.Join(t.TempDir(), "ssh", "known_hosts")
	if err := os.MkdirAll(filepath.Dir(kh), 0o700); err != nil {
		t.Fatal(err)
	}
	other := "otherhost ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl" // no trailing newline
	if err := os.WriteFile(kh, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := f.config()
	cfg.KnownHosts = &KnownHosts{Path: kh, AcceptNew: true}
	dial(t, cfg)
	data, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != other+"\n"+f.srv.KnownHostsLine() {
		t.Errorf("known_hosts after accept-new:\n%s", data)
	}
	if fi, _ := os.Stat(kh); fi.Mode().Perm() != 0o600 {
		t.Errorf("known_hosts mode %v", fi.Mode().Perm())
	}
	// Now known: accepted without the flag.
	cfg.KnownHosts = &KnownHosts{Path: kh}
	dial(t, cfg)
}

func TestChangedHostKeyAlwaysRefused(t *testing.T) {
	f := newFixture(t)
	oldKey := sshtest.NewHostKey(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	old := knownHostsLine(f.srv.Addr, oldKey.PublicKey())
	if err := os.WriteFile(kh, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []bool{false, true} {
		cfg := f.config()
		cfg.KnownHosts = &KnownHosts{Path: kh, AcceptNew: accept}
		_, err := Dial(ctxT(t), cfg)
		var cerr *HostKeyChangedError
		if !errors.As(err, &cerr) {
			t.Fatalf("accept-new=%v: want HostKeyChangedError, got %v", accept, err)
		}
		msg := err.Error()
		for _, want := range []string{"node-1", f.srv.Addr, ssh.FingerprintSHA256(oldKey.PublicKey()), ssh.FingerprintSHA256(f.srv.HostKey.PublicKey()), "HAS CHANGED", "ssh-keygen -R"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
	}
	if data, _ := os.ReadFile(kh); string(data) != old {
		t.Errorf("known_hosts was modified:\n%s", data)
	}
}

func TestFailingCommandKeepsOutput(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	_, err := c.Run(ctxT(t), "echo '[preflight] Running pre-flight checks'; printf '[ERROR Swap]: swap is %s\\n' enabled >&2; exit 3")
	var cerr *CommandError
	if !errors.As(err, &cerr) {
		t.Fatalf("want CommandError, got %v", err)
	}
	if cerr.ExitCode != 3 || cerr.Host != "node-1" {
		t.Errorf("exit %d host %q", cerr.ExitCode, cerr.Host)
	}
	if strings.Contains(err.Error(), "swap is enabled") {
		t.Errorf("Error() must not include the output: %v", err)
	}
	out := engine.CommandOutput(err)
	// stdout and stderr are separate SSH streams: both are kept, their
	// relative order is best-effort.
	if len(out) != len("[preflight] Running pre-flight checks\n[ERROR Swap]: swap is enabled\n") ||
		!strings.Contains(out, "[preflight] Running pre-flight checks\n") || !strings.Contains(out, "[ERROR Swap]: swap is enabled\n") {
		t.Errorf("CommandOutput = %q", out)
	}
	if string(cerr.Stderr) != "[ERROR Swap]: swap is enabled\n" {
		t.Errorf("stderr = %q", cerr.Stderr)
	}
	// Through the engine: output shown with the failure only.
	var buf bytes.Buffer
	phases := []engine.Phase{
		&engine.Func{Name: "ok", RunOnHost: func(ctx context.Context, _ engine.Host) error {
			_, err := c.Run(ctx, "echo quiet-success-output")
			return err
		}},
		&engine.Func{Name: "bad", RunOnHost: func(ctx context.Context, _ engine.Host) error {
			_, err := c.Run(ctx, "echo loud-failure-output; exit 1")
			return err
		}},
	}
	hosts := []engine.Host{{Name: "node-1", Role: engine.RoleWorker, OS: engine.Linux}}
	e, err := engine.New(phases, hosts, engine.Options{Reporter: engine.NewTextReporter(&buf, engine.Descriptors(phases), hosts)})
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Run(ctxT(t))
	if strings.Contains(buf.String(), "quiet-success-output") || !strings.Contains(buf.String(), "| loud-failure-output") {
		t.Errorf("output must be shown on failure only:\n%s", buf.String())
	}
}

func TestScriptStopsAtFirstFailure(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	_, err := c.Run(ctxT(t), "echo one\nfalse\necho two")
	var cerr *CommandError
	if !errors.As(err, &cerr) {
		t.Fatalf("want CommandError, got %v", err)
	}
	if cerr.ExitCode != 1 || string(cerr.Stdout) != "one\n" {
		t.Errorf("a failing line must end the script: exit %d, stdout %q", cerr.ExitCode, cerr.Stdout)
	}
}

func TestSudo(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Sudo = true
	c := dial(t, cfg)
	script := `echo "it's $((6*7))"; printf '%s\n' "a b"`
	res, err := c.Run(ctxT(t), script)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "it's 42\na b\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	cmds := f.srv.Commands()
	if last := cmds[len(cmds)-1]; !strings.HasPrefix(last, "sudo -n -- sh -c ") {
		t.Errorf("command sent: %q", last)
	}
	log, _ := os.ReadFile(filepath.Join(f.srv.Dir, "sudo.log"))
	if !strings.Contains(string(log), "sh -c set -e\n"+script) {
		t.Errorf("sudo did not receive the script intact: %q", log)
	}
}

func TestShellQuoteRoundTrip(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	for _, s := range []string{"", "plain", "it's", `"double" $HOME $(id) ` + "`id`", "new\nline", "tab\there", `back\slash`, "'''", "ünïcødé ✓", "-n", "*"} {
		res, err := c.Run(ctxT(t), "printf '%s' "+ShellQuote(s))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(res.Stdout) != s {
			t.Errorf("round trip of %q gave %q", s, res.Stdout)
		}
	}
}

// TestPowerShellEncodingRoundTrip sends scripts the Windows way; the
// server's powershell stand-in decodes the -EncodedCommand argument (with
// base64 and iconv, independently of our decoder) and prints it.
func TestPowerShellEncodingRoundTrip(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.OS = engine.Windows
	c := dial(t, cfg)
	scripts := []string{
		`Get-Service kubelet | Format-Table Status, Name, StartType`,
		`w32tm /config /manualpeerlist:"router.example.com,0x8" /syncfromflags:manual /update`,
		"$x = 'it''s'; Write-Output \"$x `\"quoted`\" $(Get-Date)\"\r\nexit 3",
		`Set-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters' -Name 'NV Domain' -Value 'example.com'`,
		"ünïcødé ✓ 𝄞 (outside the BMP) & | ; < > ^ % !",
	}
	for _, s := range scripts {
		res, err := c.Run(ctxT(t), s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got, want := string(res.Stdout), WrapPowerShell(s); got != want {
			t.Errorf("server decoded\n%q\nwant\n%q", got, want)
		}
		if !strings.Contains(string(res.Stdout), "\n"+s+"\n") {
			t.Errorf("script not carried verbatim: %q", s)
		}
	}
	last := f.srv.Commands()[len(f.srv.Commands())-1]
	if strings.ContainsAny(strings.TrimPrefix(last, "powershell -NoProfile -NonInteractive -EncodedCommand "), " '\"$`;&|") {
		t.Errorf("encoded command line has characters a shell could interpret: %q", last)
	}
}

func TestUploadLinux(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	dst := filepath.Join(f.srv.Dir, "etc", "kubernetes", "it's join.yaml")
	data := []byte("token: abcdef.0123456789abcdef\n\x00binary\xff\n")
	if err := c.Upload(ctxT(t), dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("content %q", got)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Overwrite with a public file.
	if err := c.Upload(ctxT(t), dst, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "v2\n" {
		t.Errorf("overwrite: %q", got)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	// The data never appears on a command line.
	for _, cmd := range f.srv.Commands() {
		if strings.Contains(cmd, "0123456789abcdef") {
			t.Errorf("secret on a command line: %q", cmd)
		}
	}
	// A failed upload names the file and keeps the output.
	err = c.Upload(ctxT(t), "/proc/version/x", []byte("x"), 0o600)
	if err == nil || !strings.Contains(err.Error(), "/proc/version/x") || engine.CommandOutput(err) == "" {
		t.Errorf("failed upload: %v / %q", err, engine.CommandOutput(err))
	}
}

func TestUploadWindowsStream(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.OS = engine.Windows
	c := dial(t, cfg)
	data := bytes.Repeat([]byte("apiVersion: kubeadm.k8s.io/v1beta4\x00\xff"), 500) // > 1 chunk
	if err := c.Upload(ctxT(t), `C:\k\join.yaml`, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.ReadFile(filepath.Join(f.srv.Dir, "powershell.stdin"))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	lines := strings.Split(strings.TrimSuffix(string(stdin), "\n"), "\n")
	if len(lines) < 2 {
		t.Errorf("want several chunks, got %d", len(lines))
	}
	for _, l := range lines {
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, data) {
		t.Error("uploaded bytes differ")
	}
	// The script's order and ACL are TestWindowsReceiveScriptACLFirst's
	// (receive_acl_test.go), parsed there by the PowerShell grammar.
	last := f.srv.Commands()[len(f.srv.Commands())-1]
	script, err := DecodePowerShell(strings.TrimPrefix(last, "powershell -NoProfile -NonInteractive -EncodedCommand "))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, `$dst = 'C:\k\join.yaml'`) || !strings.Contains(script, "'.hybridctl-upload-'") || strings.Contains(script, "icacls") {
		t.Errorf("script:\n%s", script)
	}
	if !strings.Contains(windowsUploadScript(`C:\k\a`, 0o644), "Invoke-Native 'icacls.exe' @($dst, '/reset')") {
		t.Error("a public file must get the directory's inherited permissions")
	}
}

func TestContextCancelKillsCommand(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	marker := filepath.Join(f.srv.Dir, "finished")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := c.Run(ctx, "sleep 2; touch "+ShellQuote(marker))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if d := time.Since(t0); d > 1500*time.Millisecond {
		t.Errorf("Run returned %v after the deadline", d)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command kept running after cancellation")
	}
	// The connection is still usable.
	if _, err := c.Run(ctxT(t), "true"); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	f.srv.Stop()
	if _, err := c.Run(ctxT(t), "true"); err == nil {
		t.Fatal("command succeeded with the server down")
	}
	go func() { time.Sleep(700 * time.Millisecond); f.srv.Restart() }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctxT(t), "echo back"); err != nil || string(res.Stdout) != "back\n" {
		t.Fatalf("after reconnect: %v %v", res, err)
	}
	// A host that does not come back: Reconnect gives up at the deadline
	// with the last error.
	f.srv.Stop()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel2()
	err := c.Reconnect(ctx2)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last attempt: connecting to node-1") {
		t.Errorf("want deadline with last error, got %v", err)
	}
}

func TestRebootWaitsForNewBootID(t *testing.T) {
	f := newFixture(t)
	bootID := filepath.Join(f.srv.Dir, "boot_id")
	if err := os.WriteFile(bootID, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	requested := filepath.Join(f.srv.Dir, "reboot-requested")
	cfg := f.config()
	cfg.BootIDCommand = "cat " + ShellQuote(bootID)
	cfg.RebootCommand = "touch " + ShellQuote(requested)
	c := dial(t, cfg)
	// The "machine": when a reboot is requested, go down, come back with a
	// new boot id.
	go func() {
		for {
			if _, err := os.Stat(requested); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		f.srv.Stop()
		_ = os.WriteFile(bootID, []byte("boot-2\n"), 0o644)
		time.Sleep(500 * time.Millisecond)
		f.srv.Restart()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.BootID(ctxT(t))
	if err != nil || id != "boot-2" {
		t.Errorf("after reboot: %q %v", id, err)
	}
}

func TestDialUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, err = Dial(ctxT(t), Config{Host: "gone", Address: addr, KeyFiles: []string{sshtest.NewKey(t).Path}, KnownHosts: &KnownHosts{Path: "/nonexistent"}})
	if err == nil || !strings.Contains(err.Error(), "gone") || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v", err)
	}
}

func TestPool(t *testing.T) {
	f := newFixture(t)
	p := NewPool(f.config())
	defer func() { _ = p.Close() }()
	got := make(chan *Client, 4)
	for range 4 {
		go func() {
			c, err := p.Get(ctxT(t), "node-1")
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
	}
	first := <-got
	for range 3 {
		if c := <-got; c != first || c == nil {
			t.Fatal("the pool dialled a host more than once")
		}
	}
	if _, err := p.Get(ctxT(t), "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown host: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctxT(t), "true"); err == nil {
		t.Error("client still usable after Pool.Close")
	}
}
