package procedure

import (
	"context"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The final doctor phase against the real API server holding the guide's
// lab: it passes; after a DaemonSet that lands a Linux image on Windows
// nodes appears, it fails and names the finding.
func TestDoctorPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane (not under -short)")
	}
	env := testenv.StartT(t, testenv.Options{Lab: true})
	ph := &doctorPhase{restConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }}
	ctx := context.Background()
	if err := ph.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatalf("doctor on the lab: %v", err)
	}

	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: "agent", Image: "docker.io/library/busybox:1.37"}},
				},
			},
		},
	}
	if _, err := admin.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := ph.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "HC101") || !strings.Contains(err.Error(), "log-agent") {
		t.Fatalf("doctor after a Linux DaemonSet that tolerates everything: %v; want HC101 naming log-agent", err)
	}
	if !regexp.MustCompile(`^doctor: [1-9][0-9]* errors?, [0-9]+ warnings?, [0-9]+ info over [1-9][0-9]* objects?; [0-9]+ checks? skipped:\n`).MatchString(err.Error()) {
		t.Errorf("doctor's summary: %v", err)
	}
}
