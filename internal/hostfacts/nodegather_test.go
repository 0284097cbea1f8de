//go:build unix

package hostfacts_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
)

// ctxT bounds a test's gathering.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recorded is the node the shims play (hostfactstest.InstallNodeShims):
// NodeLinux, parsed.
func recorded(t *testing.T) *hostfacts.Node {
	t.Helper()
	f, err := hostfacts.ParseNodeLinux("k8s-lab-node-1", []byte(hostfactstest.Fixture(t, hostfactstest.NodeLinux)), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
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
	port := hostfactstest.APIListener(t)
	api := hostfacts.API{Host: "127.0.0.1", Port: port}
	f, err := hostfacts.GatherNode(ctxT(t), c, "k8s-lab-node-1", api, nil)
	if err != nil {
		t.Fatalf("%v\noutput: %s", err, engine.CommandOutput(err))
	}
	if !f.API.OK && probeAPI {
		t.Errorf("API probe to 127.0.0.1:%d failed: %s", port, f.API.Detail)
	}
	if skew, unc := f.Clock.Skew(); !f.Clock.Sampled || skew.Abs() > unc+time.Second {
		t.Errorf("clock of this very machine: skew %s ± %s (%+v)", skew, unc, f.Clock)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sudo.log")); !strings.Contains(string(b), "sh -c") {
		t.Errorf("the script did not run through sudo -n: %q", b)
	}
	// What the tools printed arrives as the recording says, through the
	// real script, shell and SSH session. (The CNI directory is this
	// machine's, the clock and the API probe are this run's.)
	want := recorded(t)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"services", f.Services, want.Services},
		{"CRI", f.CRI, want.CRI},
		{"CRI conditions", f.CRIConditions, want.CRIConditions},
		{"kubelet log", f.KubeletLog, want.KubeletLog},
		{"time sync", f.Clock.Synced, want.Clock.Synced},
		{"overlay network", f.Linux, want.Linux},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s over SSH:\n%+v\nrecorded:\n%+v", c.what, c.got, c.want)
		}
	}
	if l, ok := f.Linux.LinkNamed("vxlan.calico"); !ok || l.MAC != "66:ee:f4:61:98:50" || len(f.Linux.FDB) != 3 || len(f.Linux.Neigh) != 3 {
		t.Errorf("overlay tables: %+v", f.Linux)
	}

	netnsShims(t, dir)
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, host := range hostileHosts(marker)[:n] {
		f, err := hostfacts.GatherNode(ctxT(t), c, "k8s-lab-node-1", hostfacts.API{Host: host, Port: port}, nil)
		if err != nil {
			t.Fatalf("host %q: %v", host, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the API host %q ran a command on the node", host)
		}
		if !f.API.Ran || f.API.OK {
			t.Errorf("host %q: the API probe %+v, want one that ran and failed", host, f.API)
		}
	}
	if _, err := hostfacts.GatherNode(ctxT(t), c, "k8s-lab-node-1", hostfacts.API{Host: "127.0.0.1\ntouch " + marker, Port: port}, nil); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("a host with a line break: %v", err)
	}
}

// Through the in-process SSH server (exec with /bin/sh -c, the sudo -n
// stand-in): every hostile host.
func TestGatherNodeLinuxOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, srv.Dir)
	kh := srv.KnownHostsFile(t)
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
	head := "sudo -n -- sh -c " + transport.ShellQuote("set -e\n"+hostfacts.NodeLinuxScript) + " hybridctl "
	m := regexp.MustCompile(`^(hybridctl-[0-9a-f]{24}) 127\.0\.0\.1 ([0-9]+)$`).FindStringSubmatch(strings.TrimPrefix(cmds[1], head))
	if cmds[0] != "sudo -n -- sh -c 'set -e\ndate +%s%N'" || !strings.HasPrefix(cmds[1], head) || m == nil {
		t.Fatalf("the first gathering ran\n%q\n%.200q...", cmds[0], cmds[1])
	}
	port, _ := strconv.Atoi(m[2])
	if want, err := c.CommandLineArgs(hostfacts.NodeLinuxScript, hostfacts.NodeLinuxArgs(m[1], hostfacts.API{Host: "127.0.0.1", Port: port})...); err != nil || cmds[1] != want {
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
func TestGatherNodeLinuxOverOpenSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("a real sshd's sessions take seconds to a minute each on a loaded machine; skipped under -short")
	}
	key := sshtest.NewKey(t)
	o := sshtest.StartOpenSSH(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, o.Dir)
	kh := o.KnownHostsFile(t)
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
func TestGatherNodeWindowsOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	if err := os.WriteFile(filepath.Join(srv.Dir, "win.json"), []byte(hostfactstest.Fixture(t, hostfactstest.NodeWindows)), 0o644); err != nil {
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
	kh := srv.KnownHostsFile(t)
	cfg := transport.Config{Host: "k8s-lab-win-1", Address: srv.Addr, User: "Administrator", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 10 * time.Second, OS: engine.Windows}
	c, err := transport.Dial(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	api := hostfacts.API{Host: "k8s-lab-api.example.com'; Remove-Item -Recurse C:\\ #$(whoami)", Port: 6443}
	f, err := hostfacts.GatherNode(ctxT(t), c, "k8s-lab-win-1", api, nil)
	if err != nil {
		t.Fatal(err)
	}
	if skew, unc := f.Clock.Skew(); !f.Clock.Sampled || skew.Abs() > unc+time.Second {
		t.Errorf("clock: %s ± %s", skew, unc)
	}
	if n, ok := f.Windows.NetworkNamed("Calico"); !ok || len(n.Routes) != 3 {
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
	if body != transport.WrapPowerShell(hostfacts.NodeWindowsScript) {
		t.Errorf("the script run is not the gathering script")
	}
	if strings.Contains(string(script), "Remove-Item -Recurse") {
		t.Error("the API host is in the script's text")
	}
	if string(stdin) != string(hostfacts.NodeWindowsInput(api)) {
		t.Errorf("stdin %q, want %q", stdin, hostfacts.NodeWindowsInput(api))
	}
	clock, _ := os.ReadFile(filepath.Join(srv.Dir, "script-0"))
	pwshtest.Check(t, pwshtest.Script{Name: "gather.ps1 as sent", Text: string(script)},
		pwshtest.Script{Name: "the clock command as sent", Text: string(clock)})
}
