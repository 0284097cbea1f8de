package procedure

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestCheckWorkloadsPhase against a real kube-apiserver, with the
// kubelet's and the deployment controller's status written here: without
// pods the phase times out naming the Deployment and what is left; a pod
// whose pull fails for good (ErrImagePull still after the grace period,
// ImagePullBackOff at once) fails it, naming the pod, node and image; a
// first ErrImagePull that clears does not; rolled-out Deployments end it.
func TestCheckWorkloadsPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane (skipped under -short)")
	}
	env := testenv.StartT(t, testenv.Options{})
	d := labDeps(t)
	d.RESTConfig = func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	var p *checkWorkloadsPhase
	for _, ph := range mustPhases(t, d) {
		if c, ok := engine.Impl(ph).(*checkWorkloadsPhase); ok {
			p = c
		}
	}
	if p == nil {
		t.Fatal("no check-workloads phase")
	}
	if p.timeout != 15*time.Minute {
		t.Errorf("timeout %s, want the nodes' 15m", p.timeout)
	}
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}

	p.timeout, p.poll = 2*time.Second, 100*time.Millisecond
	err = p.Run(ctx, engine.ClusterHost())
	// aspnetapp.yaml comes first (the files in name order).
	if err == nil || !strings.HasPrefix(err.Error(), "check workload win-demo/aspnetapp not rolled out after 2s: the deployment controller has not seen the latest template yet") {
		t.Fatalf("without a controller: %v", err)
	}

	// aspnetapp rolled out, a hello pod that cannot pull the spec's image.
	rolledOutStatus(t, cs, "win-demo")
	if _, err := cs.CoreV1().ServiceAccounts("demo").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, err := cs.AppsV1().Deployments("demo").Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello-7d9c-a", Namespace: "demo", Labels: dep.Spec.Template.Labels},
		Spec: *dep.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = "k8s-lab-node-1"
	pod, err = cs.CoreV1().Pods("demo").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := func(reason, msg string) {
		t.Helper()
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "hello", Image: spec.DefaultCheckWorkloadImage,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
		if pod, err = cs.CoreV1().Pods("demo").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The kubelet's first ErrImagePull is given the grace period; seen
	// again at its end it fails the phase, naming pod, node and image.
	waiting("ErrImagePull", "failed to pull and unpack image: 403 Forbidden\nmore")
	p.timeout, p.pullGrace = 2*time.Minute, 1500*time.Millisecond
	began := time.Now()
	err = p.Run(ctx, engine.ClusterHost())
	took := time.Since(began)
	want := "check workload demo/hello: pod hello-7d9c-a on node k8s-lab-node-1 cannot pull " + spec.DefaultCheckWorkloadImage + " (container hello): ErrImagePull: failed to pull and unpack image: 403 Forbidden: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "spec.checkWorkloads.imagePullSecret") {
		t.Fatalf("a lasting ErrImagePull:\n got  %v\n want %s...", err, want)
	}
	if took < p.pullGrace || took > 30*time.Second {
		t.Errorf("a lasting ErrImagePull ended the wait after %s: want the grace period (%s), then at once", took, p.pullGrace)
	}

	// The kubelet's back-off: the pull failed again, no grace.
	waiting("ImagePullBackOff", `Back-off pulling image "`+spec.DefaultCheckWorkloadImage+`"`)
	p.pullGrace = time.Hour
	began = time.Now()
	err = p.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "(container hello): ImagePullBackOff: Back-off pulling image") {
		t.Fatalf("ImagePullBackOff: %v", err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("ImagePullBackOff ended the wait after %s: want at once", took)
	}

	// A first ErrImagePull that clears (a registry's brief refusal): the
	// pod starts, the Deployment rolls out, the phase succeeds.
	waiting("ErrImagePull", "failed to pull and unpack image: 503 Service Unavailable")
	cleared := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		pod.Status.ContainerStatuses[0].Ready = true
		if _, err := cs.CoreV1().Pods("demo").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			cleared <- err
			return
		}
		dep, err := cs.AppsV1().Deployments("demo").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			cleared <- err
			return
		}
		dep.Status.ObservedGeneration = dep.Generation
		dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 2, 2, 2, 2
		_, err = cs.AppsV1().Deployments("demo").UpdateStatus(ctx, dep, metav1.UpdateOptions{})
		cleared <- err
	}()
	if err := p.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatalf("an ErrImagePull that clears within the grace period: %v", err)
	}
	if err := <-cleared; err != nil {
		t.Fatal(err)
	}
	p.pullGrace = 0

	// Rolled out: the pod gone, hello's status as the controller writes it.
	if err := cs.CoreV1().Pods("demo").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	rolledOutStatus(t, cs, "demo")
	if err := p.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatalf("rolled out: %v", err)
	}
	lines, err := p.DryRun(ctx, engine.ClusterHost())
	if err != nil || !strings.Contains(strings.Join(lines, "\n"), "kubectl -n win-demo rollout status deployment aspnetapp --timeout=2m0s") {
		t.Errorf("dry-run: %v\n%s", err, strings.Join(lines, "\n"))
	}
}

// rolledOutStatus writes the deployment controller's status of a rolled
// out Deployment on the one Deployment of namespace ns.
func rolledOutStatus(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	list, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("Deployments in %s: %v", ns, err)
	}
	dep := &list.Items[0]
	dep.Status.ObservedGeneration = dep.Generation
	dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 2, 2, 2, 2
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(t.Context(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
