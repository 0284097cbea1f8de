//go:build unix

// Package sshtest runs a real SSH server on loopback for tests, built with
// golang.org/x/crypto/ssh: public-key auth, exec requests run with /bin/sh,
// exit-status, signals and closed channels kill the process group. Its PATH
// starts with stand-ins for `sudo` (accepts only -n) and `powershell`
// (checks the -EncodedCommand and -File forms, prints the script and saves
// its stdin, keeps the transport's uploads as files and runs their removal),
// so hybridctl's Linux and Windows command forms are verified end to end
// without root or Windows.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Server is a real SSH server on loopback.
type Server struct {
	t *testing.T
	// Addr is host:port.
	Addr string
	// HostKey is the server's key.
	HostKey  ssh.Signer
	authKeys []ssh.PublicKey
	// Dir is the commands' working directory and HOME; the stand-ins live
	// in Dir/bin, sudo logs to Dir/sudo.log, powershell saves stdin to
	// Dir/powershell.stdin and keeps the files uploaded to Windows paths
	// in Dir/files (WindowsFile).
	Dir string
	env []string

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]bool
	commands []string
	wg       sync.WaitGroup
}

// Key is a client key written to a file (OpenSSH format, 0600).
type Key struct {
	Signer ssh.Signer
	Priv   ed25519.PrivateKey
	Path   string
}

// NewKey generates an ed25519 client key.
func NewKey(t *testing.T) *Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Key{Signer: s, Priv: priv, Path: p}
}

// NewHostKey generates an ed25519 host key.
func NewHostKey(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const sudoShim = `#!/bin/sh
# sudo stand-in: like sudo -n it never prompts; refuses any other form.
[ "$1" = "-n" ] || { echo "sudo: a password is required" >&2; exit 1; }
shift
[ "$1" = "--" ] && shift
printf '%s\n' "$*" >> "$SHIM_DIR/sudo.log"
exec "$@"
`

const powershellShim = `#!/bin/sh
# powershell stand-in for the two forms hybridctl sends. Windows paths map to
# files in $SHIM_DIR/files, named by the path with \, / and : as _.
#  -NoProfile -NonInteractive -EncodedCommand B64: prints the decoded script
#   (base64 of UTF-16LE, decoded with coreutils and iconv) and saves stdin.
#   When the script is one of the transport's uploads (a line $dst = 'PATH'
#   and a file created with FileMode CreateNew) the decoded base64 lines of
#   stdin become the file PATH.
#  -NoProfile -NonInteractive -ExecutionPolicy Bypass -File PATH: PATH must
#   exist (PowerShell refuses a missing one); prints it without its byte
#   order mark and saves stdin.
# In both, a line Remove-Item -LiteralPath 'PATH' -Force -ErrorAction
# SilentlyContinue removes the file PATH.
files="$SHIM_DIR/files"
mkdir -p "$files"
script=$(mktemp "$SHIM_DIR/.powershell-script.XXXXXX") || exit 70
trap 'rm -f "$script"' EXIT
winpath() { printf '%s' "$1" | tr '\\/:' '___'; }
removes() {
  grep "^Remove-Item -LiteralPath '[^']*' -Force -ErrorAction SilentlyContinue\$" "$script" | cut -d"'" -f2 | while IFS= read -r p; do
    rm -f -- "$files/$(winpath "$p")"
  done
}
if [ $# -eq 4 ] && [ "$1" = -NoProfile ] && [ "$2" = -NonInteractive ] && [ "$3" = -EncodedCommand ]; then
  printf '%s' "$4" | base64 -d | iconv -f UTF-16LE -t UTF-8 > "$script" || exit 65
  cat "$script"
  cat > "$SHIM_DIR/powershell.stdin"
  dst=$(grep -m 1 "^\\\$dst = '[^']*'\$" "$script" | cut -d"'" -f2)
  if [ -n "$dst" ] && grep -q 'FileMode\]::CreateNew' "$script"; then
    base64 -d < "$SHIM_DIR/powershell.stdin" > "$files/$(winpath "$dst")" || exit 1
  fi
  removes
  exit 0
fi
if [ $# -eq 6 ] && [ "$1" = -NoProfile ] && [ "$2" = -NonInteractive ] && [ "$3" = -ExecutionPolicy ] && [ "$4" = Bypass ] && [ "$5" = -File ]; then
  f="$files/$(winpath "$6")"
  if [ ! -f "$f" ]; then
    echo "The argument '$6' to the -File parameter does not exist." >&2
    exit 64
  fi
  sed '1s/^\xef\xbb\xbf//' "$f" > "$script"
  cat "$script"
  cat > "$SHIM_DIR/powershell.stdin"
  removes
  exit 0
fi
echo "powershell: unexpected arguments: $*" >&2
exit 64
`

// Start starts a server that accepts the authorized keys; it stops at the
// end of the test.
func Start(t *testing.T, authorized ...ssh.PublicKey) *Server {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"sudo": sudoShim, "powershell": powershellShim} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{
		t: t, HostKey: NewHostKey(t), authKeys: authorized, Dir: dir,
		env:   []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "SHIM_DIR=" + dir, "HOME=" + dir, "LC_ALL=C"},
		conns: map[net.Conn]bool{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

// Stop closes the listener and every connection (like sshd going down).
func (s *Server) Stop() {
	s.mu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
		s.ln = nil
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Restart listens again on the same address with the same host key.
func (s *Server) Restart() {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		s.t.Errorf("restarting test server on %s: %v", s.Addr, err)
		return
	}
	s.serve(ln)
}

// Commands returns the exec requests received, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

// KnownHostsFile writes a known_hosts file (0600, in a directory of the
// test's) that holds only this server's line, and returns its path.
func (s *Server) KnownHostsFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(s.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// KnownHostsLine is the known_hosts line for this server.
func (s *Server) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey.PublicKey()) + "\n"
}

func (s *Server) serve(ln net.Listener) {
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range s.authKeys {
				if string(k.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("unauthorized key")
		},
	}
	cfg.AddHostKey(s.HostKey)
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() {
					_ = c.Close()
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
				}()
				sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				defer func() { _ = sc.Close() }()
				go ssh.DiscardRequests(reqs) // keepalives get a false reply, which is still a reply
				var cw sync.WaitGroup
				for nc := range chans {
					if nc.ChannelType() != "session" {
						_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
						continue
					}
					ch, creqs, err := nc.Accept()
					if err != nil {
						continue
					}
					cw.Add(1)
					go func() { defer cw.Done(); s.session(ch, creqs) }()
				}
				cw.Wait()
			}()
		}
	}()
}

