package procedure

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// fakeConn is a host whose scripts answer from a queue; it records
// uploads, commands and reboots.
type fakeConn struct {
	uploads map[string]fs.FileMode
	data    map[string][]byte
	runs    []string
	reboots int
	answer  func(script string, n int) (*transport.Result, error)
}

func newFake(answer func(string, int) (*transport.Result, error)) *fakeConn {
	return &fakeConn{uploads: map[string]fs.FileMode{}, data: map[string][]byte{}, answer: answer}
}

func (f *fakeConn) Upload(_ context.Context, dst string, data []byte, mode fs.FileMode) error {
	f.uploads[dst], f.data[dst] = mode, data
	return nil
}
func (f *fakeConn) Run(ctx context.Context, script string) (*transport.Result, error) {
	f.runs = append(f.runs, script)
	if err := ctx.Err(); err != nil {
		return nil, err // as a real connection: nothing runs once ctx is done
	}
	return f.answer(script, len(f.runs))
}
func (f *fakeConn) Reboot(context.Context) error { f.reboots++; return nil }

func out(s string) (*transport.Result, error) { return &transport.Result{Stdout: []byte(s)}, nil }

var (
	node1 = engine.Host{Name: "k8s-lab-node-1", Role: engine.RoleWorker, OS: engine.Linux}
	win1  = engine.Host{Name: "k8s-lab-win-1", Role: engine.RoleWorker, OS: engine.Windows}
	cp1   = engine.Host{Name: "k8s-lab-master-1", Role: engine.RoleControlPlane, OS: engine.Linux}
	files = ArtifactsOf([]render.File{
		{Path: "nodes/k8s-lab-node-1/prepare.sh", Data: []byte("#!/usr/bin/env bash\necho prepared\n"), Mode: 0o755},
		{Path: "nodes/k8s-lab-win-1/prepare.ps1", Data: []byte("Write-Host prepared\n"), Mode: 0o644},
		{Path: "cluster/kubeadm-config.yaml", Data: []byte("apiVersion: kubeadm.k8s.io/v1beta4\n"), Mode: 0o644},
	})
)

func conn(f *fakeConn) func(context.Context, string) (hostConn, error) {
	return func(context.Context, string) (hostConn, error) { return f, nil }
}

func TestLinuxPrepare(t *testing.T) {
	f := newFake(func(string, int) (*transport.Result, error) {
		return out("==> checks\nready for kubeadm on k8s-lab-node-1\n")
	})
	p := &linuxPreparePhase{files: files, connect: conn(f)}
	if err := p.Run(context.Background(), node1); err != nil {
		t.Fatal(err)
	}
	if f.uploads[linuxPrepare] != 0o700 || string(f.data[linuxPrepare]) != "#!/usr/bin/env bash\necho prepared\n" {
		t.Errorf("uploads %v", f.uploads)
	}
	if len(f.runs) != 1 || f.runs[0] != "bash "+linuxPrepare {
		t.Errorf("runs %q", f.runs)
	}
	// Exit 0 without the ready line is a failure, with the output kept.
	f = newFake(func(string, int) (*transport.Result, error) { return out("==> swap off\n") })
	err := (&linuxPreparePhase{files: files, connect: conn(f)}).Run(context.Background(), node1)
	if err == nil || engine.CommandOutput(err) != "==> swap off\n" {
		t.Errorf("want failure with output, got %v", err)
	}
	// A node the render does not know.
	if err := p.Run(context.Background(), engine.Host{Name: "ghost", OS: engine.Linux}); err == nil || !strings.Contains(err.Error(), "nodes/ghost/prepare.sh") {
		t.Errorf("unknown node: %v", err)
	}
}

