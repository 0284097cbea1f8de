package procedure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// objectsPhase is a manifest phase over one file of test objects.
func objectsPhase(env *testenv.Env, yaml string) *manifestPhase {
	return &manifestPhase{title: "test-objects", paths: []string{"test/objects.yaml"},
		files:      Artifacts{"test/objects.yaml": render.File{Path: "test/objects.yaml", Data: []byte(yaml)}},
		restConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }}
}

func changeLines(cs []engine.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Action+" "+c.Object)
	}
	return out
}

// diff, against the real API server, as kubectl diff --server-side: every
// object to create before the first apply, none after it (the phase is
// then skipped), an update with a unified diff of the field hybridctl owns
// once someone else changes it, nothing for a field hybridctl does not
// set; a kind whose CRD is not installed is a create, never an error or a
// wait; no cluster yet makes everything a create.
func TestObjectsDiff(t *testing.T) {
	env := testenv.Get(t)
	ns := env.NewNamespace(t, "diff-", nil)
	objects := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %[1]s}
data: {mode: vxlan}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: %[1]s}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`, ns)
	p := objectsPhase(env, objects)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := engine.ClusterHost()
	changes, err := p.Diff(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := changeLines(changes); !slices.Equal(got, []string{"create ConfigMap " + ns + "/settings", "create Service " + ns + "/web"}) {
		t.Errorf("before apply: %q", got)
	}
	if run, _, err := p.ShouldRun(ctx, h); err != nil || !run {
		t.Errorf("ShouldRun before apply: %v %v", run, err)
	}
	if err := p.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if changes, err := p.Diff(ctx, h); err != nil || len(changes) != 0 {
		t.Errorf("after apply: %q %v", changeLines(changes), err)
	}
	if run, why, err := p.ShouldRun(ctx, h); err != nil || run || !strings.Contains(why, "2 objects already as the spec wants them") {
		t.Errorf("ShouldRun after apply: %v %q %v", run, why, err)
	}
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Another manager changes a field hybridctl owns, and adds one it
	// does not own.
	patch := []byte(`{"data":{"mode":"ipip","extra":"kept"}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	changes, err = p.Diff(ctx, h)
	if err != nil || len(changes) != 1 || changes[0].Action != engine.ActionUpdate || changes[0].Object != "ConfigMap "+ns+"/settings" {
		t.Fatalf("after a change: %q %v", changeLines(changes), err)
	}
	d := changes[0].Diff
	for _, want := range []string{"--- live ConfigMap " + ns + "/settings", "+++ after apply (test/objects.yaml)", "-  mode: ipip", "+  mode: vxlan", "   extra: kept"} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
	// Only the unowned field differs: nothing to change.
	if err := p.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if changes, err := p.Diff(ctx, h); err != nil || len(changes) != 0 {
		t.Errorf("with an unowned field: %q %v", changeLines(changes), err)
	}

	crd := objectsPhase(env, "apiVersion: example.hybridctl.dev/v1\nkind: Widget\nmetadata: {name: default}\nspec: {}\n")
	start := time.Now()
	changes, err = crd.Diff(ctx, h)
	if err != nil || len(changes) != 1 || changes[0].Action != engine.ActionCreate || !strings.Contains(changes[0].Summary, "its kind Widget is not served yet") {
		t.Errorf("an unserved kind: %+v %v", changes, err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("diff waited %s for a CRD", time.Since(start))
	}

	p.restConfig = func(context.Context) (*rest.Config, error) {
		return nil, fmt.Errorf("no context: %w", inventory.ErrNoCluster)
	}
	changes, err = p.Diff(ctx, h)
	if err != nil || len(changes) != 2 || !strings.Contains(changes[1].Summary, "the cluster is not built yet") {
		t.Errorf("no cluster: %+v %v", changes, err)
	}
	p.restConfig = func(context.Context) (*rest.Config, error) { return nil, errors.New("dial tcp: connection refused") }
	if _, err := p.Diff(ctx, h); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("an unreachable cluster: %v", err)
	}
}