// session handles one session channel: env is accepted and ignored, exec
// runs the command; the channel closing (or a signal) kills the process
// group.
func (s *Server) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	var cmd *exec.Cmd
	exited := make(chan uint32, 1)
	kill := func() {
		if cmd != nil && cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	for {
		select {
		case req, ok := <-reqs:
			if !ok {
				kill()
				return
			}
			switch req.Type {
			case "exec":
				if cmd != nil || len(req.Payload) < 4 {
					_ = req.Reply(false, nil)
					continue
				}
				n := binary.BigEndian.Uint32(req.Payload)
				line := string(req.Payload[4 : 4+n])
				s.mu.Lock()
				s.commands = append(s.commands, line)
				s.mu.Unlock()
				cmd = exec.Command("/bin/sh", "-c", line)
				cmd.Env = s.env
				cmd.Dir = s.Dir
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				cmd.Stdout = ch
				cmd.Stderr = ch.Stderr()
				in, _ := cmd.StdinPipe()
				if err := cmd.Start(); err != nil {
					_ = req.Reply(false, nil)
					return
				}
				_ = req.Reply(true, nil)
				go func() { _, _ = io.Copy(in, ch); _ = in.Close() }()
				go func() {
					err := cmd.Wait()
					code := uint32(0)
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						code = uint32(ee.ExitCode())
						if ee.ExitCode() < 0 {
							code = 137
						}
					}
					exited <- code
				}()
			case "signal":
				kill()
				_ = req.Reply(true, nil)
			default:
				_ = req.Reply(req.Type == "env", nil)
			}
		case code := <-exited:
			_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, code))
			return
		}
	}
}

// WindowsFile is where the powershell stand-in keeps what was uploaded to
// the Windows path p.
func (s *Server) WindowsFile(p string) string {
	return filepath.Join(s.Dir, "files", strings.NewReplacer(`\`, "_", "/", "_", ":", "_").Replace(p))
}

// Shim installs an executable stand-in for a command (a shell script body)
// first on the server's PATH, e.g. a `kubeadm` that records its arguments.
func (s *Server) Shim(name, body string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, "bin", name), []byte(body), 0o755); err != nil {
		s.t.Fatal(err)
	}
}
