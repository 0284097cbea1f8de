package apply

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestManifestPhasesAgainstAPIServer applies the lab's rendered
// RuntimeClass and kube-proxy-windows DaemonSet to a real kube-apiserver
// (validation and admission included), twice: the second time changes
// nothing.
func TestManifestPhasesAgainstAPIServer(t *testing.T) {
	env := testenv.Get(t)
	d := labDeps(t)
	d.RESTConfig = func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	var phases []*manifestPhase
	for _, p := range Phases(d) {
		if mp, ok := p.(*manifestPhase); ok {
			phases = append(phases, mp)
		}
	}
	if len(phases) != 3 {
		t.Fatalf("manifest phases: %d", len(phases))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range phases {
		if err := p.Run(ctx, provision.ClusterHost()); err != nil {
			t.Fatalf("%s: %v", p.Title(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cs.NodeV1().RuntimeClasses().Get(ctx, "windows-2025", metav1.GetOptions{})
	if err != nil || rc.Handler != "runhcs-wcow-process" {
		t.Fatalf("RuntimeClass: %v %+v", err, rc)
	}
	ds, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy-windows", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managed := false
	for _, mf := range ds.ManagedFields {
		managed = managed || mf.Manager == FieldManager
	}
	if !managed {
		t.Errorf("DaemonSet not managed by %s: %+v", FieldManager, ds.ManagedFields)
	}
	for _, p := range phases {
		if err := p.Run(ctx, provision.ClusterHost()); err != nil {
			t.Fatalf("second %s: %v", p.Title(), err)
		}
	}
	rc2, _ := cs.NodeV1().RuntimeClasses().Get(ctx, "windows-2025", metav1.GetOptions{})
	ds2, _ := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy-windows", metav1.GetOptions{})
	if rc2.ResourceVersion != rc.ResourceVersion || ds2.ResourceVersion != ds.ResourceVersion {
		t.Error("a second apply changed the objects")
	}
	// The Windows check workload went through RuntimeClass admission,
	// which filled in the scheduling of windows-2025.
	aspnet, err := cs.AppsV1().Deployments("win-demo").Get(ctx, "aspnetapp", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("check workload: %v", err)
	}
	if rcn := aspnet.Spec.Template.Spec.RuntimeClassName; rcn == nil || *rcn != "windows-2025" {
		t.Errorf("aspnetapp runtimeClassName %v", rcn)
	}
	if _, err := cs.AppsV1().Deployments("demo").Get(ctx, "hello", metav1.GetOptions{}); err != nil {
		t.Errorf("hello: %v", err)
	}
	lines, err := phases[1].DryRun(ctx, provision.ClusterHost())
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "RuntimeClass windows-2025 from cluster/windows/runtimeclass-windows-2025.yaml") {
		t.Errorf("dry-run: %v %v", lines, err)
	}
}

func TestManifestPhaseWithoutAPI(t *testing.T) {
	d := labDeps(t)
	for _, p := range Phases(d) {
		if mp, ok := p.(*manifestPhase); ok {
			if err := mp.Run(context.Background(), provision.ClusterHost()); err == nil || !strings.Contains(err.Error(), "no API access") {
				t.Errorf("%s without API: %v", mp.Title(), err)
			}
		}
	}
}
