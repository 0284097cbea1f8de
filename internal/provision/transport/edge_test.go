package transport

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// Tests written for the mutants that survived hack/mutation.sh (docs/testing.md):
// exact messages, defaults, keepalive, backoff, reboot polling, upload
// stream timers. The timing tests compare against margins several times
// what the code allows, so a loaded machine does not fail them; the slow
// ones run in parallel (TestCloseStopsKeepAlive, which counts goroutines,
// does not).

// rawServer accepts TCP connections on loopback and hands each, numbered
// from 1, to handle (in its own goroutine). Connections are closed at the
// end of the test; accepted reports how many arrived.
func rawServer(t *testing.T, handle func(n int, c net.Conn)) (addr string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		n     atomic.Int64
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			i := int(n.Add(1))
			wg.Add(1)
			go func() { defer wg.Done(); handle(i, c) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), func() int { return int(n.Load()) }
}

// serveHandshake runs the server side of an SSH handshake with hostKeys,
// accepting any client key (or refusing every key), hands each channel the
// client opens to onChannel (nil: refused), then holds the connection until
// the client closes it.
func serveHandshake(c net.Conn, hostKeys []ssh.Signer, acceptAuth bool, onChannel func(ssh.NewChannel)) {
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) {
		if acceptAuth {
			return nil, nil
		}
		return nil, errors.New("refused")
	}}
	for _, k := range hostKeys {
		cfg.AddHostKey(k)
	}
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		_ = c.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if onChannel == nil {
			_ = nc.Reject(ssh.Prohibited, "no sessions here")
			continue
		}
		onChannel(nc)
	}
	_ = sc.Close()
}

