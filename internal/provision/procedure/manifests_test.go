package procedure

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
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
	for _, p := range mustPhases(t, d) {
		switch mp := engine.Impl(p).(type) {
		case *manifestPhase:
			phases = append(phases, mp)
		case *checkWorkloadsPhase:
			phases = append(phases, mp.manifestPhase) // applies only: no controller rolls out here
		}
	}
	if len(phases) != 3 {
		t.Fatalf("manifest phases: %d", len(phases))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range phases {
		if err := p.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatalf("%s: %v", p.title, err)
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
		if err := p.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatalf("second %s: %v", p.title, err)
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
	lines, err := phases[1].DryRun(ctx, engine.ClusterHost())
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "RuntimeClass windows-2025 from cluster/windows/runtimeclass-windows-2025.yaml") {
		t.Errorf("dry-run: %v %v", lines, err)
	}
}

// TestManifestPhaseCRDAndRefusals: an object of a kind whose CRD the same
// file creates waits for the kind to be served (crdWait); an object the
// API server refuses fails the phase, naming it and its file, while the
// objects after it are still applied.
func TestManifestPhaseCRDAndRefusals(t *testing.T) {
	env := testenv.Get(t)
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.mutation.hybridctl.dev}
spec:
  group: mutation.hybridctl.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: mutation.hybridctl.dev/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
`
	const refused = `apiVersion: v1
kind: ConfigMap
metadata: {name: Not_A_DNS_Name, namespace: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after-the-refused-one, namespace: default}
data: {k: v}
`
	p := &manifestPhase{title: "test-manifests", paths: []string{"crd.yaml", "refused.yaml"},
		files:      Artifacts{"crd.yaml": {Path: "crd.yaml", Data: []byte(crd)}, "refused.yaml": {Path: "refused.yaml", Data: []byte(refused)}},
		restConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := p.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "applying ConfigMap default/Not_A_DNS_Name (refused.yaml): ") {
		t.Fatalf("a refused object: %v", err)
	}
	if strings.Contains(err.Error(), "Widget") {
		t.Errorf("the Widget was not applied once its CRD was served: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(env.AdminConfig())
	w, err := dyn.Resource(schema.GroupVersionResource{Group: "mutation.hybridctl.dev", Version: "v1", Resource: "widgets"}).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil || w.Object["spec"].(map[string]any)["size"] != int64(3) {
		t.Errorf("the Widget: %v %v", w, err)
	}
	cs := kubernetes.NewForConfigOrDie(env.AdminConfig())
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "after-the-refused-one", metav1.GetOptions{}); err != nil {
		t.Errorf("the object after the refused one: %v", err)
	}
}
