// Package transport runs commands on hybridctl's hosts over SSH
// (golang.org/x/crypto/ssh): host keys verified against known_hosts, keys
// from files and the SSH agent, sudo on Linux, PowerShell with
// -EncodedCommand on Windows (OpenSSH is built into Windows Server 2025; a
// script too long for cmd.exe's command line is uploaded and run with
// -File), file upload over a session's stdin, and reconnection across
// reboots.
//
// A failed command returns a *CommandError that keeps the command's output;
// the output is shown with the failure and never on success.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Config describes how to reach one host.
type Config struct {
	// Host is the host's name, used in messages.
	Host string
	// Address is host:port; the port defaults to 22.
	Address string
	// User is the login user.
	User string
	// OS selects how commands are run: sh (with sudo -n when Sudo) on
	// Linux, PowerShell -EncodedCommand on Windows.
	OS engine.OS
	// Sudo runs Linux commands as root through `sudo -n` (which fails
	// instead of prompting when a password would be needed).
	Sudo bool
	// KeyFiles are private keys to offer (unencrypted; encrypted keys
	// belong in the agent).
	KeyFiles []string
	// AgentSocket is the SSH agent's socket (SSH_AUTH_SOCK); "" for none.
	AgentSocket string
	// KnownHosts verifies the host key; required.
	KnownHosts *KnownHosts
	// ConnectTimeout bounds one TCP connect plus SSH handshake (default 15s).
	ConnectTimeout time.Duration
	// KeepAlive is the interval of keepalive requests that detect a dead
	// connection, e.g. a host that rebooted (default 10s; negative: off).
	KeepAlive time.Duration
	// BootIDCommand prints a value that changes on every boot; defaults per
	// OS (Linux /proc/sys/kernel/random/boot_id, Windows LastBootUpTime).
	BootIDCommand string
	// RebootCommand reboots the host; defaults per OS.
	RebootCommand string
	// StreamIdleTimeout fails an UploadStream that moves no data for this
	// long (default StreamIdleTimeout).
	StreamIdleTimeout time.Duration
}

// Client is a connection to one host. It is safe for concurrent use:
// every command runs in its own SSH session.
type Client struct {
	cfg Config

	mu     sync.Mutex
	conn   *ssh.Client
	agent  io.Closer
	stopKA chan struct{}
}

// Result is the outcome of a command that ran to completion.
type Result struct {
	// Stdout and Stderr are what was kept of the two streams (Limits):
	// whole, or their first and last bytes around a line that says how
	// much was dropped.
	Stdout, Stderr []byte
	ExitCode       int
	// StdoutBytes and StderrBytes are how many bytes the host sent.
	StdoutBytes, StderrBytes int64
	stdoutCut                bool
}

// Truncated reports whether some of standard output was dropped, so that
// Stdout is not the whole output.
func (r *Result) Truncated() bool { return r.stdoutCut }

// CommandError is a command that failed: a non-zero exit code, a lost
// connection or a cancelled context. It keeps the output; Error() does not
// include it (shown separately, like kind's exec.RunError), CommandOutput()
// returns it.
type CommandError struct {
	Host string
	// Command is what the caller asked to run (the script, not the encoded
	// PowerShell command line).
	Command string
	// ExitCode is the exit status, or -1 when there is none (connection
	// lost, killed, cancelled).
	ExitCode       int
	Stdout, Stderr []byte
	// Output is stdout and stderr together as they arrived (the order
	// across the two streams is best-effort: SSH carries them separately).
	// Like Stdout and Stderr, only its start and end are kept when it is
	// long (Limits.Keep).
	Output []byte
	Err    error
}

