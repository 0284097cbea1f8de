package procedure

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func nodeWithReady(name string, status corev1.ConditionStatus, msg string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if status != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, Reason: "KubeletNotReady", Message: msg},
		}
	}
	return n
}

func TestNotReadyNodes(t *testing.T) {
	items := []corev1.Node{
		nodeWithReady("ready", corev1.ConditionTrue, "kubelet is posting ready status"),
		nodeWithReady("nocni", corev1.ConditionFalse, "container runtime network not ready: cni plugin not initialized"),
		nodeWithReady("unknown", corev1.ConditionUnknown, ""),
		nodeWithReady("fresh", "", ""),
		nodeWithReady("other", corev1.ConditionFalse, "not one of ours"),
	}
	got := notReadyNodes(items, []string{"ready", "nocni", "unknown", "fresh", "missing"})
	want := []string{
		"nocni (Ready=False: container runtime network not ready: cni plugin not initialized)",
		"unknown (Ready=Unknown: KubeletNotReady)",
		"fresh (no Ready condition yet)",
		"missing (not registered)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := notReadyNodes(items, []string{"ready"}); len(got) != 0 {
		t.Errorf("only Ready nodes wanted: %v", got)
	}
}

func TestNodesReadyPhase(t *testing.T) {
	env := testenv.Get(t)
	rc := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := []engine.Host{
		{Name: "nr-master", Role: engine.RoleControlPlane, OS: engine.Linux},
		{Name: "nr-worker", Role: engine.RoleWorker, OS: engine.Linux},
		{Name: "nr-win", Role: engine.RoleWorker, OS: engine.Windows},
	}
	linux := &nodesReadyPhase{title: "linux-nodes-ready", nodes: engine.LinuxNodes, hosts: hosts,
		restConfig: rc, timeout: 300 * time.Millisecond, poll: 50 * time.Millisecond}
	setReady := func(name string, status corev1.ConditionStatus, msg string) {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			nn := nodeWithReady(name, "", "")
			if n, err = cs.CoreV1().Nodes().Create(ctx, &nn, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		n.Status.Conditions = nodeWithReady(name, status, msg).Status.Conditions
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The worker has not registered; the control plane has no pod network.
	setReady("nr-master", corev1.ConditionFalse, "container runtime network not ready: cni plugin not initialized")
	err = linux.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "not Ready after 300ms: nr-master (Ready=False: container runtime network not ready: cni plugin not initialized); nr-worker (not registered)") {
		t.Fatalf("timeout: %v", err)
	}

	// Both become Ready while the phase waits; the Windows node, not
	// Ready, is not this phase's business.
	setReady("nr-win", corev1.ConditionFalse, "cni plugin not initialized")
	linux.timeout = 45 * time.Second
	time.AfterFunc(300*time.Millisecond, func() {
		setReady("nr-master", corev1.ConditionTrue, "")
		setReady("nr-worker", corev1.ConditionTrue, "")
	})
	start := time.Now()
	if err := linux.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Errorf("returned after %s, before the nodes were Ready", time.Since(start))
	}

	windows := &nodesReadyPhase{title: "windows-nodes-ready", nodes: engine.WindowsNodes, hosts: hosts,
		restConfig: rc, timeout: time.Hour, poll: 50 * time.Millisecond}
	cctx, ccancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, ccancel)
	if err := windows.Run(cctx, engine.ClusterHost()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}

	// No Windows nodes in the spec: the phase has no target.
	windows.hosts = hosts[:2]
	if got := windows.Narrow([]engine.Host{engine.ClusterHost()}); len(got) != 0 {
		t.Errorf("targets without Windows nodes: %v", got)
	}
	if got := linux.Narrow([]engine.Host{engine.ClusterHost()}); len(got) != 1 || got[0] != engine.ClusterHost() {
		t.Errorf("targets: %v", got)
	}
	if lines, _ := linux.DryRun(ctx, engine.ClusterHost()); len(lines) != 1 || !strings.Contains(lines[0], "nr-master, nr-worker are Ready") {
		t.Errorf("dry run: %v", lines)
	}
}
