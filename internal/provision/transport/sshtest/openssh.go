//go:build unix

package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHDPath is where Debian's openssh-server installs the daemon.
const SSHDPath = "/usr/sbin/sshd"

// OpenSSH is Debian's real sshd, started by a test on a free loopback port
// with a temporary configuration, host key and authorized_keys. Sessions
// get the same stand-ins as Server on their PATH (SetEnv), so the sudo and
// PowerShell command forms also go through a real sshd and login shell.
// Sessions run with HOME (and XDG_CONFIG_HOME, ZDOTDIR) in an empty
// directory of the test's and without ~/.ssh/rc, so the user's dotfiles
// (a pyenv init in ~/.bashrc can make every session take a minute) cannot
// change or slow the tests.
type OpenSSH struct {
	t       *testing.T
	Addr    string
	User    string
	HostKey ssh.Signer
	Dir     string
	Home    string // the sessions' HOME, empty
	config  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	logPath string
}

// StartOpenSSH starts sshd for the current user, trusting authorized.
// Without sshd installed the test fails (CI installs openssh-server), or is
// skipped under -short.
func StartOpenSSH(t *testing.T, authorized ...ssh.PublicKey) *OpenSSH {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err != nil {
		if testing.Short() {
			t.Skipf("%s not installed; skipped under -short", SSHDPath)
		}
		t.Fatalf("%s not installed (apt-get install openssh-server, or hack/install-deps.sh)", SSHDPath)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshd needs the current user's name and home: %v", err)
	}
	if os.Getuid() == 0 {
		// Privilege separation needs its empty directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd privilege separation directory /run/sshd: %v", err)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"sudo": sudoShim, "powershell": powershellShim} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "sshtest host key")
	if err != nil {
		t.Fatal(err)
	}
	hostKeyPath := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(hostKeyPath, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	var ak bytes.Buffer
	for _, k := range authorized {
		ak.Write(ssh.MarshalAuthorizedKey(k))
	}
	akPath := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(akPath, ak.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	cfg := fmt.Sprintf(`Port %s
ListenAddress 127.0.0.1
HostKey %s
PidFile none
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowUsers %s
PermitUserRC no
PermitUserEnvironment no
SetEnv PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SHIM_DIR=%s HOME=%s XDG_CONFIG_HOME=%s/.config ZDOTDIR=%s
LogLevel ERROR
`, port, hostKeyPath, akPath, u.Username, bin, dir, home, home, home)
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(SSHDPath, "-t", "-f", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("sshd refuses the test configuration: %v\n%s", err, out)
	}
	o := &OpenSSH{t: t, Addr: addr, User: u.Username, HostKey: signer, Dir: dir, Home: home, config: cfgPath, logPath: filepath.Join(dir, "sshd.log")}
	o.Restart()
	t.Cleanup(o.Stop)
	return o
}

// Restart starts sshd (again) and waits until it accepts connections.
func (o *OpenSSH) Restart() {
	o.t.Helper()
	o.mu.Lock()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", o.config)
	// A file, not a buffer: session processes that outlive sshd keep the
	// descriptor, and Wait must not wait for them.
	logf, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		o.mu.Unlock()
		o.t.Fatal(err)
	}
	defer func() { _ = logf.Close() }()
	cmd.Stderr = logf
	// Its own process group, so Stop also ends the per-connection
	// processes and the clients see the connection drop (as on a reboot).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		o.mu.Unlock()
		o.t.Fatalf("starting sshd: %v", err)
	}
	o.cmd = cmd
	o.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", o.Addr, time.Second); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	o.t.Fatalf("sshd did not listen on %s:\n%s", o.Addr, o.Log())
}

// Stop stops sshd and its sessions.
func (o *OpenSSH) Stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd != nil && o.cmd.Process != nil {
		_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		_ = o.cmd.Wait()
		o.cmd = nil
	}
}

// Log returns what sshd wrote to standard error.
func (o *OpenSSH) Log() string {
	b, _ := os.ReadFile(o.logPath)
	return strings.TrimSpace(string(b))
}

// KnownHostsFile writes a known_hosts file (0600, in a directory of the
// test's) that holds only this server's line, and returns its path.
func (o *OpenSSH) KnownHostsFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(o.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// KnownHostsLine is the known_hosts line for this server.
func (o *OpenSSH) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(o.Addr)}, o.HostKey.PublicKey()) + "\n"
}