func (e *CommandError) Error() string {
	cmd := e.Command
	if i := strings.IndexByte(cmd, '\n'); i >= 0 {
		cmd = cmd[:i] + " …"
	}
	if len(cmd) > 120 {
		cmd = cmd[:117] + "…"
	}
	if e.ExitCode >= 0 {
		return fmt.Sprintf("command %q on %s failed with exit code %d", cmd, e.Host, e.ExitCode)
	}
	return fmt.Sprintf("command %q on %s failed: %v", cmd, e.Host, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }

// CommandOutput implements engine.OutputError.
func (e *CommandError) CommandOutput() string { return string(e.Output) }

// Dial connects to the host described by cfg.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.KnownHosts == nil {
		return nil, fmt.Errorf("connecting to %s: no known_hosts configured", cfg.Host)
	}
	if cfg.Host == "" {
		cfg.Host = cfg.Address
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		cfg.Address = net.JoinHostPort(cfg.Address, "22")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 10 * time.Second
	}
	if cfg.OS == "" {
		cfg.OS = engine.Linux
	}
	c := &Client{cfg: cfg}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the client's configuration (with defaults applied).
func (c *Client) Config() Config { return c.cfg }

func (c *Client) connect(ctx context.Context) error {
	ss, agentConn, err := signers(&c.cfg)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", c.cfg.Host, err)
	}
	sshCfg := &ssh.ClientConfig{
		User:              c.cfg.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(ss...)},
		HostKeyCallback:   c.cfg.KnownHosts.callback(ctx, c.cfg.Host),
		HostKeyAlgorithms: c.cfg.KnownHosts.algorithms(c.cfg.Address),
		Timeout:           c.cfg.ConnectTimeout,
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	tcp, err := d.DialContext(dctx, "tcp", c.cfg.Address)
	if err != nil {
		closeQuietly(agentConn)
		return fmt.Errorf("connecting to %s (%s): %w", c.cfg.Host, c.cfg.Address, err)
	}
	// The handshake has no context: bound it with a deadline and close the
	// socket if ctx ends first.
	deadline, _ := dctx.Deadline()
	_ = tcp.SetDeadline(deadline)
	stop := context.AfterFunc(dctx, func() { _ = tcp.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(tcp, c.cfg.Address, sshCfg)
	stop()
	if err != nil {
		_ = tcp.Close()
		closeQuietly(agentConn)
		if ctx.Err() != nil {
			return fmt.Errorf("connecting to %s (%s): %w", c.cfg.Host, c.cfg.Address, ctx.Err())
		}
		return fmt.Errorf("connecting to %s (%s) as %s: %w", c.cfg.Host, c.cfg.Address, c.cfg.User, err)
	}
	_ = tcp.SetDeadline(time.Time{})
	conn := ssh.NewClient(sc, chans, reqs)
	c.mu.Lock()
	c.conn, c.agent = conn, agentConn
	c.stopKA = make(chan struct{})
	stopKA := c.stopKA
	c.mu.Unlock()
	if c.cfg.KeepAlive > 0 {
		go keepAlive(conn, c.cfg.KeepAlive, stopKA)
	}
	return nil
}

// keepAlive closes conn when the server stops answering, so sessions on a
// host that rebooted fail instead of hanging.
func keepAlive(conn *ssh.Client, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			answered := make(chan error, 1)
			go func() {
				_, _, err := conn.SendRequest("keepalive@openssh.com", true, nil)
				answered <- err
			}()
			select {
			case err := <-answered:
				if err != nil {
					_ = conn.Close()
					return
				}
			case <-time.After(3 * every):
				_ = conn.Close()
				return
			case <-stop:
				return
			}
		}
	}
}

func closeQuietly(c io.Closer) {
	if c != nil {
		_ = c.Close()
	}
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *Client) closeLocked() error {
	var err error
	if c.stopKA != nil {
		close(c.stopKA)
		c.stopKA = nil
	}
	if c.conn != nil {
		err = c.conn.Close()
		c.conn = nil
	}
	closeQuietly(c.agent)
	c.agent = nil
	return err
}

func (c *Client) client() (*ssh.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, fmt.Errorf("%s: not connected", c.cfg.Host)
	}
	return c.conn, nil
}

// CommandLine returns the command line sent to the host for script. On
// Linux the script runs in `sh -c` whatever the user's login shell, with
// `set -e` so that the first failing command fails the script (as the
// PowerShell preamble does on Windows), as root through `sudo -n` when Sudo
// is set. On Windows it is the PowerShell -EncodedCommand line (which Run
// replaces with an upload and -File when it is longer than
// MaxWindowsCommandLine).
func (c *Client) CommandLine(script string) string {
	if c.cfg.OS == engine.Windows {
		return PowerShellCommand(script)
	}
	return c.linuxLine(script, nil)
}

