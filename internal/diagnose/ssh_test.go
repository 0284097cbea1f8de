//go:build unix

package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
)

// Stand-ins for the node's tools: each prints the section of the recorded
// output (testdata/linux-node-1.out) the real tool would print. date,
// getent, bash, timeout, ls and head are the real ones.
const linuxShims = `
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

// installLinuxShims writes the stand-ins into dir/bin and the recorded
// sections into dir/rec.
func installLinuxShims(t *testing.T, dir string) {
	t.Helper()
	secs, err := hostfacts.Split([]byte(readFixture(t, "linux-node-1.out")), testMarker)
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
	for _, l := range strings.Split(strings.TrimSpace(linuxShims), "\n") {
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

// apiListener stands for the API server: a TCP listener on loopback.
func apiListener(t *testing.T) int {
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

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hostileHosts are API hosts that would run a command if the script ever
// put them inside a string a shell evaluates.
func hostileHosts(marker string) []string {
	return []string{
		"127.0.0.1$(touch " + marker + ")",
		"127.0.0.1`touch " + marker + "`",
		"x'; touch " + marker + "; echo '",
		`x"; touch ` + marker + `; echo "`,
		"127.0.0.1; touch " + marker,
		"-o ProxyCommand=touch " + marker,
	}
}

// netnsShims make the name lookups of the hostile hosts stay on this
// machine: getent and timeout (which runs bash's /dev/tcp connect) run in a
// new network namespace with no interfaces (they fail closed when it
// cannot be made), so a junk name never reaches a DNS server.
func netnsShims(t *testing.T, dir string) {
	t.Helper()
	for name, real := range map[string]string{"getent": "/usr/bin/getent", "timeout": "/usr/bin/timeout"} {
		body := "#!/bin/sh\nexec unshare -n " + real + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// linuxGather runs the real Linux script over c (a real SSH server's
// session, sudo -n, the login shell) against the recorded tools: every
// section arrives and parses, the clock is this machine's, the API probe
// connects. Then hostile API hosts: the script gets them as arguments, so
// none runs a command on the node.
//
// probeAPI is false where process start-up is too slow for the probe's 5 s
// (Debian's sshd on a loaded machine: a session took 65 s to run date);
// the API is then left out of the clean run.
func linuxGather(t *testing.T, c *transport.Client, dir string, n int, probeAPI bool) {
	port := apiListener(t)
	x := labExpect()
	x.APIHost, x.APIPort = "127.0.0.1", port
	f, err := Gather(ctxT(t), c, "k8s-lab-node-1", x)
	if err != nil {
		t.Fatalf("%v\noutput: %s", err, engine.CommandOutput(err))
	}
	if !f.API.OK && probeAPI {
		t.Errorf("API probe to 127.0.0.1:%d failed: %s", port, f.API.Detail)
	}
	if skew, unc := f.Clock.Skew(); !f.Clock.Sampled || skew.Abs() > unc+time.Second {
		t.Errorf("clock of this very machine: skew %s ± %s (%+v)", skew, unc, f.Clock)
	}
	if l, ok := f.Linux.link("vxlan.calico"); !ok || l.MAC != "66:ee:f4:61:98:50" || len(f.Linux.FDB) != 3 || len(f.Linux.Neigh) != 3 {
		t.Errorf("overlay tables: %+v", f.Linux)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sudo.log")); !strings.Contains(string(b), "sh -c") {
		t.Errorf("the script did not run through sudo -n: %q", b)
	}
	// The CNI directory is this machine's: HC506 is left out.
	all := map[string]bool{"HC501": true, "HC502": true, "HC503": true, "HC504": probeAPI, "HC505": true, "HC507": true, "HC508": true}
	fs, sk := Evaluate(f, calicoLab(t), nil, x, all)
	expectExactly(t, fs)
	if len(sk) != 0 {
		t.Errorf("skipped %+v", sk)
	}

	netnsShims(t, dir)
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, host := range hostileHosts(marker)[:n] {
		x.APIHost = host
		f, err := Gather(ctxT(t), c, "k8s-lab-node-1", x)
		if err != nil {
			t.Fatalf("host %q: %v", host, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the API host %q ran a command on the node", host)
		}
		fs, _ := Evaluate(f, calicoLab(t), nil, x, map[string]bool{"HC504": true})
		expectExactly(t, fs, want{"HC504", finding.Error, []string{"cannot open a TCP connection to the API at " + net.JoinHostPort(host, strconv.Itoa(port))}})
	}
	x.APIHost = "127.0.0.1\ntouch " + marker
	if _, err := Gather(ctxT(t), c, "k8s-lab-node-1", x); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("a host with a line break: %v", err)
	}
}

// Through the in-process SSH server (exec with /bin/sh -c, the sudo -n
// stand-in): every hostile host.
func TestGatherLinuxOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	installLinuxShims(t, srv.Dir)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := transport.Dial(ctxT(t), transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "user", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 10 * time.Second, OS: engine.Linux, Sudo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	linuxGather(t, c, srv.Dir, len(hostileHosts("")), true)

	// What ran: for each gathering the clock command, then the script the
	// transport's way (sudo -n, sh -c with set -e) with the marker, the
	// API host and port as quoted words of their own.
	cmds := srv.Commands()
	if len(cmds) != 2*(1+len(hostileHosts(""))) {
		t.Fatalf("%d commands, want a clock command and the script for each of %d gatherings", len(cmds), 1+len(hostileHosts("")))
	}
	head := "sudo -n -- sh -c " + transport.ShellQuote("set -e\n"+LinuxScript) + " hybridctl "
	m := regexp.MustCompile(`^(hybridctl-[0-9a-f]{24}) 127\.0\.0\.1 ([0-9]+)$`).FindStringSubmatch(strings.TrimPrefix(cmds[1], head))
	if cmds[0] != "sudo -n -- sh -c 'set -e\ndate +%s%N'" || !strings.HasPrefix(cmds[1], head) || m == nil {
		t.Fatalf("the first gathering ran\n%q\n%.200q...", cmds[0], cmds[1])
	}
	port, _ := strconv.Atoi(m[2])
	if want, err := c.CommandLineArgs(LinuxScript, LinuxArgs(m[1], "127.0.0.1", port)...); err != nil || cmds[1] != want {
		t.Errorf("the script's command line is not the transport's: %v", err)
	}
	markers := map[string]bool{}
	for i := 1; i < len(cmds); i += 2 {
		marker, _, _ := strings.Cut(strings.TrimPrefix(cmds[i], head), " ")
		if cmds[i-1] != cmds[0] || !strings.HasPrefix(cmds[i], head) || markers[marker] {
			t.Errorf("gathering %d: clock %q, the script's marker %q (a marker of its own each run)", i/2, cmds[i-1], marker)
		}
		markers[marker] = true
	}
}

// Through Debian's real sshd and the user's login shell: the first two
// hostile hosts, the API probe's success left out (see linuxGather).
func TestGatherLinuxOverOpenSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("a real sshd's sessions take seconds to a minute each on a loaded machine; skipped under -short")
	}
	key := sshtest.NewKey(t)
	o := sshtest.StartOpenSSH(t, key.Signer.PublicKey())
	installLinuxShims(t, o.Dir)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(o.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := transport.Dial(ctxT(t), transport.Config{Host: "k8s-lab-node-1", Address: o.Addr, User: o.User, KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 30 * time.Second, OS: engine.Linux, Sudo: true})
	if err != nil {
		t.Fatalf("%v\nsshd: %s", err, o.Log())
	}
	defer func() { _ = c.Close() }()
	linuxGather(t, c, o.Dir, 2, false)
}

// The Windows script as it reaches a Windows node: PowerShell
// -EncodedCommand through a real SSH server, the API host only on standard
// input (as JSON, never in the script), the output parsed. The script as
// sent parses with the repository's PowerShell parser.
func TestGatherWindowsOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	if err := os.WriteFile(filepath.Join(srv.Dir, "win.json"), []byte(readFixture(t, "windows-win-1.json")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The repository's powershell stand-in (which checks the form, keeps
	// uploads as files and runs -File), wrapped to keep each script as it
	// would run and its stdin, and to answer the gathering script with the
	// recorded output and anything else (the clock command) with this
	// machine's clock.
	real, err := os.ReadFile(filepath.Join(srv.Dir, "bin", "powershell"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Shim("powershell-real", string(real))
	srv.Shim("powershell", `#!/bin/sh
