package transport

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// These tests run against Debian's real sshd (skipped when it is not
// installed), to catch what an in-process server could get wrong: the
// login shell, exit-status, SetEnv, host-key negotiation, restarts.

func openSSHFixture(t *testing.T) (*sshtest.OpenSSH, Config) {
	t.Helper()
	key := sshtest.NewKey(t)
	o := sshtest.StartOpenSSH(t, key.Signer.PublicKey())
	kh := o.KnownHostsFile(t)
	return o, Config{Host: "openssh", Address: o.Addr, User: o.User, KeyFiles: []string{key.Path},
		KnownHosts: &KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second}
}

func TestOpenSSHRunAndErrors(t *testing.T) {
	o, cfg := openSSHFixture(t)
	c := dial(t, cfg)
	res, err := c.Run(ctxT(t), "echo out; echo err >&2")
	if err != nil {
		t.Fatalf("%v\nsshd: %s", err, o.Log())
	}
	if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	_, err = c.Run(ctxT(t), "echo partial; printf 'E: Unable to locate %s\\n' package >&2; exit 100")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 100 || !strings.Contains(engine.CommandOutput(err), "E: Unable to locate package") {
		t.Fatalf("want exit 100 with output, got %v / %q", err, engine.CommandOutput(err))
	}
	if strings.Contains(err.Error(), "Unable to locate package") {
		t.Errorf("output leaked into Error(): %v", err)
	}
}

// TestOpenSSHSessionsIgnoreUserDotfiles: the test sshd's sessions run with
// HOME in the test's own empty directory (so bash, zsh and fish read no
// startup file of the user's) and without ~/.ssh/rc: a slow or noisy
// ~/.bashrc on the developer's machine cannot change the tests.
func TestOpenSSHSessionsIgnoreUserDotfiles(t *testing.T) {
	o, cfg := openSSHFixture(t)
	c := dial(t, cfg)
	res, err := c.Run(ctxT(t), `printf '%s|%s|%s|%s' "$HOME" "$XDG_CONFIG_HOME" "$ZDOTDIR" "$(ls -A "$HOME" | wc -l)"`)
	if err != nil {
		t.Fatalf("%v\nsshd: %s", err, o.Log())
	}
	want := o.Home + "|" + o.Home + "/.config|" + o.Home + "|0"
	if string(res.Stdout) != want || len(res.Stderr) != 0 {
		t.Errorf("session HOME, XDG_CONFIG_HOME, ZDOTDIR and files in HOME: %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}
	if !strings.HasPrefix(o.Home, o.Dir+string(filepath.Separator)) {
		t.Errorf("home %s is not under the test's directory %s", o.Home, o.Dir)
	}
	// ~/.ssh/rc is read from the user's real home (sshd's working
	// directory), so only the configuration can keep it out.
	out, err := exec.Command(sshtest.SSHDPath, "-T", "-f", filepath.Join(o.Dir, "sshd_config")).CombinedOutput()
	if err != nil {
		t.Fatalf("sshd -T: %v\n%s", err, out)
	}
	for _, line := range []string{"permituserrc no", "permituserenvironment no"} {
		if !strings.Contains(string(out), "\n"+line+"\n") {
			t.Errorf("effective sshd configuration lacks %q", line)
		}
	}
}

func TestOpenSSHHostKeys(t *testing.T) {
	o, cfg := openSSHFixture(t)
	// Unknown: refused, then accepted and appended with AcceptNew.
	kh := filepath.Join(t.TempDir(), "known_hosts")
	cfg.KnownHosts = &KnownHosts{Path: kh}
	var unknown *UnknownHostKeyError
	if _, err := Dial(ctxT(t), cfg); !errors.As(err, &unknown) {
		t.Fatalf("unknown key: %v", err)
	}
	cfg.KnownHosts = &KnownHosts{Path: kh, AcceptNew: true}
	dial(t, cfg)
	if b, _ := os.ReadFile(kh); string(b) != o.KnownHostsLine() {
		t.Errorf("known_hosts:\n%s\nwant\n%s", b, o.KnownHostsLine())
	}
	// Changed: a known_hosts entry with another key for this address.
	other := sshtest.NewHostKey(t)
	if err := os.WriteFile(kh, []byte(knownHostsLine(o.Addr, other.PublicKey())), 0o600); err != nil {
		t.Fatal(err)
	}
	var changed *HostKeyChangedError
	_, err := Dial(ctxT(t), cfg)
	if !errors.As(err, &changed) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(o.HostKey.PublicKey())) {
		t.Fatalf("changed key: %v", err)
	}
}

func TestOpenSSHSudoPowerShellUpload(t *testing.T) {
	o, cfg := openSSHFixture(t)
	cfg.Sudo = true
	c := dial(t, cfg)
	res, err := c.Run(ctxT(t), `echo "it's $((6*7))"`)
	if err != nil || string(res.Stdout) != "it's 42\n" {
		t.Fatalf("sudo form through sshd: %v\nsshd: %s", err, o.Log())
	}
	dst := filepath.Join(o.Dir, "up", "secret.yaml")
	data := []byte("token: abcdef.0123456789abcdef\n")
	if err := c.Upload(ctxT(t), dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Errorf("uploaded %q", got)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	wcfg := cfg
	wcfg.OS, wcfg.Sudo = engine.Windows, false
	w := dial(t, wcfg)
	script := "Write-Output \"a 'quoted' $x `n ✓\"; exit 3"
	res, err = w.Run(ctxT(t), script)
	if err != nil {
		t.Fatalf("PowerShell form through sshd: %v", err)
	}
	if string(res.Stdout) != WrapPowerShell(script) {
		t.Errorf("PowerShell round trip through sshd and bash:\n%q", res.Stdout)
	}
}

func TestOpenSSHReconnectAndCancel(t *testing.T) {
	o, cfg := openSSHFixture(t)
	c := dial(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := c.Run(ctx, "sleep 5"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancel: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Run returned %v after the deadline", d)
	}
	o.Stop()
	go func() { time.Sleep(500 * time.Millisecond); o.Restart() }()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	if err := c.Reconnect(rctx); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctxT(t), "echo back"); err != nil || string(res.Stdout) != "back\n" {
		t.Fatalf("after restart: %v", err)
	}
}
