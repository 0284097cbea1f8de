package procedure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// vswitchShim is a powershell stand-in for a Windows node under Calico:
// the vSwitch script is answered as the node would, from Dir/hns-id (the
// Calico network's ID, absent: no network yet) and Dir/marker (the ID the
// kubelet was restarted for); a restart is logged in Dir/restarts.
const vswitchShim = `#!/bin/sh
script=$(printf '%s' "$4" | base64 -d | iconv -f UTF-16LE -t UTF-8)
case "$script" in
*Get-HnsNetwork*) ;;
*) exit 0 ;;
esac
if [ ! -e "$SHIM_DIR/hns-id" ]; then echo 'hybridctl-vswitch: none'; exit 0; fi
id=$(cat "$SHIM_DIR/hns-id")
if [ "$(cat "$SHIM_DIR/marker" 2>/dev/null)" = "$id" ]; then echo "hybridctl-vswitch: restarted before for $id"; exit 0; fi
echo restart >> "$SHIM_DIR/restarts"
printf '%s' "$id" > "$SHIM_DIR/marker"
echo "hybridctl-vswitch: restarted for $id"
`

// TestKubeletRestartAfterVSwitch runs windows-nodes-ready, as apply binds
// it, against the real API server with a Windows node over the loopback
// SSH server: nothing is sent while the node is not Ready for less than the
// grace period; without Calico's network nothing is restarted; once the
// network exists the kubelet is restarted once (after the connection,
// dropped by the vSwitch, is made again), the warning says so, and the
// node becoming Ready ends the wait; a resumed apply with the node still
// not Ready does not restart it again for the same network, but does for a
// new one.
func TestKubeletRestartAfterVSwitch(t *testing.T) {
	env := testenv.Get(t)
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, srv := loopback(t, func(cfg *transport.Config) { cfg.OS = engine.Windows })
	srv.Shim("powershell", vswitchShim)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	win := engine.Host{Name: "vs-win", Role: engine.RoleWorker, OS: engine.Windows, Address: "127.0.0.1"}
	hosts := []engine.Host{{Name: "vs-master", Role: engine.RoleControlPlane, OS: engine.Linux}, win}
	d := Deps{Hosts: hosts, Connect: func(context.Context, string) (*transport.Client, error) { return c, nil },
		RESTConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }}
	var phase engine.Phase
	for _, x := range applyDefs() {
		if x.Name == "windows-nodes-ready" {
			impl, err := x.bind(&applyBinding{d: d.withDefaults()})
			if err != nil {
				t.Fatal(err)
			}
			desc := x.Descriptor
			desc.After = nil // run alone
			phase = engine.Bind(desc, impl)
		}
	}
	ready := engine.Impl(phase).(*nodesReadyPhase)
	if ready.vswitch == nil || ready.vswitch.after != windowsVSwitchGrace {
		t.Fatalf("apply's windows-nodes-ready does not restart the kubelet after the vSwitch: %+v", ready.vswitch)
	}
	ready.poll = 20 * time.Millisecond

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: win.Name}}
	if _, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady := func(status corev1.ConditionStatus) {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Get(ctx, win.Name, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		n.Status.Conditions = nodeWithReady(win.Name, status, "").Status.Conditions
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	setReady(corev1.ConditionUnknown)

	var mu sync.Mutex
	var events []engine.Event
	run := func(timeout time.Duration) error {
		t.Helper()
		ready.timeout = timeout
		mu.Lock()
		events = nil
		mu.Unlock()
		e, err := engine.New([]engine.Phase{phase}, hosts, engine.Options{Cluster: "vs", Reporter: engine.ReporterFunc(func(ev engine.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		})})
		if err != nil {
			t.Fatal(err)
		}
		return e.Run(ctx)
	}
	restarts := func() int {
		b, _ := os.ReadFile(filepath.Join(srv.Dir, "restarts"))
		return strings.Count(string(b), "restart")
	}
	warnings := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, ev := range events {
			if ev.Type == engine.EventWarning {
				out = append(out, ev.Reason)
			}
		}
		return out
	}

	// Within the grace period nothing is sent.
	ready.vswitch.after = time.Hour
	if err := run(300 * time.Millisecond); err == nil {
		t.Fatal("a node not Ready passed")
	}
	if n := len(srv.Commands()); n != 0 {
		t.Fatalf("%d commands sent to a node not Ready for less than the grace period", n)
	}

	// After it, without Calico's network: looked at, not restarted.
	ready.vswitch.after = 100 * time.Millisecond
	if err := run(600 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "vs-win (Ready=Unknown") {
		t.Fatalf("timeout: %v", err)
	}
	looks := len(srv.Commands())
	if looks == 0 || restarts() != 0 {
		t.Fatalf("no network: %d looks, %d restarts", looks, restarts())
	}
	if looks > 7 {
		t.Errorf("%d looks in 600ms, want at most one per 100ms", looks)
	}

	// The network appears and the vSwitch drops the SSH connection: the
	// kubelet is restarted once over a new connection, the node then turns
	// Ready and the phase succeeds.
	if err := os.WriteFile(filepath.Join(srv.Dir, "hns-id"), []byte("0D5B2C1A-net-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv.Restart()
	stop := make(chan struct{})
	go func() {
		for restarts() == 0 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(200 * time.Millisecond)
		setReady(corev1.ConditionTrue)
	}()
	err = run(30 * time.Second)
	close(stop)
	if err != nil {
		t.Fatalf("the node did not become Ready after the restart: %v", err)
	}
	if restarts() != 1 {
		t.Errorf("%d restarts, want 1", restarts())
	}
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "vs-win stayed not Ready after Calico created its HNS network (0D5B2C1A-net-1): restarted its kubelet once") {
		t.Errorf("warnings: %q", w)
	}

	// A resumed apply, the node not Ready again: no second restart for the
	// same network.
	setReady(corev1.ConditionFalse)
	if err := run(600 * time.Millisecond); err == nil {
		t.Fatal("a node not Ready passed")
	}
	if restarts() != 1 || len(warnings()) != 0 {
		t.Errorf("same network: %d restarts, warnings %q", restarts(), warnings())
	}
	// Calico made its network anew: one restart for it.
	if err := os.WriteFile(filepath.Join(srv.Dir, "hns-id"), []byte("0D5B2C1A-net-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(600 * time.Millisecond); err == nil {
		t.Fatal("a node not Ready passed")
	}
	if restarts() != 2 {
		t.Errorf("new network: %d restarts, want 2", restarts())
	}

	// What was sent is the vSwitch script, and it parses.
	for _, l := range srv.Commands() {
		if l != transport.PowerShellCommand(windowsVSwitchScript) {
			t.Fatalf("unexpected command: %.100s", l)
		}
	}
	pwshtest.Check(t, pwshtest.Script{Name: "vswitch", Text: windowsVSwitchScript})

	lines, _ := ready.DryRun(ctx, engine.ClusterHost())
	if len(lines) != 2 || !strings.Contains(lines[1], "Restart-Service kubelet, once per network") {
		t.Errorf("dry run: %q", lines)
	}
}

// TestVSwitchScript checks the script's rules: it restarts only when the
// network exists and the marker does not name it, and records the ID
// after the restart.
func TestVSwitchScript(t *testing.T) {
	s := windowsVSwitchScript
	restart := strings.Index(s, "Restart-Service -Name kubelet")
	write := strings.Index(s, "[IO.File]::WriteAllText($marker, $id)")
	if restart < 0 || write < restart {
		t.Errorf("the ID is recorded after the restart:\n%s", s)
	}
	for _, want := range []string{"$_.Name -eq 'Calico'", "if ($null -eq $net)", "if ($before -eq $id)", `'C:\k\hybridctl\kubelet-restarted-for-vswitch'`} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
}

// TestWindowsNodesReadyDiff, against the real API server: apply's
// windows-nodes-ready only waits, except that it may restart the kubelet
// of a registered Windows node that is not Ready; hybridctl diff names
// each such node and nothing else (a Ready node, one not registered yet,
// the Linux nodes), and a phase without the restart (linux-nodes-ready)
// has nothing to show.
func TestWindowsNodesReadyDiff(t *testing.T) {
	env := testenv.Get(t)
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := []engine.Host{{Name: "vd-master", Role: engine.RoleControlPlane, OS: engine.Linux},
		{Name: "vd-win-a", Role: engine.RoleWorker, OS: engine.Windows}, {Name: "vd-win-b", Role: engine.RoleWorker, OS: engine.Windows},
		{Name: "vd-win-c", Role: engine.RoleWorker, OS: engine.Windows}}
	for name, status := range map[string]corev1.ConditionStatus{"vd-master": corev1.ConditionFalse, "vd-win-a": corev1.ConditionFalse, "vd-win-b": corev1.ConditionTrue} {
		n := nodeWithReady(name, "", "")
		created, err := cs.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Conditions = nodeWithReady(name, status, "cni plugin not initialized").Status.Conditions
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	d := Deps{Hosts: hosts, Connect: func(context.Context, string) (*transport.Client, error) { return nil, errors.New("no SSH in diff") },
		RESTConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }}
	var phases []engine.Phase
	for _, x := range applyDefs() {
		if x.Name == "windows-nodes-ready" || x.Name == "linux-nodes-ready" {
			impl, err := x.bind(&applyBinding{d: d.withDefaults()})
			if err != nil {
				t.Fatal(err)
			}
			desc := x.Descriptor
			desc.After = nil
			phases = append(phases, engine.Bind(desc, impl))
		}
	}
	e, err := engine.New(phases, hosts, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := e.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Phase+" "+c.Host+" "+c.Action+": "+c.Summary)
	}
	want := "windows-nodes-ready cluster run: vd-win-a (Ready=False: cni plugin not initialized): if it is still not Ready 3m0s after Calico's HNS network exists, its kubelet is restarted, once per network"
	if strings.Join(got, "\n") != want {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
