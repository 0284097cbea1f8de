package procedure

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func pod(name, ns, node string, owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

// reset's API side against the real API server, with kubectl's drain
// library: the node is cordoned, a controller's pod (with emptyDir data) is
// evicted, a DaemonSet's pod stays; a bare pod stops the drain, named; the
// Node is then deleted, and deleting it again is fine.
func TestDrainAndDeleteNode(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ctx := context.Background()
	ns := env.NewNamespace(t, "drain", nil)
	for _, n := range []string{"drain-a", "drain-b"} {
		registerNode(t, admin, n, map[string]string{"drain-a": "192.0.2.31", "drain-b": "192.0.2.32"}[n])
	}
	rs, err := admin.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := admin.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	byRS := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}
	byDS := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}
	for _, p := range []*corev1.Pod{pod("web-1", ns, "drain-a", byRS), pod("agent-a", ns, "drain-a", byDS), pod("web-2", ns, "drain-b", byRS), pod("bare", ns, "drain-b", nil)} {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	// Grace period 0: no kubelet here finishes a graceful termination.
	drainA := &drainPhase{nodes: []string{"drain-a"}, restConfig: cfg, timeout: 30 * time.Second, gracePeriod: 0}
	if err := drainA.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatalf("drain drain-a: %v", err)
	}
	n, err := admin.CoreV1().Nodes().Get(ctx, "drain-a", metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Fatalf("drain-a not cordoned (err %v)", err)
	}
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-1 still there after the drain (err %v)", err)
	}
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "agent-a", metav1.GetOptions{}); err != nil {
		t.Errorf("the DaemonSet's pod was evicted: %v", err)
	}

	drainB := &drainPhase{nodes: []string{"drain-b"}, restConfig: cfg, timeout: 30 * time.Second, gracePeriod: 0}
	err = drainB.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "bare") {
		t.Fatalf("drain of a node with a bare pod: %v; want an error naming the pod", err)
	}
	// kubectl wrote no warning: nothing (not an empty indented line) follows.
	if !strings.HasSuffix(err.Error(), "/bare") {
		t.Errorf("drain error %q: want it to end with the pod", err)
	}

	del := &deleteNodePhase{nodes: []string{"drain-a", "drain-gone"}, restConfig: cfg}
	for range 2 {
		if err := del.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatalf("delete-node: %v", err)
		}
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, "drain-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("drain-a still there (err %v)", err)
	}

	all := &drainPhase{nodes: []string{"drain-b"}, all: true, restConfig: cfg, timeout: time.Second}
	if err := all.Run(ctx, engine.ClusterHost()); err != nil {
		t.Errorf("draining when every node is reset must do nothing: %v", err)
	}
}

