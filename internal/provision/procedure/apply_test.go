package procedure

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

func labHosts() []engine.Host {
	return []engine.Host{
		{Name: "k8s-lab-master-1", Role: engine.RoleControlPlane, OS: engine.Linux, Address: "192.168.10.23"},
		{Name: "k8s-lab-node-1", Role: engine.RoleWorker, OS: engine.Linux, Address: "192.168.10.24"},
		{Name: "k8s-lab-node-2", Role: engine.RoleWorker, OS: engine.Linux, Address: "192.168.10.26"},
		{Name: "k8s-lab-win-1", Role: engine.RoleWorker, OS: engine.Windows, Address: "192.168.10.25"},
	}
}

func noConnect(context.Context, string) (*transport.Client, error) {
	return nil, errors.New("offline test: no connections")
}

// noAPI is API access for tests that have no API server: every use fails.
func noAPI(context.Context) (*rest.Config, error) {
	return nil, errors.New("this test has no API server")
}

// labDeps renders the guide's lab (examples/lab.yaml) for real.
func labDeps(t *testing.T) Deps {
	t.Helper()
	res, err := spec.LoadFile(context.Background(), "../../../examples/lab.yaml")
	if err != nil || res.Err() != nil {
		t.Fatalf("lab spec: %v %v", err, res.Err())
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.Render(p, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := Hosts(p); !slices.Equal(got, labHosts()) {
		t.Fatalf("Hosts(plan) = %v", got)
	}
	inv, err := InventoryFrom(p)
	if err != nil {
		t.Fatal(err)
	}
	// Every dependency is there, as Apply gives them; API access and the
	// kubeconfig fail if a test uses them without setting its own.
	return Deps{Hosts: Hosts(p), Connect: noConnect, Expect: Expectations(p), Files: ArtifactsOf(files),
		RESTConfig: noAPI, Inventory: inv, Calico: CalicoFrom(p, ""), Addons: AddonsFrom(p),
		Kubeconfig: &KubeconfigTarget{Store: &kubeconfig.Store{Path: "/nonexistent/kubeconfig"}, Name: p.Cluster}}
}

var (
	stamp = regexp.MustCompile(`(?m)^\[ *[0-9.]+s\] | in [0-9.]+[µnm]?s($|;)`)
	// Sizes and hashes of rendered files change with render's templates;
	// render's own golden files pin the content.
	fileSum = regexp.MustCompile(`[0-9]+ bytes, sha256 [0-9a-f]{64}`)
)

// TestLabDryRunGolden is the whole procedure for the guide's lab as for
// fresh machines (--dry-run --offline), host by host in order.
func TestLabDryRunGolden(t *testing.T) {
	phases := mustPhases(t, labDeps(t))
	var out strings.Builder
	e, err := engine.New(phases, labHosts(), engine.Options{Cluster: "lab", DryRun: true, Offline: true,
		Reporter: engine.NewTextReporter(&out, engine.Descriptors(phases), labHosts())})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := fileSum.ReplaceAllString(stamp.ReplaceAllString(out.String(), "$1"), "N bytes, sha256 …")
	golden := filepath.Join("testdata", "lab-dry-run-offline.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("dry-run differs from %s (run with -update to accept):\n%s", golden, got)
	}
}

// stepOrder returns, per host, the phases in the order the engine plans
// them.
func hostPipeline(phases []engine.Phase, host engine.Host, hosts []engine.Host) []string {
	var out []string
	for _, p := range phases {
		ts := engine.Nodes(hosts)
		if d := p.Describe(); d.Targets != nil {
			ts = d.Targets(hosts)
		}
		if n, ok := engine.Impl(p).(engine.Narrower); ok {
			ts = n.Narrow(ts)
		}
		if slices.ContainsFunc(ts, func(h engine.Host) bool { return h.Name == host.Name }) {
			out = append(out, title(p))
		}
	}
	return out
}

func TestProcedureShape(t *testing.T) {
	phases := mustPhases(t, labDeps(t))
	if _, err := engine.New(phases, labHosts(), engine.Options{}); err != nil {
		t.Fatalf("the list does not validate: %v", err)
	}
	h := labHosts()
	if got := hostPipeline(phases, h[3], h); !slices.Equal(got, []string{"preflight", "windows-prepare", "post-prepare", "join-windows"}) {
		t.Errorf("Windows pipeline %v", got)
	}
	if got := hostPipeline(phases, h[1], h); !slices.Equal(got, []string{"preflight", "linux-prepare", "post-prepare", "join-linux"}) {
		t.Errorf("Linux worker pipeline %v", got)
	}
	if got := hostPipeline(phases, h[0], h); !slices.Contains(got, "kubeadm-init") || slices.Contains(got, "join-linux") {
		t.Errorf("control-plane pipeline %v", got)
	}
	waits := map[string][]string{}
	for _, p := range phases {
		waits[title(p)] = p.Describe().After
	}
	if !slices.Contains(waits["join-windows"], "calico-ready") || !slices.Contains(waits["join-linux"], "calico-ready") {
		t.Errorf("joins must wait for Calico: %v", waits)
	}
}

// A procedure whose phases lack a dependency is refused when it is built,
// naming each phase and what it misses, before anything can run.
func TestMissingDependenciesAreRefusedWhenBuilt(t *testing.T) {
	d := labDeps(t)
	d.ResetNodes = []string{"k8s-lab-win-1"}
	d.RESTConfig = nil
	if _, err := ResetPhases(d); !errors.Is(err, ErrMissingDependency) ||
		!strings.Contains(err.Error(), "phase drain: needs API access (Deps.RESTConfig)") ||
		!strings.Contains(err.Error(), "phase delete-node: needs API access") {
		t.Errorf("reset without API access: %v", err)
	}
	d.RESTConfig = func(context.Context) (*rest.Config, error) { return nil, errors.New("unused") }
	if _, err := ResetPhases(d); err != nil {
		t.Errorf("reset with every dependency: %v", err)
	}
	d.Connect = nil
	if _, err := ResetPhases(d); !errors.Is(err, ErrMissingDependency) ||
		!strings.Contains(err.Error(), "phase reset-workers: needs SSH connections (Deps.Connect)") ||
		strings.Contains(err.Error(), "phase drain") {
		t.Errorf("reset without SSH: %v", err)
	}
	a := labDeps(t)
	a.RESTConfig, a.Files, a.Kubeconfig = nil, nil, nil
	_, err := Phases(a)
	for _, want := range []string{"phase linux-prepare: needs the rendered files", "phase calico: needs API access",
		"phase doctor: needs API access", "phase check-workloads: needs API access", "phase kubeconfig: needs the kubeconfig to import into"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("apply without API access and files: %v; want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "phase preflight:") {
		t.Errorf("preflight needs neither: %v", err)
	}
}

func loopback(t *testing.T, cfgMod func(*transport.Config)) (*transport.Client, *sshtest.Server) {
	t.Helper()
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	cfg := transport.Config{Host: "node", Address: srv.Addr, User: "u", Sudo: true, KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}}
	if cfgMod != nil {
		cfgMod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// TestResetLinuxOverSSH runs the Linux reset over a loopback server with
// stand-ins for kubeadm and rm (this test host must not lose a real CNI
// configuration) and checks the guide's commands arrive, as root via sudo.
func TestResetLinuxOverSSH(t *testing.T) {
	c, srv := loopback(t, nil)
	srv.Shim("kubeadm", "#!/bin/sh\nprintf 'kubeadm %s\\n' \"$*\" >> \"$SHIM_DIR/calls\"\n")
	srv.Shim("rm", "#!/bin/sh\nprintf 'rm %s\\n' \"$*\" >> \"$SHIM_DIR/calls\"\n")
	// containerd still holds a running task and two containers after
	// kubeadm reset: the task is deleted by force, both containers removed.
	srv.Shim("ctr", `#!/bin/sh
printf 'ctr %s\n' "$*" >> "$SHIM_DIR/calls"
case "$*" in
"-n k8s.io tasks ls -q") echo task-a ;;
"-n k8s.io containers ls -q") printf 'task-a\nctr-b\n' ;;
esac
`)
	d := Deps{Hosts: labHosts()[:2], Connect: func(context.Context, string) (*transport.Client, error) { return c, nil }, RESTConfig: noAPI}
	phases := mustResetPhases(t, withReboot(d, time.Minute))
	var reset engine.Phase
	for _, p := range phases {
		if title(p) == "reset-workers" {
			reset = p
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := reset.Run(ctx, labHosts()[1]); err != nil {
		t.Fatal(err)
	}
	calls, err := os.ReadFile(filepath.Join(srv.Dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	want := "kubeadm reset -f\nrm -rf /etc/cni/net.d/*\nctr version\nctr -n k8s.io tasks ls -q\nctr -n k8s.io tasks delete -f task-a\n" +
		"ctr -n k8s.io containers ls -q\nctr -n k8s.io containers rm task-a ctr-b\n"
	if string(calls) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", calls, want)
	}
	// Nothing left in containerd: nothing removed.
	if err := os.Remove(filepath.Join(srv.Dir, "calls")); err != nil {
		t.Fatal(err)
	}
	srv.Shim("ctr", "#!/bin/sh\nprintf 'ctr %s\\n' \"$*\" >> \"$SHIM_DIR/calls\"\n")
	if err := reset.Run(ctx, labHosts()[1]); err != nil {
		t.Fatal(err)
	}
	if calls, _ := os.ReadFile(filepath.Join(srv.Dir, "calls")); strings.Contains(string(calls), "containers rm") || strings.Contains(string(calls), "tasks delete") {
		t.Errorf("removed something from an empty containerd:\n%s", calls)
	}
	cmds := srv.Commands()
	if !strings.HasPrefix(cmds[len(cmds)-1], "sudo -n -- sh -c ") {
		t.Errorf("not run through sudo: %q", cmds[len(cmds)-1])
	}
	// A failing kubeadm fails the phase with its output kept.
	srv.Shim("kubeadm", "#!/bin/sh\necho '[reset] unable to reach the API' >&2\nexit 1\n")
	err = reset.Run(ctx, labHosts()[1])
	if err == nil || !strings.Contains(engine.CommandOutput(err), "unable to reach the API") {
		t.Errorf("want the failure with output, got %v / %q", err, engine.CommandOutput(err))
	}
}

func TestResetSkipsCleanNode(t *testing.T) {
	for _, p := range []string{"/etc/kubernetes/kubelet.conf", "/etc/kubernetes/admin.conf"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this machine", p)
		}
	}
	if entries, _ := os.ReadDir("/etc/cni/net.d"); len(entries) > 0 {
		t.Skip("/etc/cni/net.d is not empty on this machine")
	}
	c, _ := loopback(t, nil)
	d := Deps{Hosts: labHosts()[:2], Connect: func(context.Context, string) (*transport.Client, error) { return c, nil }, RESTConfig: noAPI}
	sk := engine.Impl(mustResetPhases(t, withReboot(d, time.Minute))[2]).(engine.Skipper)
	run, why, err := sk.ShouldRun(context.Background(), labHosts()[1])
	if err != nil || run || !strings.Contains(why, "nothing to reset") {
		t.Errorf("clean node: run=%v why=%q err=%v", run, why, err)
	}
}

// windowsShim is a powershell stand-in for the Windows reset: it decodes
// the script into Dir/ps.N, answers the boot-id command with a boot count
// that the scheduled task's start increments (the reboot), and fails the
// kubeadm reset when Dir/kubeadm-fails exists.
const windowsShim = `#!/bin/sh
n=$(ls "$SHIM_DIR" | grep -c '^ps\.'); n=$((n+1))
printf '%s' "$4" | base64 -d | iconv -f UTF-16LE -t UTF-8 > "$SHIM_DIR/ps.$n"
boots=$(cat "$SHIM_DIR/boots" 2>/dev/null || echo 1)
if grep -q LastBootUpTime "$SHIM_DIR/ps.$n"; then echo "boot-$boots"; exit 0; fi
if grep -q Start-ScheduledTask "$SHIM_DIR/ps.$n"; then echo $((boots+1)) > "$SHIM_DIR/boots"; exit 0; fi
if grep -q "'reset', '-f'" "$SHIM_DIR/ps.$n" && [ -e "$SHIM_DIR/kubeadm-fails" ]; then echo 'kubeadm: unable to reach the API' >&2; exit 1; fi
exit 0
`

// TestResetWindowsOrder runs reset on a Windows node over a loopback
// server and reads the PowerShell that reaches it, decoded on the server:
// the CNI configuration goes first, then kubeadm reset by full path through
// Invoke-Native (its exit code checked), then one detached scheduled task
// removes the HNS networks and reboots, awaited by boot id. A failing
// kubeadm reset stops before the HNS networks and the reboot.
func TestResetWindowsOrder(t *testing.T) {
	c, srv := loopback(t, func(cfg *transport.Config) { cfg.OS = engine.Windows })
	srv.Shim("powershell", windowsShim)
	win := labHosts()[3]
	d := Deps{Hosts: labHosts(), Connect: func(context.Context, string) (*transport.Client, error) { return c, nil }, RESTConfig: noAPI}
	reset := mustResetPhases(t, withReboot(d, time.Minute))[2]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := reset.Run(ctx, win); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for i := 1; ; i++ {
		b, err := os.ReadFile(filepath.Join(srv.Dir, fmt.Sprintf("ps.%d", i)))
		if err != nil {
			break
		}
		sent = append(sent, string(b))
	}
	// reset script, boot id, the task, boot id (reconnect after reboot),
	// the task deleted.
	if len(sent) != 5 {
		t.Fatalf("%d commands sent, want 5:\n%s", len(sent), strings.Join(sent, "\n----\n"))
	}
	if !strings.Contains(sent[4], "Get-ScheduledTask -TaskName 'hybridctl-reset' -ErrorAction SilentlyContinue | Unregister-ScheduledTask -Confirm:$false") {
		t.Errorf("the task is deleted after the reboot:\n%s", sent[4])
	}
	first := sent[0]
	cni := strings.Index(first, `Remove-Item -Path 'C:\etc\cni\net.d\*'`)
	kubeadm := strings.Index(first, `Invoke-Native 'C:\k\kubeadm.exe' @('reset', '-f')`)
	if cni < 0 || kubeadm < 0 || kubeadm > cni || strings.Contains(first, "Hns") || strings.Contains(first, "Restart-Computer") {
		t.Errorf("first command: kubeadm reset by full path, then the CNI configuration (the guide's order), nothing else:\n%s", first)
	}
	if !strings.Contains(sent[1], "LastBootUpTime") || !strings.Contains(sent[3], "LastBootUpTime") {
		t.Errorf("the boot id is read before the final step and after the reboot")
	}
	task := sent[2]
	for _, want := range []string{"Register-ScheduledTask -TaskName 'hybridctl-reset'", `-User 'NT AUTHORITY\SYSTEM'`, "Start-ScheduledTask -TaskName 'hybridctl-reset'",
		"-EncodedCommand " + transport.EncodePowerShell(windowsResetFinal)} {
		if !strings.Contains(task, want) {
			t.Errorf("final step lacks %q:\n%s", want, task)
		}
	}
	final := strings.Split(windowsResetFinal, "\n")
	if len(final) != 3 || final[1] != "Get-HnsNetwork | Remove-HnsNetwork" || final[2] != "Restart-Computer -Force" || strings.Contains(windowsResetFinal, "Unregister") {
		t.Errorf("the task's script: %q", final)
	}

	// Everything sent parses, and so does the task's own script.
	scripts := []pwshtest.Script{}
	for i, text := range sent {
		scripts = append(scripts, pwshtest.Script{Name: fmt.Sprintf("reset command %d", i+1), Text: text})
	}
	scripts = append(scripts, pwshtest.Script{Name: "reset task", Text: windowsResetFinal})
	pwshtest.Check(t, scripts...)

	// A failing kubeadm reset fails the step with its output, and nothing
	// after it is sent.
	if err := os.WriteFile(filepath.Join(srv.Dir, "kubeadm-fails"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := reset.Run(ctx, win)
	if err == nil || !strings.Contains(engine.CommandOutput(err), "unable to reach the API") {
		t.Fatalf("want the kubeadm failure with its output, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir, "ps.7")); err == nil {
		t.Error("after a failed kubeadm reset nothing more may be sent")
	}

	lines, _ := engine.Impl(reset).(engine.DryRunner).DryRun(ctx, win)
	if len(lines) != 4 || !strings.Contains(lines[0], `C:\k\kubeadm.exe`) || !strings.Contains(lines[0], "net.d") || strings.Index(lines[0], "net.d") < strings.Index(lines[0], "kubeadm.exe") ||
		!strings.Contains(lines[1], "Remove-HnsNetwork; ") || !strings.Contains(lines[2], "new boot id") || !strings.Contains(lines[3], "Unregister-ScheduledTask") {
		t.Errorf("Windows dry-run: %q", lines)
	}
	// Each command is shown as it is sent: in the wrapper, -EncodedCommand.
	for _, i := range []int{0, 1, 3} {
		if !strings.Contains(lines[i], "run powershell -NoProfile -NonInteractive -EncodedCommand (") {
			t.Errorf("Windows dry-run line %d does not say how it is sent: %s", i, lines[i])
		}
	}
}

// TestWindowsCommandsParse parses, as sent (in the transport's wrapper),
// the other PowerShell apply runs on Windows: prepare.ps1's launch, the
// join and its cleanup, the joined and reset checks.
func TestWindowsCommandsParse(t *testing.T) {
	c, srv := loopback(t, func(cfg *transport.Config) { cfg.OS = engine.Windows })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cmd := range []string{windowsPrepareCommand, transport.NativeCommand(windowsKubeadm, "join", "--config", windowsJoinFile),
		"Remove-Item -Force -ErrorAction SilentlyContinue " + transport.PSQuote(windowsJoinFile), windowsJoinedCheck, windowsResetScript, windowsResetDetach()} {
		if _, err := c.Run(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	scripts := pwshtest.Decoded(t, srv.Commands())
	if len(scripts) != 6 {
		t.Fatalf("%d commands decoded, want 6", len(scripts))
	}
	pwshtest.Check(t, scripts...)
}