// TestWindowsPrepareRebootCycle: rename, Containers, Hyper-V each ask for a
// reboot; the phase reboots and re-runs until ready.
func TestWindowsPrepareRebootCycle(t *testing.T) {
	f := newFake(func(_ string, n int) (*transport.Result, error) {
		if n <= 3 {
			return out("==> computer name\nrenamed the computer - reboot (Restart-Computer) and run prepare.ps1 again.\n")
		}
		return out("ready for kubeadm join: copy join.yaml to C:\\k\\join.yaml\n")
	})
	p := &windowsPreparePhase{files: files, connect: conn(f), rebootTimeout: time.Minute}
	if err := p.Run(context.Background(), win1); err != nil {
		t.Fatal(err)
	}
	if f.reboots != 3 || len(f.runs) != 4 {
		t.Errorf("reboots %d runs %d, want 3 and 4", f.reboots, len(f.runs))
	}
	if f.uploads[windowsPrepare] != 0o600 || f.runs[0] != `Invoke-Native 'powershell.exe' @('-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', '`+windowsPrepare+`')` {
		t.Errorf("uploads %v runs %q", f.uploads, f.runs)
	}
	// A script that never gets ready is bounded.
	f = newFake(func(string, int) (*transport.Result, error) {
		return out("x - reboot (Restart-Computer) and run prepare.ps1 again.\n")
	})
	err := (&windowsPreparePhase{files: files, connect: conn(f), rebootTimeout: time.Minute}).Run(context.Background(), win1)
	if err == nil || f.reboots != windowsMaxRounds {
		t.Errorf("endless reboots: %v after %d", err, f.reboots)
	}
	// A failing script stops at once.
	f = newFake(func(string, int) (*transport.Result, error) {
		return nil, &transport.CommandError{Host: "k8s-lab-win-1", Command: "prepare.ps1", ExitCode: 1, Output: []byte("download failed")}
	})
	err = (&windowsPreparePhase{files: files, connect: conn(f), rebootTimeout: time.Minute}).Run(context.Background(), win1)
	if err == nil || engine.CommandOutput(err) != "download failed" || f.reboots != 0 {
		t.Errorf("failure: %v", err)
	}
}

func TestKubeadmInit(t *testing.T) {
	var initialised bool
	f := newFake(func(script string, _ int) (*transport.Result, error) {
		switch {
		case strings.HasPrefix(script, "test -e /etc/kubernetes/admin.conf"):
			if initialised {
				return out("")
			}
			return nil, &transport.CommandError{ExitCode: 1, Command: script}
		case strings.HasPrefix(script, "kubeadm init"):
			initialised = true
			return out("[init] Using Kubernetes version: v1.37.2\nYour Kubernetes control-plane has initialized successfully!\n")
		default:
			return out("ok\n")
		}
	})
	p := &kubeadmInitPhase{files: files, connect: conn(f)}
	run, _, err := p.ShouldRun(context.Background(), cp1)
	if err != nil || !run {
		t.Fatalf("fresh node: run=%v err=%v", run, err)
	}
	if err := p.Run(context.Background(), cp1); err != nil {
		t.Fatal(err)
	}
	want := []string{"test -e /etc/kubernetes/admin.conf", "kubeadm config validate --config " + linuxKubeadmConfig, "kubeadm init --config " + linuxKubeadmConfig}
	if strings.Join(f.runs, "|") != strings.Join(want, "|") {
		t.Errorf("runs %q", f.runs)
	}
	if f.uploads[linuxKubeadmConfig] != 0o600 {
		t.Errorf("kubeadm-config.yaml mode %v", f.uploads[linuxKubeadmConfig])
	}
	run, why, err := p.ShouldRun(context.Background(), cp1)
	if err != nil || run || !strings.Contains(why, "admin.conf exists") {
		t.Errorf("initialised node: run=%v why=%q err=%v", run, why, err)
	}
	// Errors other than "absent" are errors, not "run it".
	f = newFake(func(string, int) (*transport.Result, error) { return nil, errors.New("connection lost") })
	if _, _, err := (&kubeadmInitPhase{files: files, connect: conn(f)}).ShouldRun(context.Background(), cp1); err == nil {
		t.Error("a lost connection must not look like a fresh node")
	}
}