// TestDrainSemantics: kubectl drain's rules, against the real API server.
// A PodDisruptionBudget holds (the eviction is refused and retried until
// the timeout); a finished bare pod and a mirror pod do not stop a drain (the
// first is deleted, the second left to its kubelet); a DaemonSet pod whose
// DaemonSet is gone does; pods listed a chunk at a time are all seen.
func TestDrainSemantics(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ctx := context.Background()
	ns := env.NewNamespace(t, "drain-rules", nil)
	registerNode(t, admin, "drain-c", "192.0.2.33")
	registerNode(t, admin, "drain-d", "192.0.2.34")
	yes := true
	owner := func(kind, name string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-" + kind + "-" + name), Controller: &yes}
	}
	create := func(p *corev1.Pod, phase corev1.PodPhase) {
		t.Helper()
		got, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			got.Status.Phase = phase
			if phase == corev1.PodRunning {
				got.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}
			if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(name string) bool {
		_, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	// drain-c: a budgeted pod, a finished bare pod, a mirror pod, three
	// ordinary pods.
	protected := pod("protected", ns, "drain-c", owner("ReplicaSet", "db"))
	protected.Labels = map[string]string{"app": "db"}
	// Running and ready: the eviction API lets a Pending or unready pod go
	// whatever its budget.
	create(protected, corev1.PodRunning)
	create(pod("done", ns, "drain-c", nil), corev1.PodSucceeded)
	mirror := pod("static", ns, "drain-c", nil)
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	create(mirror, "")
	for _, n := range []string{"w-1", "w-2", "w-3"} {
		create(pod(n, ns, "drain-c", owner("ReplicaSet", "web")), "")
	}
	one := intstr.FromInt32(1)
	pdb, err := admin.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The status the disruption controller (not running here) would write:
	// one healthy pod, one needed, no disruption allowed.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := admin.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := admin.CoreV1().Nodes().Get(ctx, "drain-c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &drainer{client: admin, gracePeriod: 0, timeout: 3 * time.Second, evictRetry: 200 * time.Millisecond, poll: 100 * time.Millisecond, chunk: 2}
	start := time.Now()
	_, err = d.drain(ctx, n)
	if err == nil || !strings.Contains(err.Error(), ns+"/protected") || !strings.Contains(err.Error(), "blocked by PodDisruptionBudget "+ns+"/db (The disruption budget db needs 1 healthy pods and has 1 currently)") || !strings.Contains(err.Error(), "within 3s") {
		t.Fatalf("drain with a budget that allows no disruption: %v; want the pod, the budget and the timeout named", err)
	}
	if took := time.Since(start); took < 3*time.Second || took > 10*time.Second {
		t.Errorf("the refused eviction was retried for %s, want the 3 s timeout", took)
	}
	if !exists("protected") || !exists("static") {
		t.Error("the budgeted pod or the mirror pod is gone")
	}
	for _, gone := range []string{"done", "w-1", "w-2", "w-3"} {
		if exists(gone) {
			t.Errorf("%s was not evicted (the list came 2 pods at a time)", gone)
		}
	}

	// drain-d: a pod of a DaemonSet that no longer exists stops the drain
	// before anything is evicted.
	create(pod("orphan", ns, "drain-d", owner("DaemonSet", "gone")), "")
	create(pod("w-4", ns, "drain-d", owner("ReplicaSet", "web")), "")
	n, err = admin.CoreV1().Nodes().Get(ctx, "drain-d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = d.drain(ctx, n); err == nil || !strings.Contains(err.Error(), ns+"/orphan") || !strings.Contains(err.Error(), `"gone" not found`) {
		t.Fatalf("drain with an orphaned DaemonSet pod: %v", err)
	}
	if !exists("w-4") {
		t.Error("w-4 was evicted although the drain was refused")
	}
	if n, err = admin.CoreV1().Nodes().Get(ctx, "drain-d", metav1.GetOptions{}); err != nil || !n.Spec.Unschedulable {
		t.Errorf("drain-d not cordoned (err %v): kubectl cordons first", err)
	}

	// A cancelled context ends the wait at once.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = d.drain(cctx, n); err == nil {
		t.Error("a drain with a cancelled context succeeded")
	}
}

// TestResetNodesDryRun: a reset without names takes every node apart (and
// so drains none: pods would have nowhere to go); with names, only those.
func TestResetNodesDryRun(t *testing.T) {
	dry := func(d Deps) (drain, del []string) {
		t.Helper()
		phases := mustResetPhases(t, withReboot(d, time.Minute))
		var err error
		if drain, err = engine.Impl(phases[0]).(engine.DryRunner).DryRun(context.Background(), engine.ClusterHost()); err != nil {
			t.Fatal(err)
		}
		if del, err = engine.Impl(phases[1]).(engine.DryRunner).DryRun(context.Background(), engine.ClusterHost()); err != nil {
			t.Fatal(err)
		}
		return drain, del
	}
	d := labDeps(t)
	drain, del := dry(d)
	want := []string{"kubectl delete node k8s-lab-master-1", "kubectl delete node k8s-lab-node-1", "kubectl delete node k8s-lab-node-2", "kubectl delete node k8s-lab-win-1"}
	if len(drain) != 1 || !strings.HasPrefix(drain[0], "nothing to drain: every node is reset") || !slices.Equal(del, want) {
		t.Errorf("reset of the whole cluster: drain %q, delete %q", drain, del)
	}
	// One node: drained (TestResetDrainDefaults has the timeouts).
	d.ResetNodes = []string{"k8s-lab-win-1"}
	drain, del = dry(d)
	if line := "kubectl drain k8s-lab-win-1 --ignore-daemonsets --delete-emptydir-data --timeout 5m0s (cordon, then evict its pods)"; !slices.Equal(drain, []string{line}) || !slices.Equal(del, want[3:]) {
		t.Errorf("reset of k8s-lab-win-1: drain %q, delete %q", drain, del)
	}
	p := &drainPhase{nodes: []string{"n"}, gracePeriod: 0, timeout: time.Second}
	if got, _ := p.DryRun(context.Background(), engine.ClusterHost()); !slices.Equal(got, []string{"kubectl drain n --ignore-daemonsets --delete-emptydir-data --grace-period 0 --timeout 1s (cordon, then evict its pods)"}) {
		t.Errorf("grace period 0: %q", got)
	}
}

// TestResetDryRunScriptBlock: a dry run shows each node's reset script as
// one block under one line, as it runs (one script, one session), never a
// "run:" per line of it; in the text report its tabs are spaces.
func TestResetDryRunScriptBlock(t *testing.T) {
	p := &hostReset{title: "reset-workers"}
	for _, h := range []engine.Host{{Name: "l", OS: engine.Linux}, {Name: "w", OS: engine.Windows}} {
		acts, err := p.DryRun(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if h.OS == engine.Windows {
			// One action, the script in the PowerShell wrapper as sent
			// (TestResetWindowsOrder has the rest).
			if len(acts) == 0 || !strings.Contains(acts[0], "kubeadm.exe") || !strings.Contains(acts[0], "net.d") {
				t.Errorf("%s: first action %q, want the whole script", h.Name, acts)
			}
			continue
		}
		want := scriptBlock("run as one script:", script(h))
		if len(acts) == 0 || acts[0] != want {
			t.Fatalf("%s: first action %q, want the script as one block", h.Name, acts)
		}
		for _, a := range acts[1:] {
			if strings.Contains(a, "\n") {
				t.Errorf("%s: a second multi-line action %q", h.Name, a)
			}
		}
		var buf strings.Builder
		engine.NewTextReporter(&buf, nil, []engine.Host{h}).Report(engine.Event{Type: engine.EventDryRun, Phase: "reset-workers", Host: h.Name, Actions: acts})
		out := buf.String()
		if n := strings.Count(out, "run as one script:"); n != 1 || strings.Count(out, "run: ") > 1 || strings.Contains(out, `\t`) {
			t.Errorf("%s: text report:\n%s", h.Name, out)
		}
		for _, l := range strings.Split(script(h), "\n") {
			if !strings.Contains(out, "    "+strings.ReplaceAll(l, "\t", "    ")+"\n") {
				t.Errorf("%s: line %q of the script is not in the block:\n%s", h.Name, l, out)
			}
		}
	}
	if got := scriptBlock("t:", "a\n\tb"); got != "t:\n  a\n      b" {
		t.Errorf("scriptBlock: %q", got)
	}
}