n=$(ls "$SHIM_DIR" | grep -c '^script-')
powershell-real "$@" > "$SHIM_DIR/script-$n" || exit $?
cp "$SHIM_DIR/powershell.stdin" "$SHIM_DIR/stdin-$n"
if grep -q ConvertTo-Json "$SHIM_DIR/script-$n"; then cat "$SHIM_DIR/win.json"; else echo $(($(date +%s%N) / 1000000)); fi
`)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := transport.Config{Host: "k8s-lab-win-1", Address: srv.Addr, User: "Administrator", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 10 * time.Second, OS: engine.Windows}
	c, err := transport.Dial(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	x := labExpect()
	x.APIHost = "k8s-lab-api.example.com'; Remove-Item -Recurse C:\\ #$(whoami)"
	f, err := Gather(ctxT(t), c, "k8s-lab-win-1", x)
	if err != nil {
		t.Fatal(err)
	}
	if skew, unc := f.Clock.Skew(); !f.Clock.Sampled || skew.Abs() > unc+time.Second {
		t.Errorf("clock: %s ± %s", skew, unc)
	}
	if n, ok := f.Windows.network("Calico"); !ok || len(n.Routes) != 3 {
		t.Errorf("HNS: %+v", f.Windows)
	}
	// The clock command, the upload of the gathering script (too long for
	// a command line) and its run with -File; each command line fits.
	cmds := srv.Commands()
	if len(cmds) != 3 || !strings.Contains(cmds[2], " -File ") {
		t.Fatalf("commands: %d, want the clock, the upload and the -File run", len(cmds))
	}
	for _, l := range cmds {
		if len(l) > transport.MaxWindowsCommandLine {
			t.Errorf("a command line of %d characters", len(l))
		}
	}
	script, err := os.ReadFile(filepath.Join(srv.Dir, "script-2"))
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := os.ReadFile(filepath.Join(srv.Dir, "stdin-2"))
	_, body, _ := strings.Cut(string(script), "\n")
	if body != transport.WrapPowerShell(WindowsScript) {
		t.Errorf("the script run is not the gathering script")
	}
	if strings.Contains(string(script), "Remove-Item -Recurse") {
		t.Error("the API host is in the script's text")
	}
	if string(stdin) != string(WindowsInput(x.APIHost, x.APIPort)) {
		t.Errorf("stdin %q, want %q", stdin, WindowsInput(x.APIHost, x.APIPort))
	}
	clock, _ := os.ReadFile(filepath.Join(srv.Dir, "script-0"))
	pwshtest.Check(t, pwshtest.Script{Name: "gather.ps1 as sent", Text: string(script)},
		pwshtest.Script{Name: "the clock command as sent", Text: string(clock)})
}

// Run over several nodes: one reached, one whose SSH port is closed; the
// result keeps spec order, names the node not reached and is incomplete.
func TestRunMixed(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	installLinuxShims(t, srv.Dir)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(
		transport.Config{Host: "k8s-lab-master-1", Address: closed, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second},
		transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second},
	)
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.APIHost, x.APIPort = "127.0.0.1", apiListener(t)
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-master-1", OS: engine.Linux}, {Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x, Only: map[string]bool{"HC504": true, "HC508": true},
	})
	if len(r.Nodes) != 2 || r.Nodes[0].Error == "" || r.Nodes[1].Error != "" || !r.Incomplete() || r.Ran != 2 || strings.Join(r.Checks, ",") != "HC504,HC508" {
		t.Fatalf("%+v", r.Nodes)
	}
	expectExactly(t, r.Findings)
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "NOT REACHED (1)\n  k8s-lab-master-1: connecting to k8s-lab-master-1") || !strings.Contains(b.String(), "2 checks on 2 nodes, 0 skipped, 1 not reached; overlay from calico") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestCollectRefusesPlantedLink reproduces the attack on --collect: a
// support directory that already holds DIR/<node> -> ../outside (or a link
// deeper down, or at findings.json) after a real gathering over the
// loopback sshd. Collect refuses the link, names it, and the outside
// folder keeps its mode and its files; nothing is created there.
func TestCollectRefusesPlantedLink(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	installLinuxShims(t, srv.Dir)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second})
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.APIHost, x.APIPort = "127.0.0.1", apiListener(t)
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x,
	})
	if r.Nodes[0].Facts == nil || len(r.Nodes[0].Facts.Raw) == 0 {
		t.Fatalf("nothing gathered: %+v", r.Nodes)
	}
	// This machine may have no CNI configuration: one is added, so there
	// is a directory below the node's.
	r.Nodes[0].Facts.Raw = append(r.Nodes[0].Facts.Raw, RawFile{Name: "cni/99-test.conflist.txt", Data: []byte("{}\n")})
	for _, tc := range []struct{ link, target string }{
		{"k8s-lab-node-1", "../outside"},
		{"k8s-lab-node-1/cni", "../../outside"},
		{"findings.json", "../outside/routes.txt"},
	} {
		t.Run(tc.link, func(t *testing.T) {
			base := t.TempDir()
			dir, outside := filepath.Join(base, "support"), filepath.Join(base, "outside")
			for _, d := range []string{dir, filepath.Dir(filepath.Join(dir, tc.link)), outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "routes.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			err := Collect(ctxT(t), dir, r)
			want := "refusing to write through " + filepath.Join(dir, tc.link) + ": it is a symbolic link"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Collect: %v\nwant an error containing %q", err, want)
			}
			if st, _ := os.Stat(outside); st.Mode().Perm() != 0o755 {
				t.Errorf("the outside folder's mode changed to %o", st.Mode().Perm())
			}
			ents, _ := os.ReadDir(outside)
			if b, _ := os.ReadFile(filepath.Join(outside, "routes.txt")); len(ents) != 1 || string(b) != "mine\n" {
				t.Errorf("the outside folder changed: %d entries, routes.txt %q", len(ents), b)
			}
			if st, err := os.Lstat(filepath.Join(dir, tc.link)); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the planted link was replaced: %v", err)
			}
		})
	}
	// The same gathering into a clean directory is collected.
	dir := filepath.Join(t.TempDir(), "support")
	if err := Collect(ctxT(t), dir, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k8s-lab-node-1", "routes.txt")); err != nil {
		t.Errorf("no routes.txt: %v", err)
	}
}

// TestGatherFloodBounded: a node whose journal answers the gathering with
// hundreds of MiB (the loopback sshd runs the real script, with a
// journalctl that prints 256 MiB of log lines with a token in each) fails
// with a message saying how much it sent, while the heap stays bounded by
// the parse limit (the whole output was kept twice before); with
// --collect the first MaxCollectedOutput of it is kept, redacted, 0600,
// and named in the message.
func TestGatherFloodBounded(t *testing.T) {
	size := int64(256 << 20)
	if testing.Short() {
		size = 40 << 20
	}
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	installLinuxShims(t, srv.Dir)
	flood := func(size int64) {
		srv.Shim("journalctl", fmt.Sprintf("#!/bin/sh\nyes \"Dec 06 10:00:00 node kubelet[42]: token=abcdef.0123456789abcdef $(head -c 4000 /dev/zero | tr '\\0' x)\" | head -c %d\n", size))
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second})
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.APIHost, x.APIPort = "127.0.0.1", apiListener(t)
	dir := filepath.Join(t.TempDir(), "support")
	cd, err := OpenCollect(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	// Without --collect a smaller flood (the message is the point), with
	// it the large one (memory, and the kept file).
	for _, collect := range []*atomicfile.Dir{nil, cd} {
		flood(map[bool]int64{true: size, false: 40 << 20}[collect != nil])
		runtime.GC()
		base := liveHeap()
		stop := heapPeak()
		r := Run(ctxT(t), Options{
			Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
			Dial:    func(ctx context.Context, n string) (Conn, error) { return pool.Get(ctx, n) },
			Cluster: calicoLab(t), Expect: x, Collect: collect, NodeTimeout: 4 * time.Minute,
		})
		grew := int64(stop()) - int64(base)
		t.Logf("collect %v: the live heap grew by at most %s", collect != nil, transport.MiB(grew))
		// The parse limit, kept whole, and a margin; keeping the output
		// took twice its size.
		if bound := int64(MaxGatherBytes + 16<<20); grew > bound {
			t.Errorf("collect %v: the heap grew by %s (bound %s)", collect != nil, transport.MiB(grew), transport.MiB(bound))
		}
		msg := r.Nodes[0].Error
		if r.Nodes[0].Facts != nil || !strings.Contains(msg, "k8s-lab-node-1 sent ") || !strings.Contains(msg, "MiB (") ||
			!strings.Contains(msg, "on standard output, more than the 16.0 MiB hybridctl reads of this command's output") {
			t.Fatalf("collect %v: node result %q", collect != nil, msg)
		}
		kept := filepath.Join(dir, "k8s-lab-node-1", "gather-output.txt")
		if collect == nil {
			if strings.Contains(msg, "gather-output") {
				t.Errorf("names a kept file without --collect: %s", msg)
			}
			continue
		}
		// All of it is kept when it is shorter than MaxCollectedOutput
		// (the -short flood), its first MaxCollectedOutput otherwise.
		keptMsg, low := "; the first 64.0 MiB of it, redacted, is in "+kept, int64(MaxCollectedOutput-8192)
		if size < MaxCollectedOutput {
			keptMsg, low = " MiB of it, redacted, is in "+kept, size/2
		}
		if !strings.HasSuffix(msg, keptMsg) {
			t.Errorf("the message does not name the kept output: %s", msg)
		}
		st, err := os.Stat(kept)
		if err != nil || st.Mode().Perm() != 0o600 || st.Size() < low || st.Size() > MaxCollectedOutput+100 {
			t.Fatalf("kept output: %v %v", st, err)
		}
		f, err := os.Open(kept)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 128<<10), 128<<10)
		lines := 0
		for sc.Scan() {
			lines++
			if strings.Contains(sc.Text(), "0123456789abcdef") {
				t.Fatalf("line %d of the kept output holds the token", lines)
			}
		}
		f.Close()
		if lines < 1000 || sc.Err() != nil {
			t.Errorf("kept %d lines: %v", lines, sc.Err())
		}
	}
	// A node within the limit keeps nothing extra.
	srv.Shim("journalctl", "#!/bin/sh\necho 'Dec 06 10:00:00 node kubelet[42]: ok'\n")
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x, Collect: cd,
	})
	if r.Nodes[0].Error != "" {
		t.Fatal(r.Nodes[0].Error)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "k8s-lab-node-1"))
	for _, e := range ents {
		if e.Name() != "gather-output.txt" { // the first run's
			t.Errorf("left in the node's directory: %s", e.Name())
		}
	}
}

// liveHeap is the live heap as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak samples the live heap (what the last collection found
// reachable, garbage left out) every few milliseconds until stop is called
// and returns the largest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}
