package procedure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// upgradeHost is a Linux node for the upgrade phase's steps: its scripts
// succeed, and restarting the kubelet makes the Node report the new
// version and Ready, as the kubelet would. afterDrain runs when the node's
// prepare.sh does, that is after its drain: the test plays the
// controllers there (what the evictions did to the workloads' status).
type upgradeHost struct {
	t          *testing.T
	admin      kubernetes.Interface
	node, to   string
	afterDrain func(node string)
}

func (h *upgradeHost) Upload(context.Context, string, []byte, fs.FileMode) error { return nil }
func (h *upgradeHost) Reboot(context.Context) error                              { return nil }
func (h *upgradeHost) Run(ctx context.Context, script string) (*transport.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch script {
	case "bash " + linuxUpgradeScript:
		return out(upgradedKubeadm + h.node + "\n")
	case "bash " + linuxPrepare:
		if h.afterDrain != nil {
			h.afterDrain(h.node)
		}
		return out(linuxReady + h.node + "\n")
	case restartKubelet:
		setKubelet(h.t, h.admin, h.node, h.to)
		return out("")
	}
	return nil, fmt.Errorf("unexpected script %q", script)
}

// setKubelet makes node report kubelet version and Ready.
func setKubelet(t *testing.T, admin kubernetes.Interface, node, version string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.NodeInfo.KubeletVersion = version
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		_, err = admin.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("node %s: %v", node, err)
	}
}

// waitFixture is a namespace with a Deployment "web" of two replicas (one
// pod on each of two nodes, through its ReplicaSet) behind a
// PodDisruptionBudget "web" (minAvailable 1), a StatefulSet "db" with its
// pod on the first node, a Job's pod on the first node, and a budget
// "broken" already short before anything is drained; every status as the
// controllers (not running here) would write it.
type waitFixture struct {
	t      *testing.T
	admin  kubernetes.Interface
	ns     string
	nodes  [2]string
	events *eventLog
	// drainTimeout bounds each drain (default 20 s).
	drainTimeout time.Duration
}

