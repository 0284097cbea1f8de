package procedure

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// proxyFixture is a kube-proxy-windows DaemonSet in kube-system with two
// ControllerRevisions of its own (old, then new) and one revision of a
// higher number that it does not own, and a pod of the old template on
// each of its Windows nodes; a goroutine plays the DaemonSet controller:
// a deleted pod is replaced on its node by a pod of the new template,
// Ready unless the node is in noReady.
type proxyFixture struct {
	t       *testing.T
	admin   kubernetes.Interface
	nodes   []string
	ds      *appsv1.DaemonSet
	mu      sync.Mutex
	noReady map[string]bool
	// deletions records, per deleted pod, its node and whether that node
	// was cordoned when the pod went.
	deletions []string
}

const (
	proxyOldHash = "5c7d9f8b6"
	proxyNewHash = "7f6b5c4d8"
)

func newProxyFixture(t *testing.T, env *testenv.Env, nodes ...string) *proxyFixture {
	t.Helper()
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	f := &proxyFixture{t: t, admin: admin, nodes: nodes, noReady: map[string]bool{}}
	if _, err := admin.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for i, n := range nodes {
		registerNode(t, admin, n, fmt.Sprintf("192.0.2.%d", 61+i))
		setKubelet(t, admin, n, "v1.36.3")
	}
	labels := map[string]string{"k8s-app": "kube-proxy-windows"}
	ds, err := admin.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: kubeProxyWindowsName},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-proxy", Image: "sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.ds = ds
	t.Cleanup(func() {
		_ = admin.AppsV1().DaemonSets("kube-system").Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
	})
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}}
	for _, r := range []struct {
		name, hash string
		rev        int64
		owned      bool
	}{{"old", proxyOldHash, 1, true}, {"new", proxyNewHash, 2, true}, {"stray", "0000000", 9, false}} {
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + r.name, Labels: map[string]string{"k8s-app": "kube-proxy-windows", revisionHashLabel: r.hash}},
			Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: r.rev}
		if r.owned {
			cr.OwnerReferences = owner
		}
		if _, err := admin.AppsV1().ControllerRevisions("kube-system").Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := cr.Name
		t.Cleanup(func() {
			_ = admin.AppsV1().ControllerRevisions("kube-system").Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	for _, n := range nodes {
		f.createPod(n, proxyOldHash, true)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods("kube-system").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector})
	})
	return f
}

// observe writes the DaemonSet's status as its controller would once it
// has seen the latest generation.
func (f *proxyFixture) observe() {
	f.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := f.admin.AppsV1().DaemonSets("kube-system").Get(context.Background(), kubeProxyWindowsName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Status.ObservedGeneration = ds.Generation
		_, err = f.admin.AppsV1().DaemonSets("kube-system").UpdateStatus(context.Background(), ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *proxyFixture) createPod(node, hash string, ready bool) {
	f.t.Helper()
	ctx := context.Background()
	zero := int64(0)
	yes := true
	pod, err := f.admin.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-proxy-windows-", Labels: map[string]string{"k8s-app": "kube-proxy-windows", revisionHashLabel: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: f.ds.Name, UID: f.ds.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "kube-proxy", Image: "sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		f.t.Error(err)
		return
	}
	pod.Status.Phase = corev1.PodPending
	if ready {
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if _, err := f.admin.CoreV1().Pods("kube-system").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Error(err)
	}
}

// control plays the DaemonSet controller until ctx ends.
func (f *proxyFixture) control(ctx context.Context) {
	w, err := f.admin.CoreV1().Pods("kube-system").Watch(ctx, metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector})
	if err != nil {
		f.t.Error(err)
		return
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Deleted {
				continue
			}
			n, err := f.admin.CoreV1().Nodes().Get(context.Background(), pod.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				f.t.Error(err)
				continue
			}
			f.mu.Lock()
			f.deletions = append(f.deletions, fmt.Sprintf("%s cordoned=%v", pod.Spec.NodeName, n.Spec.Unschedulable))
			ready := !f.noReady[pod.Spec.NodeName]
			f.mu.Unlock()
			f.createPod(pod.Spec.NodeName, proxyNewHash, ready)
		}
	}()
}

func (f *proxyFixture) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deletions...)
}