// linuxLine is the Linux command line of script with args as its
// positional parameters: each a quoted word after $0, "hybridctl".
func (c *Client) linuxLine(script string, args []string) string {
	line := "sh -c " + ShellQuote("set -e\n"+script)
	if len(args) > 0 {
		line += " hybridctl"
		for _, a := range args {
			line += " " + ShellQuote(a)
		}
	}
	if c.cfg.Sudo {
		return "sudo -n -- " + line
	}
	return line
}

// CommandLineArgs is CommandLine for a Linux script given positional
// arguments: they follow the quoted script as quoted words of their own,
// the script's $1, $2, ... ($0 is "hybridctl"), so a value from outside
// reaches the script as data and never as shell text. Windows has no such
// form (PowerShell takes data on standard input): an error.
func (c *Client) CommandLineArgs(script string, args ...string) (string, error) {
	if c.cfg.OS == engine.Windows {
		return "", fmt.Errorf("%s: positional arguments are for Linux scripts; a Windows script takes data on standard input", c.cfg.Host)
	}
	for i, a := range append([]string{script}, args...) {
		if err := validText(a); err != nil {
			if i == 0 {
				return "", err
			}
			return "", fmt.Errorf("argument %d: %w", i, err)
		}
	}
	return c.linuxLine(script, args), nil
}

// Run runs script on the host the OS's way (see CommandLine) and returns
// its output. A non-zero exit code is a *CommandError.
func (c *Client) Run(ctx context.Context, script string) (*Result, error) {
	return c.RunWithStdin(ctx, script, nil)
}

// RunWithStdin is Run with data on the command's standard input (how
// secrets reach the host: never on a command line).
func (c *Client) RunWithStdin(ctx context.Context, script string, stdin io.Reader) (*Result, error) {
	return c.RunLimited(ctx, script, stdin, Limits{})
}

// RunLimited is RunWithStdin with the output kept as l says.
//
// On Windows a script whose -EncodedCommand line would be longer than
// MaxWindowsCommandLine is uploaded and run as a file instead
// (runWindowsFile): the same wrapper, the same standard input and output.
func (c *Client) RunLimited(ctx context.Context, script string, stdin io.Reader, l Limits) (*Result, error) {
	return c.run(ctx, script, stdin, l, true)
}

// run is RunLimited; asFile false never sends the script as a file (the
// upload that sends one runs this way, so it cannot recurse).
func (c *Client) run(ctx context.Context, script string, stdin io.Reader, l Limits, asFile bool) (*Result, error) {
	if err := validText(script); err != nil {
		return nil, &CommandError{Host: c.cfg.Host, Command: script, ExitCode: -1, Err: err}
	}
	line := c.CommandLine(script)
	if asFile && c.cfg.OS == engine.Windows && windowsLineLen(line) > MaxWindowsCommandLine {
		return c.runWindowsFile(ctx, script, stdin, l)
	}
	return c.exec(ctx, script, line, stdin, l)
}

// RunArgs runs a Linux script with positional arguments (see
// CommandLineArgs), as root through sudo -n when Sudo is set, with the
// output kept as l says. A non-zero exit code is a *CommandError.
func (c *Client) RunArgs(ctx context.Context, script string, args []string, stdin io.Reader, l Limits) (*Result, error) {
	line, err := c.CommandLineArgs(script, args...)
	if err != nil {
		return nil, &CommandError{Host: c.cfg.Host, Command: script, ExitCode: -1, Err: err}
	}
	return c.exec(ctx, script, line, stdin, l)
}

// Exec runs command exactly as given (no sudo, no PowerShell wrapping). On
// Windows a command longer than MaxWindowsCommandLine is refused, not sent.
func (c *Client) Exec(ctx context.Context, command string, stdin io.Reader) (*Result, error) {
	return c.exec(ctx, command, command, stdin, Limits{})
}