func newWaitFixture(t *testing.T, env *testenv.Env, prefix string) *waitFixture {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ctx := context.Background()
	f := &waitFixture{t: t, admin: admin, ns: env.NewNamespace(t, prefix, nil), nodes: [2]string{prefix + "-a", prefix + "-b"}, events: &eventLog{}}
	for i, n := range f.nodes {
		registerNode(t, admin, n, fmt.Sprintf("192.0.2.%d", 41+i))
		setKubelet(t, admin, n, "v1.36.3")
	}
	yes := true
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}}}
	}
	two, one := int32(2), int32(1)
	dep, err := admin.AppsV1().Deployments(f.ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: template("web")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := admin.AppsV1().ReplicaSets(f.ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: template("web")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := admin.AppsV1().StatefulSets(f.ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: template("db")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := admin.BatchV1().Jobs(f.ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report"},
		Spec: batchv1.JobSpec{Template: func() corev1.PodTemplateSpec {
			p := template("report")
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			return p
		}()}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.setDeployment(2, 2)
	f.setStatefulSet(1)
	owner := func(kind, name string, uid types.UID) []metav1.OwnerReference {
		api := "apps/v1"
		if kind == "Job" {
			api = "batch/v1"
		}
		return []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, UID: uid, Controller: &yes}}
	}
	zero := int64(0)
	for _, p := range []struct {
		name, node, app string
		owners          []metav1.OwnerReference
	}{
		{"web-5d4f-1", f.nodes[0], "web", owner("ReplicaSet", rs.Name, rs.UID)},
		{"web-5d4f-2", f.nodes[1], "web", owner("ReplicaSet", rs.Name, rs.UID)},
		{"db-0", f.nodes[0], "db", owner("StatefulSet", "db", sts.UID)},
		{"report-x", f.nodes[0], "report", owner("Job", job.Name, job.UID)},
	} {
		// Grace period 0 in the pod: no kubelet here finishes a graceful
		// termination, and the drain keeps each pod's own.
		created, err := admin.CoreV1().Pods(f.ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels(p.app), OwnerReferences: p.owners},
			Spec: corev1.PodSpec{NodeName: p.node, TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Phase = corev1.PodRunning
		created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := admin.CoreV1().Pods(f.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	minOne := intstr.FromInt32(1)
	for _, name := range []string{"web", "broken"} {
		app := name
		if _, err := admin.PolicyV1().PodDisruptionBudgets(f.ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minOne, Selector: &metav1.LabelSelector{MatchLabels: labels(app)}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.setPDB("web", 2)
	f.setPDB("broken", 0)
	return f
}

// setDeployment writes web's status (and its ReplicaSet's): available
// replicas, for the latest spec.
func (f *waitFixture) setDeployment(available, replicas int32) {
	f.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := f.admin.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available, UpdatedReplicas: replicas}
		_, err = f.admin.AppsV1().Deployments(f.ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *waitFixture) setStatefulSet(available int32) {
	f.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := f.admin.AppsV1().StatefulSets(f.ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 1, ReadyReplicas: available, AvailableReplicas: available}
		_, err = f.admin.AppsV1().StatefulSets(f.ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// setPDB writes a budget's status as the disruption controller would for
// healthy pods of a minAvailable 1 budget.
func (f *waitFixture) setPDB(name string, healthy int32) {
	f.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := f.admin.PolicyV1().PodDisruptionBudgets(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation, CurrentHealthy: healthy, DesiredHealthy: 1,
			DisruptionsAllowed: max(healthy-1, 0), ExpectedPods: max(healthy, 1)}
		_, err = f.admin.PolicyV1().PodDisruptionBudgets(f.ns).UpdateStatus(ctx, b, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// run upgrades the fixture's two nodes to v1.37.2 one at a time, as
// upgrade-linux-workers does, in the background; the result comes on the
// channel.
func (f *waitFixture) run(ctx context.Context, env *testenv.Env, availableTimeout time.Duration, afterDrain func(string)) <-chan error {
	cfg := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	prep := []render.File{{Path: upgradeConfigPath, Data: []byte("kind: UpgradeConfiguration\n"), Mode: 0o644}}
	var hosts []engine.Host
	for _, n := range f.nodes {
		prep = append(prep, render.File{Path: "nodes/" + n + "/prepare.sh", Data: []byte("#!/usr/bin/env bash\n"), Mode: 0o700})
		hosts = append(hosts, engine.Host{Name: n, Role: engine.RoleWorker, OS: engine.Linux})
	}
	up := UpgradeDeps{To: "v1.37.2", AptRepo: "https://pkgs.k8s.io/core:/stable:/v1.37/deb/", gate: &drainGate{}}
	phase := &upgradeNodePhase{role: roleLinuxWorker, up: up, limit: 1, files: ArtifactsOf(prep), restConfig: cfg,
		connect: func(_ context.Context, host string) (hostConn, error) {
			return &upgradeHost{t: f.t, admin: f.admin, node: host, to: up.To, afterDrain: afterDrain}, nil
		},
		drainTimeout: cmp.Or(f.drainTimeout, 20*time.Second), readyTimeout: 20 * time.Second, availableTimeout: availableTimeout, poll: 50 * time.Millisecond}
	e, err := engine.New([]engine.Phase{engine.Bind(engine.Descriptor{Name: "upgrade-linux-workers", Targets: engine.LinuxWorkers}, phase)}, hosts,
		engine.Options{Reporter: f.events})
	if err != nil {
		f.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	return done
}

// eventLog keeps a run's events.
type eventLog struct {
	mu     sync.Mutex
	events []engine.Event
}

func (l *eventLog) Report(e engine.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// find is the first event of type on host whose reason or error holds
// every part.
func (l *eventLog) find(typ engine.EventType, host string, parts ...string) (engine.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		text := e.Reason + e.Error
		ok := e.Type == typ && e.Host == host
		for _, p := range parts {
			ok = ok && strings.Contains(text, p)
		}
		if ok {
			return e, true
		}
	}
	return engine.Event{}, false
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		fmt.Fprintf(&b, "%s %s %s %s%s\n", e.Type, e.Phase, e.Host, e.Reason, e.Error)
	}
	return b.String()
}

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *waitFixture) podExists(name string) bool {
	f.t.Helper()
	_, err := f.admin.CoreV1().Pods(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

// nodeState is "KUBELET unschedulable=BOOL marked=BOOL".
func (f *waitFixture) nodeState(name string) string {
	f.t.Helper()
	n, err := f.admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	_, marked := n.Annotations[UpgradeAnnotation]
	return fmt.Sprintf("%s unschedulable=%v marked=%v", n.Status.NodeInfo.KubeletVersion, n.Spec.Unschedulable, marked)
}

// TestUpgradeWaitsBetweenDrains, against the real API server: after the
// first node is upgraded and uncordoned, the second is not drained while
// what the first drain evicted is unavailable (the Deployment below its
// replicas of before the drain, its budget short, then the StatefulSet
// alone), with progress events naming each; once all are back the second
// node goes, and the run ends only when what its drain evicted is back
// too (here by a scale-down to what is available, which the controller
// must have seen). A Job's pod is named as not waited for; a budget short
// before the drain is a warning, not waited for.
func TestUpgradeWaitsBetweenDrains(t *testing.T) {
	env := testenv.Get(t)
	f := newWaitFixture(t, env, "upwait")
	a, b := f.nodes[0], f.nodes[1]
	var mu sync.Mutex
	drained := map[string]bool{}
	recovered := false // what a's drain evicted was set available again
	bDrainedEarly := false
	done := f.run(t.Context(), env, 30*time.Second, func(node string) {
		mu.Lock()
		defer mu.Unlock()
		drained[node] = true
		if node == b && !recovered {
			bDrainedEarly = true
		}
		// What the controllers would write after the evictions.
		// The budget short too: web's other pod unready meanwhile.
		f.setDeployment(1, 2)
		f.setPDB("web", 0)
		if node == a {
			f.setStatefulSet(0)
		}
	})

	eventually(t, a+" upgraded and uncordoned, its wait naming the Deployment and the budget", func() bool {
		_, ok := f.events.find(engine.EventProgress, a, "deployment "+f.ns+"/web: 1 of 2 available", "poddisruptionbudget "+f.ns+"/web: 0 healthy, 1 desired", "statefulset "+f.ns+"/db: 0 of 1 available")
		return ok && f.nodeState(a) == "v1.37.2 unschedulable=false marked=false"
	})
	for _, gone := range []string{"web-5d4f-1", "db-0", "report-x"} {
		if f.podExists(gone) {
			t.Errorf("%s was not evicted from %s", gone, a)
		}
	}
	if _, ok := f.events.find(engine.EventProgress, a, "waiting up to 30s for what the drain of "+a+" evicted", "deployment "+f.ns+"/web (2 available before the drain)", "statefulset "+f.ns+"/db (1 available before the drain)", f.ns+"/web"); !ok {
		t.Errorf("no progress event saying what is waited for:\n%s", f.events)
	}
	if _, ok := f.events.find(engine.EventProgress, a, "not waited for", "job "+f.ns+"/report"); !ok {
		t.Errorf("the Job's pod is not named as not waited for:\n%s", f.events)
	}
	if _, ok := f.events.find(engine.EventWarning, a, f.ns+"/broken (0 healthy, 1 desired)"); !ok {
		t.Errorf("the budget short before the drain is not warned about:\n%s", f.events)
	}
	if _, ok := f.events.find(engine.EventProgress, a, f.ns+"/broken:"); ok {
		t.Errorf("the budget short before the drain is waited for:\n%s", f.events)
	}
	// Several polls: b stays as it is while a's evictions are not back.
	time.Sleep(500 * time.Millisecond)
	if st := f.nodeState(b); st != "v1.36.3 unschedulable=false marked=false" || !f.podExists("web-5d4f-2") {
		t.Fatalf("%s touched while what %s's drain evicted is unavailable: %s", b, a, st)
	}
	// The Deployment and its budget back; the StatefulSet not yet.
	f.setDeployment(2, 2)
	f.setPDB("web", 2)
	eventually(t, "a progress event naming only the StatefulSet", func() bool {
		_, ok := f.events.find(engine.EventProgress, a, "waiting for statefulset "+f.ns+"/db: 0 of 1 available")
		e, _ := f.events.find(engine.EventProgress, a, "waiting for statefulset "+f.ns+"/db: 0 of 1 available")
		return ok && !strings.Contains(e.Reason, "deployment")
	})
	time.Sleep(300 * time.Millisecond)
	if st := f.nodeState(b); st != "v1.36.3 unschedulable=false marked=false" {
		t.Fatalf("%s touched while the StatefulSet %s's drain evicted is unavailable: %s", b, a, st)
	}
	mu.Lock()
	recovered = true
	f.setStatefulSet(1)
	mu.Unlock()

	// b goes; after its drain the Deployment has 1 of 2 again, and the run
	// waits until it is scaled down to 1 and the controller saw that.
	eventually(t, b+" upgraded and uncordoned, waiting for the Deployment", func() bool {
		_, ok := f.events.find(engine.EventProgress, b, "deployment "+f.ns+"/web: 1 of 2 available")
		return ok && f.nodeState(b) == "v1.37.2 unschedulable=false marked=false"
	})
	f.setPDB("web", 2)
	one := int32(1)
	d, err := f.admin.AppsV1().Deployments(f.ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = &one
	if _, err := f.admin.AppsV1().Deployments(f.ns).Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scale-down seen as not yet observed by the controller", func() bool {
		_, ok := f.events.find(engine.EventProgress, b, "deployment "+f.ns+"/web: its controller has not seen its latest spec")
		return ok
	})
	select {
	case err := <-done:
		t.Fatalf("the run ended (%v) before the controller saw the scale-down", err)
	case <-time.After(200 * time.Millisecond):
	}
	f.setDeployment(1, 1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, f.events)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the run did not end once everything was available:\n%s", f.events)
	}
	mu.Lock()
	defer mu.Unlock()
	if bDrainedEarly || !drained[a] || !drained[b] {
		t.Errorf("%s drained before what %s's drain evicted was back: %v (drained %v)", b, a, bDrainedEarly, drained)
	}
	for _, n := range f.nodes {
		if _, ok := f.events.find(engine.EventProgress, n, "what the drain of "+n+" evicted is available again after"); !ok {
			t.Errorf("no progress event saying %s's evictions are back:\n%s", n, f.events)
		}
		if _, ok := f.events.find(engine.EventDone, n); !ok {
			t.Errorf("%s not done:\n%s", n, f.events)
		}
	}
}

// TestUpgradeWaitTimesOut: what the first drain evicted never comes back
// within --available-timeout: the first node's step fails naming what is
// unavailable and saying the node is upgraded and uncordoned; the second
// node is left as it is (not cordoned, not drained, its kubelet at the old
// version). The wait ends at its timeout, not before.
func TestUpgradeWaitTimesOut(t *testing.T) {
	env := testenv.Get(t)
	f := newWaitFixture(t, env, "uptimeout")
	a, b := f.nodes[0], f.nodes[1]
	start := time.Now()
	var waitFrom time.Time
	var mu sync.Mutex
	done := f.run(t.Context(), env, 1500*time.Millisecond, func(node string) {
		mu.Lock()
		defer mu.Unlock()
		waitFrom = time.Now()
		f.setDeployment(1, 2)
		f.setPDB("web", 0)
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not end:\n%s", f.events)
	}
	mu.Lock()
	took := time.Since(waitFrom)
	mu.Unlock()
	if err == nil {
		t.Fatalf("a wait that timed out: no error\n%s", f.events)
	}
	if took < 1500*time.Millisecond || time.Since(start) > 20*time.Second {
		t.Errorf("the wait took %s from the drain, want at least the 1.5s timeout", took)
	}
	failA, ok := f.events.find(engine.EventFail, a)
	for _, want := range []string{"what the drain of " + a + " evicted is not available again within 1.5s", "deployment " + f.ns + "/web: 1 of 2 available", "poddisruptionbudget " + f.ns + "/web: 0 healthy, 1 desired", a + " is upgraded and uncordoned", "no other node is drained"} {
		if !ok || !strings.Contains(failA.Error, want) {
			t.Errorf("%s's failure %q: want %q", a, failA.Error, want)
		}
	}
	if strings.Contains(failA.Error, "statefulset") {
		t.Errorf("%s's failure names the StatefulSet, which is available: %q", a, failA.Error)
	}
	failB, ok := f.events.find(engine.EventFail, b)
	if !ok || !strings.Contains(failB.Error, b+" left as it is (not drained, nothing changed)") || !strings.Contains(failB.Error, "deployment "+f.ns+"/web: 1 of 2 available") {
		t.Errorf("%s's failure: %q", b, failB.Error)
	}
	if st := f.nodeState(a); st != "v1.37.2 unschedulable=false marked=false" {
		t.Errorf("%s after its wait timed out: %s, want upgraded and uncordoned", a, st)
	}
	if st := f.nodeState(b); st != "v1.36.3 unschedulable=false marked=false" || !f.podExists("web-5d4f-2") {
		t.Errorf("%s after the gate closed: %s (its pod there: %v), want untouched", b, st, f.podExists("web-5d4f-2"))
	}
}

// TestUpgradeWaitCancelled: cancelling the run during the wait ends it at
// once; the error says the node is upgraded and uncordoned, and nothing
// else is drained.
func TestUpgradeWaitCancelled(t *testing.T) {
	env := testenv.Get(t)
	f := newWaitFixture(t, env, "upcancel")
	a, b := f.nodes[0], f.nodes[1]
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := f.run(ctx, env, time.Minute, func(string) { f.setDeployment(1, 2) })
	eventually(t, a+" waiting", func() bool {
		_, ok := f.events.find(engine.EventProgress, a, "deployment "+f.ns+"/web: 1 of 2 available")
		return ok
	})
	cancel()
	cancelled := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the run did not end after cancellation:\n%s", f.events)
	}
	if took := time.Since(cancelled); took > 2*time.Second {
		t.Errorf("the run ended %s after cancellation", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the cancellation", err)
	}
	failA, ok := f.events.find(engine.EventFail, a)
	if !ok || !strings.Contains(failA.Error, a+" is upgraded and uncordoned") || !strings.Contains(failA.Error, "context canceled") {
		t.Errorf("%s's failure %q", a, failA.Error)
	}
	if st := f.nodeState(b); st != "v1.36.3 unschedulable=false marked=false" {
		t.Errorf("%s after the cancellation: %s", b, st)
	}
}

// TestUpgradeDryRunSaysTheWait: the dry run of a node's upgrade ends with
// the wait for what its drain evicted, with its timeout, on Linux and on
// Windows.
func TestUpgradeDryRunSaysTheWait(t *testing.T) {
	p := &upgradeNodePhase{role: roleLinuxWorker, up: UpgradeDeps{To: "v1.37.2", AptRepo: "https://pkgs.k8s.io/core:/stable:/v1.37/deb/"}, files: files,
		drainTimeout: 5 * time.Minute, readyTimeout: 10 * time.Minute, availableTimeout: 7 * time.Minute}
	for _, h := range []engine.Host{node1, win1} {
		acts, err := p.DryRun(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		last := acts[len(acts)-1]
		if !strings.HasPrefix(last, "wait up to 7m0s until what the drain evicted is available again") || !strings.Contains(last, "before another node is drained") {
			t.Errorf("%s: last step %q", h.Name, last)
		}
	}
}

// TestUpgradeDrainBlockedByBudget, against the real API server: a drain
// that a PodDisruptionBudget blocks (no disruption allowed) ends at the
// drain timeout, naming the pod and the budget; the node is left cordoned
// and marked (UpgradeAnnotation), at its old version, and the error says
// so and how to go on. Nothing after the drain ran on it.
func TestUpgradeDrainBlockedByBudget(t *testing.T) {
	env := testenv.Get(t)
	f := newWaitFixture(t, env, "upblocked")
	a := f.nodes[0]
	f.setPDB("web", 1) // 1 healthy, 1 desired: no disruption allowed
	f.drainTimeout = 2 * time.Second
	var mu sync.Mutex
	var afterDrain []string
	start := time.Now()
	done := f.run(t.Context(), env, time.Minute, func(node string) {
		mu.Lock()
		defer mu.Unlock()
		afterDrain = append(afterDrain, node)
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end:\n%s", f.events)
	}
	if err == nil {
		t.Fatalf("a drain blocked by a budget: no error\n%s", f.events)
	}
	// Both nodes hold a pod of web; each drain lasts its 2 s timeout.
	if took := time.Since(start); took < 4*time.Second || took > 30*time.Second {
		t.Errorf("the two blocked drains took %s, want their 2 s timeouts", took)
	}
	fail, ok := f.events.find(engine.EventFail, a)
	for _, want := range []string{
		"drain " + a + ": evicting pod " + f.ns + "/web-5d4f-1: not done within 2s",
		"blocked by PodDisruptionBudget " + f.ns + "/web (The disruption budget web needs 1 healthy pods and has 1 currently)",
		a + " stays cordoned: run hybridctl upgrade again, or kubectl uncordon " + a,
	} {
		if !ok || !strings.Contains(fail.Error, want) {
			t.Errorf("%s's failure %q: want %q", a, fail.Error, want)
		}
	}
	if strings.Contains(fail.Error, "broken") {
		t.Errorf("the failure names a budget that does not select the pod: %q", fail.Error)
	}
	if st := f.nodeState(a); st != "v1.36.3 unschedulable=true marked=true" {
		t.Errorf("%s after its blocked drain: %s, want cordoned and marked at the old version", a, st)
	}
	if !f.podExists("web-5d4f-1") {
		t.Errorf("the budgeted pod was evicted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(afterDrain) != 0 {
		t.Errorf("the upgrade went on after a blocked drain on %v", afterDrain)
	}
}
