package checks_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestLiveImagePull: pods whose status (written here, as a kubelet would)
// says their image cannot be pulled are HC208 findings naming the pod,
// node and image, read from a real kube-apiserver; a pod still creating is
// not.
func TestLiveImagePull(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane (skipped under -short)")
	}
	env := testenv.StartT(t, testenv.Options{})
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const image = "registry.example.internal:5000/e2e-test-images/agnhost:2.66.1"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager makes the namespace's default ServiceAccount.
	if _, err := cs.CoreV1().ServiceAccounts("demo").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "hello"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
		Containers:   []corev1.Container{{Name: "hello", Image: image}},
	}}
	rs, err := cs.AppsV1().ReplicaSets("demo").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-7d9c", Namespace: "demo"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string, w *corev1.ContainerStateWaiting) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: new(true)}}},
			Spec: *tmpl.Spec.DeepCopy()}
		p.Spec.NodeName = node
		p, err := cs.CoreV1().Pods("demo").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "hello", Image: image, State: corev1.ContainerState{Waiting: w}}}}
		if _, err := cs.CoreV1().Pods("demo").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("hello-7d9c-a", "lin-1", &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + image + `"`})
	pod("hello-7d9c-b", "lin-2", &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to pull and unpack image: 401 Unauthorized"})
	pod("hello-7d9c-c", "lin-3", &corev1.ContainerStateWaiting{Reason: "ContainerCreating"})

	res, _ := liveRun(t, env.AdminConfig(), checks.Options{Only: []string{"HC208"}})
	expectFindings(t, res, []string{"HC208 ReplicaSet demo/hello-7d9c", "HC208 ReplicaSet demo/hello-7d9c"})
	want := []string{
		"pod demo/hello-7d9c-a on node lin-1 cannot pull " + image + " (container hello): ImagePullBackOff: Back-off pulling image",
		"pod demo/hello-7d9c-b on node lin-2 cannot pull " + image + " (container hello): ErrImagePull: failed to pull and unpack image: 401 Unauthorized",
	}
	for i, f := range res.Findings {
		if !strings.HasPrefix(f.Message, want[i]) {
			t.Errorf("finding %d:\n got  %s\n want %s...", i, f.Message, want[i])
		}
		if !strings.Contains(f.Fix, "node lin-") || !strings.Contains(f.Fix, image) {
			t.Errorf("finding %d: the fix names neither node nor image: %s", i, f.Fix)
		}
	}
}