// ExecLimited is Exec with the output kept as l says.
func (c *Client) ExecLimited(ctx context.Context, command string, stdin io.Reader, l Limits) (*Result, error) {
	return c.exec(ctx, command, command, stdin, l)
}

func (c *Client) exec(ctx context.Context, shown, line string, stdin io.Reader, l Limits) (*Result, error) {
	fail := func(code int, err error, so, se, all []byte) error {
		return &CommandError{Host: c.cfg.Host, Command: shown, ExitCode: code, Stdout: so, Stderr: se, Output: all, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(-1, err, nil, nil, nil)
	}
	if c.cfg.OS == engine.Windows {
		if err := checkWindowsLine(line); err != nil {
			return nil, fail(-1, err, nil, nil, nil)
		}
	}
	conn, err := c.client()
	if err != nil {
		return nil, fail(-1, err, nil, nil, nil)
	}
	sess, err := conn.NewSession()
	if err != nil {
		return nil, fail(-1, fmt.Errorf("opening a session: %w", err), nil, nil, nil)
	}
	defer func() { _ = sess.Close() }()
	keep := l.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	stdout, stderr, all := newKept(keep, keep), newKept(keep, keep), newKept(keep, keep)
	if l.Max > 0 {
		stdout = newLimited(int(min(l.Max, 1<<40)))
	}
	var outW io.Writer = io.MultiWriter(stdout, all)
	if l.Spill != nil {
		outW = io.MultiWriter(stdout, all, l.Spill)
	}
	// One lock for the three: the two streams arrive on two goroutines,
	// and a cancelled command is read while they may still write.
	var mu sync.Mutex
	sess.Stdout = lockedWriter{&mu, outW}
	sess.Stderr = lockedWriter{&mu, io.MultiWriter(stderr, all)}
	sess.Stdin = stdin
	if err := sess.Start(line); err != nil {
		return nil, fail(-1, fmt.Errorf("starting the command: %w", err), nil, nil, nil)
	}
	// overLimit is the error of a standard output longer than l.Max.
	overLimit := func(unfinished bool) error {
		if l.Max > 0 && stdout.total > l.Max {
			return &OutputLimitError{Host: c.cfg.Host, Sent: stdout.total, Max: l.Max, Unfinished: unfinished}
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask the server to kill the command and close the session, and
		// return at once: OpenSSH keeps the channel open until the command
		// ends (it signals only the login shell, and a session without a
		// terminal gets no hangup), so waiting could take as long as the
		// command. The Wait goroutine ends when the server closes the
		// channel or the connection closes.
		_ = sess.Signal(ssh.SIGKILL)
		_ = sess.Close()
		mu.Lock()
		defer mu.Unlock()
		if lim := overLimit(true); lim != nil {
			return nil, fail(-1, fmt.Errorf("%w (%w)", lim, ctx.Err()), nil, stderr.Bytes(), all.Bytes())
		}
		return nil, fail(-1, ctx.Err(), stdout.Bytes(), stderr.Bytes(), all.Bytes())
	}
	mu.Lock()
	defer mu.Unlock()
	if lim := overLimit(false); lim != nil {
		// Standard output is not kept: it was too long to be used.
		return nil, fail(-1, lim, nil, stderr.Bytes(), all.Bytes())
	}
	so, se, out := stdout.Bytes(), stderr.Bytes(), all.Bytes()
	soN, seN := stdout.total, stderr.total
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return &Result{Stdout: so, Stderr: se, StdoutBytes: soN, StderrBytes: seN, stdoutCut: stdout.dropped() > 0}, nil
	case errors.As(err, &ee):
		// A process killed by a signal has no exit code: the server sends
		// exit-signal and x/crypto/ssh reports 128+n as its status.
		if ee.Signal() != "" {
			return nil, fail(-1, fmt.Errorf("killed by signal %s", ee.Signal()), so, se, out)
		}
		return nil, fail(ee.ExitStatus(), err, so, se, out)
	default:
		return nil, fail(-1, err, so, se, out)
	}
}
