package hostfactstest

import (
	"context"
	"embed"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// Marker is the marker of the fixtures' sections (a real run's is random).
const Marker = "hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b"

// Fixture names (testdata/README.md says where their values come from).
const (
	HostUbuntu  = "host-ubuntu-26.04.txt"        // the host script, an Ubuntu 26.04 node
	HostWindows = "host-windows-server-2025.txt" // the host script, a Windows Server 2025 node
	NodeLinux   = "node-linux-1.out"             // the node script, the guide's Linux worker
	NodeWindows = "node-windows-1.json"          // the node script, the guide's Windows worker
)

//go:embed testdata/*.txt testdata/*.out testdata/*.json
var fixtures embed.FS

// Fixture returns a fixture's text.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Runner plays a host for hostfacts.GatherHost: it answers the clock
// command with Clock(t0) (this machine's time when Clock is nil) and any
// other script with Out(t0), sections written as for Wire with header
// "### " and put in the protocol with the script's own marker, after
// Delay. A script without a marker fails as a command would; with Err set,
// every script fails with it.
type Runner struct {
	Err   error
	Delay time.Duration
	Clock func(t0 time.Time) string
	Out   func(t0 time.Time) string
}

// scriptMarker is the marker a script was written with (hostfacts's shell
// or PowerShell function).
var scriptMarker = regexp.MustCompile(`(?:m=|\$hfM = )'([A-Za-z0-9-]+)'`)

// Run answers script as the host would.
func (r Runner) Run(ctx context.Context, script string) (*transport.Result, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	t0 := time.Now()
	time.Sleep(r.Delay)
	if script == hostfacts.ClockCommand(engine.Linux) || script == hostfacts.ClockCommand(engine.Windows) {
		if r.Clock == nil {
			return &transport.Result{Stdout: []byte(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")}, nil
		}
		return &transport.Result{Stdout: []byte(r.Clock(t0))}, nil
	}
	m := scriptMarker.FindStringSubmatch(script)
	if m == nil {
		return nil, &transport.CommandError{Host: "fake", Command: script, ExitCode: 2}
	}
	return &transport.Result{Stdout: []byte(Wire(m[1], "### ", r.Out(t0)))}, nil
}

// Dial connects to a fresh loopback SSH server (sshtest's), as a host of
// hostOS.
func Dial(t *testing.T, hostOS engine.OS) (*transport.Client, *sshtest.Server) {
	t.Helper()
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, transport.Config{Host: "loopback", OS: hostOS, Address: srv.Addr, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// nodeShims are stand-ins for a Linux node's tools: each prints the
// section of NodeLinux the real tool would print. date, getent, bash,
// timeout, ls and head are the real ones.
const nodeShims = `
systemctl:cat "$SHIM_DIR/rec/services"
crictl:cat "$SHIM_DIR/rec/crictl"
journalctl:cat "$SHIM_DIR/rec/kubelet-log"
timedatectl:cat "$SHIM_DIR/rec/time-sync"
bridge:[ "$*" = "-j fdb show dev vxlan.calico" ] && exec cat "$SHIM_DIR/rec/fdb vxlan.calico"; echo "bridge: unexpected $*" >&2; exit 1
cat:[ "$*" = /proc/net/udp ] && exec /bin/cat "$SHIM_DIR/rec/udp"; exec /bin/cat "$@"
ip:case "$*" in
  "-j -d link show") exec cat "$SHIM_DIR/rec/links" ;;
  "-j -4 addr show") exec cat "$SHIM_DIR/rec/addrs" ;;
  "-j -4 route show table main") exec cat "$SHIM_DIR/rec/routes" ;;
  "-o link show type vxlan") echo "5: vxlan.calico: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default" ;;
  "-j -4 neigh show dev vxlan.calico") exec cat "$SHIM_DIR/rec/neigh vxlan.calico" ;;
  *) echo "ip: unexpected $*" >&2; exit 1 ;;
esac
`

// InstallNodeShims makes an sshtest server's host (its directory dir) a
// recorded Linux node for the node script: the stand-ins go into dir/bin
// and NodeLinux's sections into dir/rec.
func InstallNodeShims(t testing.TB, dir string) {
	t.Helper()
	secs, err := hostfacts.Split([]byte(Fixture(t, NodeLinux)), Marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "rec"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if strings.Contains(s.Name, "/") {
			continue // the CNI files: the script reads this machine's
		}
		if err := os.WriteFile(filepath.Join(dir, "rec", s.Name), []byte(s.Out+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var name string
	var body strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte("#!/bin/sh\n"+body.String()), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(nodeShims), "\n") {
		if n, rest, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") && !strings.Contains(n, " ") && !strings.HasPrefix(l, "esac") {
			flush()
			name = n
			body.Reset()
			body.WriteString(rest + "\n")
			continue
		}
		body.WriteString(l + "\n")
	}
	flush()
}

// APIListener stands for the API server a node script probes: a TCP
// listener on loopback that accepts and closes. It returns its port.
func APIListener(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
			_ = c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// Sections writes text whose sections start with "### NAME" lines in
// hostfacts's protocol with Marker, as a script prints them.
func Sections(text string) string { return Wire(Marker, "### ", text) }

// ParseHost parses Sections(text) as host h's host script output.
func ParseHost(t testing.TB, h engine.Host, text string) *hostfacts.Host {
	t.Helper()
	f, err := hostfacts.ParseHost(h, Sections(text), Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