// hashes is each node's pods' template hashes, "NODE=HASH[,HASH]".
func (f *proxyFixture) hashes() string {
	f.t.Helper()
	list, err := f.admin.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector})
	if err != nil {
		f.t.Fatal(err)
	}
	by := map[string][]string{}
	for _, p := range list.Items {
		by[p.Spec.NodeName] = append(by[p.Spec.NodeName], p.Labels[revisionHashLabel])
	}
	var out []string
	for _, n := range f.nodes {
		out = append(out, n+"="+strings.Join(by[n], ","))
	}
	return strings.Join(out, " ")
}

// windowsUpgradeHost is a Windows node whose upgrade script succeeds and
// makes the Node report the new version and Ready.
type windowsUpgradeHost struct {
	t        *testing.T
	admin    kubernetes.Interface
	node, to string
}

func (h *windowsUpgradeHost) Upload(context.Context, string, []byte, fs.FileMode) error { return nil }
func (h *windowsUpgradeHost) Reboot(context.Context) error                              { return nil }
func (h *windowsUpgradeHost) Run(ctx context.Context, script string) (*transport.Result, error) {
	if !strings.HasPrefix(script, "# Upgrades the kubelet and kubeadm of "+h.node+" ") {
		return nil, fmt.Errorf("unexpected script %.80q", script)
	}
	setKubelet(h.t, h.admin, h.node, h.to)
	return out(upgradedWindows + h.node + "\n")
}

func (f *proxyFixture) upgradePhase(env *testenv.Env, readyTimeout time.Duration) (*upgradeNodePhase, []engine.Host) {
	cfg := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	up := UpgradeDeps{To: "v1.37.2", Bundle: true, gate: &drainGate{}}
	var hosts []engine.Host
	for _, n := range f.nodes {
		hosts = append(hosts, engine.Host{Name: n, Role: engine.RoleWorker, OS: engine.Windows})
	}
	return &upgradeNodePhase{role: roleWindowsWorker, up: up, limit: 1, files: ArtifactsOf([]render.File{}), restConfig: cfg,
		connect: func(_ context.Context, host string) (hostConn, error) {
			return &windowsUpgradeHost{t: f.t, admin: f.admin, node: host, to: up.To}, nil
		},
		drainTimeout: 20 * time.Second, readyTimeout: readyTimeout, availableTimeout: 20 * time.Second, poll: 50 * time.Millisecond}, hosts
}

