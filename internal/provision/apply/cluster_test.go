package apply

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision"
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
	_, err = cs.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&corednsRestartPhase{restConfig: rc}).Run(ctx, provision.ClusterHost()); err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Fatalf("coredns not restarted: %v %v", err, d.Spec.Template.Annotations)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: addon-test\n  namespace: kube-system\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-test\n  namespace: kube-system\ndata:\n  a: b\n"))
	}))
	defer srv.Close()
	p := &addonsPhase{addons: []AddonSource{{Name: "metrics-server", Version: "v0.9.0", URL: srv.URL + "/components.yaml"}}, restConfig: rc}
	for range 2 {
		if err := p.Run(ctx, provision.ClusterHost()); err != nil {
			t.Fatal(err)
		}
	}
	if cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "addon-test", metav1.GetOptions{}); err != nil || cm.Data["a"] != "b" {
		t.Errorf("add-on not applied: %v", err)
	}
	if lines, _ := p.DryRun(ctx, provision.ClusterHost()); len(lines) != 1 {
		t.Errorf("dry-run %v", lines)
	}
}