// holdSilent reads and discards until the client goes away: a host whose
// TCP port answers but whose SSH server says nothing.
func holdSilent(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

func writeKnownHosts(t *testing.T, lines ...string) string {
	t.Helper()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return kh
}

func TestCommandErrorMessage(t *testing.T) {
	x120 := strings.Repeat("x", 120)
	for _, tc := range []struct {
		e    CommandError
		want string
	}{
		{CommandError{Host: "h", Command: "apt-get update\napt-get install -y kubelet", ExitCode: 100},
			`command "apt-get update …" on h failed with exit code 100`},
		{CommandError{Host: "h", Command: "\nexit 1", ExitCode: 1}, `command " …" on h failed with exit code 1`},
		{CommandError{Host: "h", Command: x120, ExitCode: 0}, `command "` + x120 + `" on h failed with exit code 0`},
		{CommandError{Host: "h", Command: x120 + "y", ExitCode: -1, Err: context.Canceled},
			`command "` + x120[:117] + `…" on h failed: context canceled`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestHostKeyChangedLists: every key known_hosts has for the address is
// named with its line, separated by ", ".
func TestHostKeyChangedLists(t *testing.T) {
	f := newFixture(t)
	old1, old2 := sshtest.NewHostKey(t), sshtest.NewHostKey(t)
	for _, known := range [][]ssh.Signer{{old1}, {old1, old2}} {
		var lines, listed []string
		kh := filepath.Join(t.TempDir(), "known_hosts")
		for i, k := range known {
			lines = append(lines, knownHostsLine(f.srv.Addr, k.PublicKey()))
			listed = append(listed, fmt.Sprintf("ssh-ed25519 %s (%s:%d)", ssh.FingerprintSHA256(k.PublicKey()), kh, i+1))
		}
		if err := os.WriteFile(kh, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := f.config()
		cfg.KnownHosts = &KnownHosts{Path: kh}
		_, err := Dial(ctxT(t), cfg)
		want := fmt.Sprintf("HOST KEY OF node-1 (%s) HAS CHANGED: known_hosts has %s, the server presented ssh-ed25519 %s. ",
			f.srv.Addr, strings.Join(listed, ", "), ssh.FingerprintSHA256(f.srv.HostKey.PublicKey()))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d known keys: got\n%v\nwant it to contain\n%s", len(known), err, want)
		}
	}
}

// TestHostKeyAlgorithmFromKnownHosts: a server with an ECDSA and an
// ed25519 host key is asked for the type on file; without that, the
// client's default order picks ECDSA and a known ed25519 host would look
// changed.
func TestHostKeyAlgorithmFromKnownHosts(t *testing.T) {
	ed := sshtest.NewHostKey(t)
	ecPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ssh.NewSignerFromKey(ecPriv)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := rawServer(t, func(_ int, c net.Conn) { serveHandshake(c, []ssh.Signer{ec, ed}, true, nil) })
	key := sshtest.NewKey(t)
	for _, known := range []ssh.Signer{ed, ec} {
		cfg := Config{Host: "two-keys", Address: addr, User: "u", KeyFiles: []string{key.Path},
			KnownHosts: &KnownHosts{Path: writeKnownHosts(t, knownHostsLine(addr, known.PublicKey()))}, ConnectTimeout: 5 * time.Second}
		c, err := Dial(ctxT(t), cfg)
		if err != nil {
			t.Errorf("known %s key: %v", known.PublicKey().Type(), err)
			continue
		}
		_ = c.Close()
	}
}

// TestDialDefaults: unset fields get their documented defaults, set ones
// are kept, and an address without a port gets 22.
func TestDialDefaults(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Host, cfg.ConnectTimeout, cfg.KeepAlive, cfg.OS = "", 0, 0, ""
	c := dial(t, cfg)
	got := c.Config()
	if got.Host != f.srv.Addr || got.ConnectTimeout != 15*time.Second || got.KeepAlive != 10*time.Second || got.OS != engine.Linux {
		t.Errorf("defaults: host %q, connect timeout %v, keepalive %v, OS %q", got.Host, got.ConnectTimeout, got.KeepAlive, got.OS)
	}
	if res, err := c.Run(ctxT(t), "echo ok"); err != nil || string(res.Stdout) != "ok\n" {
		t.Errorf("with the default timeouts: %v", err)
	}
	cfg = f.config()
	cfg.ConnectTimeout, cfg.KeepAlive, cfg.OS = 3*time.Second, -1, engine.Windows
	got = dial(t, cfg).Config()
	if got.Host != "node-1" || got.ConnectTimeout != 3*time.Second || got.KeepAlive != -1 || got.OS != engine.Windows {
		t.Errorf("given values: host %q, connect timeout %v, keepalive %v, OS %q", got.Host, got.ConnectTimeout, got.KeepAlive, got.OS)
	}
	_, err := Dial(ctxT(t), Config{Host: "noport", Address: "127.0.0.1", KeyFiles: []string{f.key.Path},
		KnownHosts: &KnownHosts{Path: filepath.Join(t.TempDir(), "kh")}, ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "noport (127.0.0.1:22)") {
		t.Errorf("an address without a port: %v", err)
	}
}

// TestConnectTimeoutAndCancel: a server that accepts TCP but never speaks
// SSH fails the dial after ConnectTimeout, and a cancelled context ends the
// handshake at once with the context's error.
func TestConnectTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	addr, _ := rawServer(t, func(_ int, c net.Conn) { holdSilent(c) })
	key := sshtest.NewKey(t)
	cfg := Config{Host: "silent", Address: addr, User: "u", KeyFiles: []string{key.Path},
		KnownHosts: &KnownHosts{Path: filepath.Join(t.TempDir(), "kh")}, ConnectTimeout: 300 * time.Millisecond}
	t0 := time.Now()
	_, err := Dial(ctxT(t), cfg)
	if d := time.Since(t0); err == nil || d > 5*time.Second || !strings.Contains(err.Error(), "silent ("+addr+") as u: ") {
		t.Errorf("a silent server with a 300ms connect timeout: %v after %v", err, d)
	}
	cfg.ConnectTimeout = 20 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	t0 = time.Now()
	_, err = Dial(ctx, cfg)
	if d := time.Since(t0); !errors.Is(err, context.Canceled) || d > 5*time.Second || !strings.Contains(err.Error(), "silent ("+addr+")") {
		t.Errorf("a cancelled handshake: %v after %v", err, d)
	}
}

// freezingProxy forwards TCP to target until freeze is called; after that
// it moves no byte in either direction (a host that hangs without closing
// its connections).
func freezingProxy(t *testing.T, target string) (addr string, freeze func()) {
	t.Helper()
	var frozen atomic.Bool
	stop := make(chan struct{})
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if frozen.Load() {
				<-stop
				return
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	addr, _ = rawServer(t, func(_ int, c net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			return
		}
		defer func() { _ = up.Close() }()
		done := make(chan struct{}, 2)
		go func() { pipe(up, c); done <- struct{}{} }()
		go func() { pipe(c, up); done <- struct{}{} }()
		<-done
	})
	// Registered after rawServer's cleanup, so it runs first.
	t.Cleanup(func() { close(stop) })
	return addr, func() { frozen.Store(true) }
}

// TestKeepAlive: keepalives answered keep the connection; a host that
// stops answering has its connection closed within a few intervals, so a
// command fails instead of hanging.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config()
	cfg.KeepAlive = 50 * time.Millisecond
	c := dial(t, cfg)
	time.Sleep(600 * time.Millisecond)
	if _, err := c.Run(ctxT(t), "true"); err != nil {
		t.Fatalf("after answered keepalives: %v", err)
	}

	addr, freeze := freezingProxy(t, f.srv.Addr)
	cfg = f.config()
	cfg.Address = addr
	cfg.KnownHosts = &KnownHosts{Path: writeKnownHosts(t, knownHostsLine(addr, f.srv.HostKey.PublicKey()))}
	cfg.KeepAlive = 100 * time.Millisecond
	c = dial(t, cfg)
	if _, err := c.Run(ctxT(t), "true"); err != nil {
		t.Fatal(err)
	}
	freeze()
	t0 := time.Now()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		_, err := c.Run(ctx, "true")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
			t.Errorf("a hung host: %v after %v", err, time.Since(t0))
		}
	case <-time.After(10 * time.Second):
		t.Error("a command on a hung host did not fail: the keepalive did not close the connection")
		_ = c.Close()
		<-done
	}
}

func keepAliveGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "transport.keepAlive(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseStopsKeepAlive: Close and Reconnect end the keepalive goroutine
// of the connection they drop (with a long interval it would otherwise
// live until its next tick).
func TestCloseStopsKeepAlive(t *testing.T) {
	f := newFixture(t)
	before := keepAliveGoroutines()
	waitFor := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for keepAliveGoroutines() != want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := keepAliveGoroutines(); n != want {
			t.Fatalf("%s: %d keepalive goroutines, want %d", what, n, want)
		}
	}
	cfg := f.config()
	cfg.KeepAlive = time.Hour
	c := dial(t, cfg)
	waitFor(before+1, "after Dial")
	if err := c.Reconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(before+1, "after Reconnect")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(before, "after Close")
}