// TestKubeProxyWindowsRestartedInItsWindow, against the real API server:
// upgrade-windows-workers restarts each Windows node's kube-proxy-windows
// pod of the old template while that node is still cordoned, one node at
// a time, and uncordons it once the new pod is Ready; the DaemonSet's
// current template is its own ControllerRevision of the highest revision
// (not a higher one it does not own), known only once the controller has
// seen its generation. A replacement that never gets Ready fails the node
// and leaves it cordoned; kube-proxy-win-pods then restarts any pod
// still old, and has nothing to do after.
func TestKubeProxyWindowsRestartedInItsWindow(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	f := newProxyFixture(t, env, "kpw-a", "kpw-b", "kpw-c")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f.control(ctx)
	client := kubernetes.NewForConfigOrDie(env.AdminConfig())

	// Generation not yet seen: the current template is not known.
	if _, err := kubeProxyWindowsRevision(ctx, client, 300*time.Millisecond, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "the DaemonSet controller has seen generation 0 of 1") {
		t.Fatalf("before the controller saw the DaemonSet: %v", err)
	}
	f.observe()
	if h, err := kubeProxyWindowsRevision(ctx, client, time.Second, 50*time.Millisecond); err != nil || h != proxyNewHash {
		t.Fatalf("current template = %q, %v; want %q (the stray revision 9 is not the DaemonSet's)", h, err, proxyNewHash)
	}

	// Upgrade a and b; b's replacement never gets Ready.
	f.mu.Lock()
	f.noReady["kpw-b"] = true
	f.mu.Unlock()
	phase, hosts := f.upgradePhase(env, 2*time.Second)
	f.nodes = []string{"kpw-a", "kpw-b"}
	events := &eventLog{}
	e, err := engine.New([]engine.Phase{engine.Bind(engine.Descriptor{Name: "upgrade-windows-workers", Targets: engine.WindowsNodes}, phase)}, hosts[:2],
		engine.Options{Reporter: events})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(ctx); err == nil {
		t.Fatalf("the upgrade succeeded although kpw-b's kube-proxy-windows never got Ready\n%s", events)
	}
	f.nodes = []string{"kpw-a", "kpw-b", "kpw-c"}
	if got, want := strings.Join(f.deleted(), "; "), "kpw-a cordoned=true; kpw-b cordoned=true"; got != want {
		t.Errorf("deleted pods: %s; want %s (each while its node was cordoned, a before b)", got, want)
	}
	if got, want := f.hashes(), "kpw-a="+proxyNewHash+" kpw-b="+proxyNewHash+" kpw-c="+proxyOldHash; got != want {
		t.Errorf("pods: %s; want %s", got, want)
	}
	if _, ok := events.find(engine.EventProgress, "kpw-a", "kube-proxy-windows on kpw-a restarted"); !ok {
		t.Errorf("no progress event for kpw-a's restart\n%s", events)
	}
	if ev, ok := events.find(engine.EventFail, "kpw-b", "kube-proxy-windows on kpw-b not Ready", "not Ready (Pending)", "kpw-b stays cordoned"); !ok {
		t.Errorf("kpw-b's failure does not say its kube-proxy-windows was not Ready and that it stays cordoned: %+v\n%s", ev, events)
	}
	for node, want := range map[string]bool{"kpw-a": false, "kpw-b": true, "kpw-c": false} {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.Unschedulable != want {
			t.Errorf("%s unschedulable = %v, want %v", node, n.Spec.Unschedulable, want)
		}
	}

	// The rollout phase: c is old; the next replacements get Ready.
	f.mu.Lock()
	f.noReady = map[string]bool{}
	f.mu.Unlock()
	rollout := &kubeProxyWindowsRolloutPhase{restConfig: phase.restConfig, timeout: 5 * time.Second, poll: 50 * time.Millisecond}
	run, reason, err := rollout.ShouldRun(ctx, engine.Host{})
	if err != nil || !run {
		t.Fatalf("rollout ShouldRun = %v %q %v with kpw-c's pod old", run, reason, err)
	}
	if err := rollout.Run(ctx, engine.Host{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.deleted(), "; "), "kpw-a cordoned=true; kpw-b cordoned=true; kpw-c cordoned=false"; got != want {
		t.Errorf("deleted pods: %s; want %s (only kpw-c's, the one still old)", got, want)
	}
	run, reason, err = rollout.ShouldRun(ctx, engine.Host{})
	if err != nil || run || reason != "every kube-proxy-windows pod runs the DaemonSet's template" {
		t.Errorf("rollout ShouldRun after it ran = %v %q %v", run, reason, err)
	}
	// kpw-b's pod exists but is not Ready: the rollout does not restart a
	// pod of the current template, and the window's own check says so.
	if _, err := restartKubeProxyWindows(ctx, client, "kpw-b", proxyNewHash, 200*time.Millisecond, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not Ready (Pending)") {
		t.Errorf("kpw-b's pending pod: %v", err)
	}
	if n := len(f.deleted()); n != 3 {
		t.Errorf("%d pods deleted, want 3", n)
	}
}

// TestKubeProxyWindowsWithoutDaemonSet: without the DaemonSet (a Linux
// cluster) the rollout has nothing to do and a Windows window restarts
// nothing.
func TestKubeProxyWindowsWithoutDaemonSet(t *testing.T) {
	env := testenv.Get(t)
	client := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ctx := context.Background()
	if _, err := client.AppsV1().DaemonSets("kube-system").Get(ctx, kubeProxyWindowsName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the shared environment has a %s DaemonSet (%v): no test here creates one there", kubeProxyWindowsName, err)
	}
	if h, err := kubeProxyWindowsRevision(ctx, client, time.Second, 50*time.Millisecond); err != nil || h != "" {
		t.Errorf("revision without the DaemonSet = %q, %v", h, err)
	}
	rollout := &kubeProxyWindowsRolloutPhase{restConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }, timeout: time.Second, poll: 50 * time.Millisecond}
	run, reason, err := rollout.ShouldRun(ctx, engine.Host{})
	if err != nil || run || reason != "no kube-proxy-windows DaemonSet" {
		t.Errorf("ShouldRun = %v %q %v", run, reason, err)
	}
}
