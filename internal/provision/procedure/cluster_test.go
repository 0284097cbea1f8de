package procedure

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestCorednsRestartAndAddons(t *testing.T) {
	env := testenv.Get(t)
	rc := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := map[string]string{"k8s-app": "kube-dns"}
	replicas := int32(2)
	_, err = cs.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployments := cs.AppsV1().Deployments("kube-system")
	// The test API server runs no deployment controller: nobody rolls the
	// restart out, so the phase restarts, waits its timeout and says why.
	phase := &corednsRestartPhase{restConfig: rc, timeout: 300 * time.Millisecond, poll: 50 * time.Millisecond}
	err = phase.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "not rolled out after 300ms: the deployment controller has not seen the latest template yet") {
		t.Fatalf("no rollout: got %v", err)
	}
	d, err := deployments.Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Fatalf("coredns not restarted: %v %v", err, d.Spec.Template.Annotations)
	}

	// Played by the test as the deployment controller would: once the
	// restart shows (a new generation), the old replica goes and the new
	// ones become available, one step at a time; the phase returns only at
	// the end.
	if _, err := deployments.Patch(ctx, "coredns", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"before"}}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err = deployments.Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g0 := d.Generation
	steps := []appsv1.DeploymentStatus{
		{Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}, // an old replica left
		{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}, // a new one not available
		{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2},
	}
	controller := make(chan error, 1)
	go func() {
		controller <- func() error {
			for {
				d, err := deployments.Get(ctx, "coredns", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if d.Generation > g0 {
					for _, st := range steps {
						time.Sleep(100 * time.Millisecond)
						st.ObservedGeneration = d.Generation
						d.Status = st
						if d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
							return err
						}
					}
					return nil
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}()
	phase.timeout, phase.poll = 45*time.Second, 20*time.Millisecond
	runErr := phase.Run(ctx, engine.ClusterHost())
	if err := <-controller; err != nil {
		t.Fatalf("the test's controller: %v", err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if d, err := deployments.Get(ctx, "coredns", metav1.GetOptions{}); err != nil || d.Status.AvailableReplicas != 2 {
		t.Fatalf("the phase returned before the rollout finished: %+v %v", d.Status, err)
	}

	// Ctrl-C while waiting ends the wait at once.
	cctx, ccancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, ccancel)
	phase.timeout = time.Hour
	start := time.Now()
	if _, err := deployments.Patch(ctx, "coredns", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"before-cancel"}}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := phase.Run(cctx, engine.ClusterHost()); !errors.Is(err, context.Canceled) || time.Since(start) > 30*time.Second {
		t.Fatalf("cancel: %v after %s", err, time.Since(start))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: addon-test\n  namespace: kube-system\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-test\n  namespace: kube-system\ndata:\n  a: b\n"))
	}))
	defer srv.Close()
	p := &addonsPhase{addons: []AddonSource{{Name: "metrics-server", Version: "v0.9.0", URL: plan.MetricsServerURLPrefix + "v0.9.0/components.yaml", Client: upstreamClient(srv)}}, restConfig: rc}
	for range 2 {
		if err := p.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatal(err)
		}
	}
	if cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "addon-test", metav1.GetOptions{}); err != nil || cm.Data["a"] != "b" {
		t.Errorf("add-on not applied: %v", err)
	}
	if lines, _ := p.DryRun(ctx, engine.ClusterHost()); len(lines) != 1 {
		t.Errorf("dry-run %v", lines)
	}
}

func TestRolledOut(t *testing.T) {
	two := int32(2)
	for _, c := range []struct {
		name   string
		gen    int64
		status appsv1.DeploymentStatus
		want   string // "" rolled out
	}{
		{"done", 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, ""},
		{"observed ahead", 3, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, ""},
		{"not observed", 3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, "has not seen the latest template"},
		{"one updated", 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1}, "1 of 2 replicas updated"},
		{"old left", 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}, "1 old replicas pending"},
		{"one unavailable", 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}, "1 of 2 updated replicas available"},
	} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: c.gen}, Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: c.status}
		done, why := rolledOut(d)
		if done != (c.want == "") || !strings.Contains(why, c.want) {
			t.Errorf("%s: rolledOut = %v, %q; want %q", c.name, done, why, c.want)
		}
	}
	// No replicas field: one replica, as the API server defaults it.
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 0}}
	if done, why := rolledOut(d); done || !strings.Contains(why, "0 of 1") {
		t.Errorf("default replicas: %v %q", done, why)
	}
}