// TestReconnectBackoff: attempts against a host that refuses every
// handshake are spaced 0.5 s, 1 s, 2 s, ...: three in 2.2 s, not a busy
// loop.
func TestReconnectBackoff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := dial(t, f.config())
	addr, accepted := rawServer(t, func(_ int, c net.Conn) { _ = c.Close() })
	c.cfg.Address = addr
	ctx, cancel := context.WithTimeout(context.Background(), 2200*time.Millisecond)
	defer cancel()
	err := c.Reconnect(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Reconnect: %v", err)
	}
	if n := accepted(); n < 2 || n > 4 {
		t.Errorf("%d connection attempts in 2.2 s, want 3 (at 0, 0.5 and 1.5 s)", n)
	}
}

// lateContext reports the deadline d but ends a little after it, as a
// runtime timer may: a socket deadline of d then fails the handshake while
// ctx.Err() is still nil: Reconnect must not keep that cut-short error
// (with a plain deadline a loaded machine shows the race in most runs).
type lateContext struct {
	context.Context
	d time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.d, true }

// TestReconnectKeepsTellingError: the error names the last attempt that
// failed on its own (here: the key refused), not an earlier one (a server
// that hangs up at once) nor the one the deadline or a cancel cut short.
func TestReconnectKeepsTellingError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hk := sshtest.NewHostKey(t)
	for name, newCtx := range map[string]func() (context.Context, context.CancelFunc){
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2500*time.Millisecond)
		},
		"deadline seen late": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(context.Background(), 2800*time.Millisecond)
			return lateContext{ctx, time.Now().Add(2500 * time.Millisecond)}, cancel
		},
		"cancel": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(2500*time.Millisecond, cancel)
			return ctx, cancel
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, f.config())
			addr, accepted := rawServer(t, func(n int, c net.Conn) {
				switch n {
				case 1:
					// Hang up without a version line (and without a reset).
					_ = c.(*net.TCPConn).CloseWrite()
					holdSilent(c)
				case 2:
					serveHandshake(c, []ssh.Signer{hk}, false, nil)
				default:
					holdSilent(c)
				}
			})
			c.cfg.Address = addr
			c.cfg.KnownHosts = &KnownHosts{Path: writeKnownHosts(t, knownHostsLine(addr, hk.PublicKey()))}
			ctx, cancel := newCtx()
			defer cancel()
			err := c.Reconnect(ctx)
			want := "(last attempt: connecting to node-1 (" + addr + ") as user: ssh: handshake failed: ssh: unable to authenticate"
			if ctx.Err() == nil || !errors.Is(err, ctx.Err()) || !strings.Contains(err.Error(), want) {
				t.Errorf("Reconnect: %v\nwant it to contain %s", err, want)
			}
			if n := accepted(); n != 3 {
				t.Errorf("%d attempts, want 3 (hung up, the key refused, cut short)", n)
			}
		})
	}
}

// TestWaitForRebootPolls: while the boot id stays the same, it is read
// again every 2 s, not in a busy loop, until the context ends.
func TestWaitForRebootPolls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bootID := filepath.Join(f.srv.Dir, "boot_id")
	if err := os.WriteFile(bootID, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := f.config()
	cfg.BootIDCommand = "cat " + ShellQuote(bootID)
	c := dial(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := c.WaitForReboot(ctx, "boot-1")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "waiting for node-1 to reboot: ") {
		t.Errorf("WaitForReboot with an unchanged boot id: %v", err)
	}
	reads := 0
	for _, cmd := range f.srv.Commands() {
		if strings.Contains(cmd, "boot_id") {
			reads++
		}
	}
	if reads < 1 || reads > 3 {
		t.Errorf("boot id read %d times in 3 s, want 2 (at 0 and 2 s)", reads)
	}
}

// TestBootIDAndRebootDefaults: without configured commands, Linux reads
// /proc/sys/kernel/random/boot_id and runs `systemctl reboot`, Windows
// asks PowerShell for LastBootUpTime and runs Restart-Computer -Force.
// (`systemctl` is a stand-in on the test server's PATH.)
func TestBootIDAndRebootDefaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.srv.Shim("systemctl", `#!/bin/sh
printf '%s\n' "$*" >> "$SHIM_DIR/systemctl.log"
`)
	c := dial(t, f.config())
	want, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.BootID(ctxT(t)); err != nil || id != strings.TrimSpace(string(want)) {
		t.Errorf("Linux boot id %q (%v), want %q", id, err, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := c.Reboot(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Reboot of a host that does not go down: %v", err)
	}
	if log, _ := os.ReadFile(filepath.Join(f.srv.Dir, "systemctl.log")); string(log) != "reboot\n" {
		t.Errorf("systemctl called with %q, want \"reboot\\n\"", log)
	}

	cfg := f.config()
	cfg.OS = engine.Windows
	w := dial(t, cfg)
	// The powershell stand-in prints the script it was given.
	if id, err := w.BootID(ctxT(t)); err != nil || id != strings.TrimSpace(WrapPowerShell(windowsBootID)) {
		t.Errorf("Windows boot id command: %q (%v)", id, err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel2()
	_ = w.Reboot(ctx2)
	var sent bool
	for _, cmd := range f.srv.Commands() {
		sent = sent || cmd == PowerShellCommand(windowsReboot)
	}
	if !sent || !strings.Contains(windowsReboot, "Restart-Computer") {
		t.Errorf("the Windows reboot command was not sent: %q", f.srv.Commands())
	}
}

// TestAgentClosedOnKeyErrors: when a key file fails after the agent was
// asked, the agent connection is closed, not leaked.
func TestAgentClosedOnKeyErrors(t *testing.T) {
	f := newFixture(t)
	var open atomic.Int64
	withKey := agent.NewKeyring()
	if err := withKey.Add(agent.AddedKey{PrivateKey: f.key.Priv}); err != nil {
		t.Fatal(err)
	}
	full, empty := serveAgent(t, withKey, &open), serveAgent(t, agent.NewKeyring(), &open)
	blk, err := ssh.MarshalPrivateKeyWithPassphrase(f.key.Priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	encrypted, garbage := filepath.Join(dir, "id_enc"), filepath.Join(dir, "id_garbage")
	if err := os.WriteFile(encrypted, pemEncode(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sock string
		keys []string
		want string
	}{
		{full, []string{filepath.Join(dir, "missing")}, "reading SSH key: open " + filepath.Join(dir, "missing")},
		{full, []string{encrypted}, "SSH key " + encrypted + " is encrypted"},
		{full, []string{garbage}, "SSH key " + garbage + ": "},
		{empty, nil, "no SSH keys"},
	} {
		cfg := f.config()
		cfg.AgentSocket, cfg.KeyFiles = tc.sock, tc.keys
		_, err := Dial(ctxT(t), cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
		deadline := time.Now().Add(5 * time.Second)
		for open.Load() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := open.Load(); n != 0 {
			t.Errorf("%q: %d agent connections left open", tc.want, n)
		}
	}
}

// TestOpenSSHKilledBySignal: a command whose process is killed has no exit
// code (-1) and says which signal; a child killed under a shell is the
// shell's exit code 128+9.
func TestOpenSSHKilledBySignal(t *testing.T) {
	o, cfg := openSSHFixture(t)
	c := dial(t, cfg)
	_, err := c.Run(ctxT(t), "echo before; kill -KILL $$")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != -1 || !strings.HasSuffix(err.Error(), "failed: killed by signal KILL") || string(ce.Stdout) != "before\n" {
		t.Errorf("a killed command: %v (%+v)\nsshd: %s", err, ce, o.Log())
	}
	_, err = c.Run(ctxT(t), "sh -c 'kill -KILL $$'")
	if !errors.As(err, &ce) || ce.ExitCode != 137 {
		t.Errorf("a killed child: %v", err)
	}
}

// stallAtOnce blocks on its first read until closed, and records when.
type stallAtOnce struct {
	since atomic.Int64
	done  chan struct{}
}

func (s *stallAtOnce) Read([]byte) (int, error) {
	s.since.CompareAndSwap(0, time.Now().UnixNano())
	<-s.done
	return 0, io.EOF
}

// TestUploadStreamStallNoticedWithinAQuarter: the idle timer is checked
// every quarter of the idle time (at most every second), so a 250 ms stall
// limit is noticed within about 310 ms, not at the next whole second, and
// not before the 250 ms.
func TestUploadStreamStallNoticedWithinAQuarter(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.StreamIdleTimeout = 250 * time.Millisecond
	c := dial(t, cfg)
	r := &stallAtOnce{done: make(chan struct{})}
	defer close(r.done)
	t0 := time.Now()
	err := c.UploadStream(ctxT(t), filepath.Join(f.srv.Dir, "x"), r, sumHex(nil), 0o644)
	d, total := time.Since(time.Unix(0, r.since.Load())), time.Since(t0)
	if !errors.Is(err, ErrStreamStalled) || !strings.Contains(err.Error(), "no data moved for 250ms (after 0 bytes)") {
		t.Fatalf("stalled upload: %v", err)
	}
	if d > 700*time.Millisecond || total < 250*time.Millisecond {
		t.Errorf("a 250ms stall was noticed after %v (%v after the upload started)", d, total)
	}
}

// zeroReader returns (0, nil) until closed: progress that moves no byte
// is no progress.
type zeroReader struct{ done chan struct{} }

func (z zeroReader) Read([]byte) (int, error) {
	select {
	case <-z.done:
		return 0, io.EOF
	case <-time.After(2 * time.Millisecond):
		return 0, nil
	}
}

func TestUploadStreamEmptyReadsAreAStall(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.StreamIdleTimeout = 250 * time.Millisecond
	c := dial(t, cfg)
	r := zeroReader{done: make(chan struct{})}
	defer close(r.done)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := c.UploadStream(ctx, filepath.Join(f.srv.Dir, "x"), r, sumHex(nil), 0o644); !errors.Is(err, ErrStreamStalled) {
		t.Errorf("reads of 0 bytes for 8 s: %v", err)
	}
}

// TestUploadStreamSlowCheck: once the last byte is sent, the idle limit no
// longer applies: the node has StreamVerifyTimeout to hash the file (here a
// sha256sum that takes 1 s, four times the idle limit).
func TestUploadStreamSlowCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.srv.Shim("sha256sum", "#!/bin/sh\nsleep 1\nexec /usr/bin/sha256sum \"$@\"\n")
	cfg := f.config()
	cfg.StreamIdleTimeout = 250 * time.Millisecond
	c := dial(t, cfg)
	data := []byte("kubeadm binary\n")
	dst := filepath.Join(f.srv.Dir, "bin-cache", "kubeadm")
	if err := c.UploadStream(ctxT(t), dst, bytes.NewReader(data), sumHex(data), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Errorf("uploaded %q (%v)", got, err)
	}
}

// TestUploadStreamWindowsWholeChunks: data of exactly two chunks is two
// base64 lines, with no empty line after them; no data is no line.
func TestUploadStreamWindowsWholeChunks(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.OS = engine.Windows
	c := dial(t, cfg)
	for _, data := range [][]byte{bytes.Repeat([]byte{0xfe}, 2*uploadChunk), nil} {
		if err := c.UploadStream(ctxT(t), `C:\k\x.bin`, bytes.NewReader(data), sumHex(data), 0o644); err != nil {
			t.Fatal(err)
		}
		stdin, err := os.ReadFile(filepath.Join(f.srv.Dir, "powershell.stdin"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat(strings.Repeat("/v7+", uploadChunk/3)+"\n", len(data)/uploadChunk)
		if string(stdin) != want {
			t.Errorf("%d bytes sent as %d lines (%d bytes), want %d lines", len(data), strings.Count(string(stdin), "\n"), len(stdin), len(data)/uploadChunk)
		}
	}
}

// TestAcceptNewCreatesFile: with AcceptNew and no known_hosts yet (nor its
// directory), the file is created 0600 with the one line.
func TestAcceptNewCreatesFile(t *testing.T) {
	f := newFixture(t)
	kh := filepath.Join(t.TempDir(), "new", ".ssh", "known_hosts")
	cfg := f.config()
	cfg.KnownHosts = &KnownHosts{Path: kh, AcceptNew: true}
	dial(t, cfg)
	data, err := os.ReadFile(kh)
	if err != nil || string(data) != f.srv.KnownHostsLine() {
		t.Errorf("known_hosts %q (%v)", data, err)
	}
	if fi, err := os.Stat(kh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v)", fi.Mode(), err)
	}
}

// refuseExec accepts a session channel but refuses every request on it (a
// server whose exec requests fail).
func refuseExec(nc ssh.NewChannel) {
	ch, creqs, err := nc.Accept()
	if err != nil {
		return
	}
	go func() {
		for r := range creqs {
			_ = r.Reply(false, nil)
		}
		_ = ch.Close()
	}()
}

// TestNoExitCodeWithoutOne: a command that did not run or did not finish
// has exit code -1, never a number the caller could take for the
// command's own (apply reads exit code 1 as "not found"), and the message
// gives the cause.
func TestNoExitCodeWithoutOne(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	check := func(what string, err error, wantMsg string) {
		t.Helper()
		var ce *CommandError
		if !errors.As(err, &ce) || ce.ExitCode != -1 || ce.Host != "node-1" || !strings.Contains(err.Error(), "on node-1 failed: "+wantMsg) {
			t.Errorf("%s: %v (%+v)", what, err, ce)
		}
	}
	sent := len(f.srv.Commands())
	_, err := c.Run(ctxT(t), "ls\x00")
	check("a NUL in the script", err, "command contains a NUL byte")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Run(cancelled, "true")
	check("a cancelled context", err, "context canceled")
	if n := len(f.srv.Commands()); n != sent {
		t.Errorf("%d commands sent for scripts that must not run", n-sent)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	_, err = c.Run(short, "sleep 5")
	check("a deadline during the command", err, "context deadline exceeded")
	go func() { time.Sleep(200 * time.Millisecond); f.srv.Stop() }()
	_, err = c.Run(ctxT(t), "sleep 5")
	check("the connection lost during the command", err, "")
	_ = c.Close() // the lost connection's error
	_, err = c.Run(ctxT(t), "true")
	check("a closed client", err, "node-1: not connected")

	hk := sshtest.NewHostKey(t)
	for _, tc := range []struct {
		serve func(net.Conn)
		want  string
	}{
		{func(c net.Conn) { serveHandshake(c, []ssh.Signer{hk}, true, nil) }, "opening a session: "},
		{func(c net.Conn) { serveHandshake(c, []ssh.Signer{hk}, true, refuseExec) }, "starting the command: "},
	} {
		addr, _ := rawServer(t, func(_ int, c net.Conn) { tc.serve(c) })
		cfg := f.config()
		cfg.Address = addr
		cfg.KnownHosts = &KnownHosts{Path: writeKnownHosts(t, knownHostsLine(addr, hk.PublicKey()))}
		_, err := dial(t, cfg).Run(ctxT(t), "true")
		check(tc.want, err, tc.want)
	}
}
