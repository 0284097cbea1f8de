package procedure

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func labPlan(t *testing.T) *plan.Plan {
	t.Helper()
	res, err := spec.LoadFile(context.Background(), "../../../examples/lab.yaml")
	if err != nil || res.Err() != nil {
		t.Fatalf("lab spec: %v %v", err, res.Err())
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCalicoPhases installs the real Calico CRDs and operator manifests
// (vendored in testdata/third_party/calico-v3.33) and the lab's rendered Calico resources into a real
// kube-apiserver — CRD schemas and Calico's admission policies included —
// then waits for TigeraStatus as the operator would report it.
func TestCalicoPhases(t *testing.T) {
	env := testenv.Get(t)
	calicoDir, err := testenv.ThirdPartyDir(t.Context(), testenv.CalicoVendored)
	if err != nil {
		t.Fatal(err)
	}
	p := labPlan(t)
	d := labDeps(t)
	d.RESTConfig = func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	d.Calico = &CalicoManifests{Load: func(ctx context.Context) (*render.Manifests, error) {
		return render.ReadManifests(ctx, calicoDir, p)
	}, Describe: []string{"the vendored CRDs and operator (testdata/third_party/calico-v3.33)"}}
	var cp *calicoPhase
	var ready *calicoReadyPhase
	for _, ph := range mustPhases(t, d) {
		switch x := engine.Impl(ph).(type) {
		case *calicoPhase:
			cp = x
		case *calicoReadyPhase:
			ready = x
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for range 2 { // the second run must succeed and change nothing harmful
		if err := cp.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	inst, err := dyn.Resource(schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wd, _, _ := unstructured.NestedString(inst.Object, "spec", "calicoNetwork", "windowsDataplane"); wd != "HNS" {
		t.Errorf("Installation windowsDataplane %q", wd)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("tigera-operator").Get(ctx, "kubernetes-services-endpoint", metav1.GetOptions{}); err != nil {
		t.Errorf("endpoint ConfigMap: %v", err)
	}

	// calico-ready: the operator's statuses, written as it would.
	ts := dyn.Resource(tigeraStatus)
	set := func(name, avail, degradedMsg string) {
		t.Helper()
		u, err := ts.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			u = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "operator.tigera.io/v1", "kind": "TigeraStatus", "metadata": map[string]any{"name": name}, "spec": map[string]any{}}}
			if u, err = ts.Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		degraded := "False"
		if degradedMsg != "" {
			degraded = "True"
		}
		now := time.Now().UTC().Format(time.RFC3339)
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"type": "Available", "status": avail, "reason": "AllObjectsAvailable", "message": "", "lastTransitionTime": now},
			map[string]any{"type": "Degraded", "status": degraded, "reason": "ResourceNotReady", "message": degradedMsg, "lastTransitionTime": now},
		}, "status", "conditions")
		if _, err := ts.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set("apiserver", "True", "")
	set("calico", "True", "")
	set("calico-windows", "False", "strictAffinity is not enabled")
	ready.timeout, ready.poll = 2*time.Second, 100*time.Millisecond
	err = ready.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "calico-windows (strictAffinity is not enabled)") {
		t.Fatalf("want calico-windows reported not ready, got %v", err)
	}
	// No time left at all: the phase still reads once and reports what it
	// read, not a deadline.
	ready.timeout = 0
	err = ready.Run(ctx, engine.ClusterHost())
	if err == nil || !strings.Contains(err.Error(), "calico-windows (strictAffinity is not enabled)") {
		t.Fatalf("no time left: want the state read once, got %v", err)
	}
	// A cancelled run ends at once with the cancellation.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ready.timeout = time.Hour
	began := time.Now()
	err = ready.Run(cctx, engine.ClusterHost())
	if !errors.Is(err, context.Canceled) || time.Since(began) > 30*time.Second {
		t.Fatalf("cancelled: want context.Canceled at once, got %v after %s", err, time.Since(began))
	}
	ready.timeout = 2 * time.Second
	set("calico-windows", "True", "")
	if err := ready.Run(ctx, engine.ClusterHost()); err != nil {
		t.Fatal(err)
	}
}

// TestCalicoFromDownloads: the release's two manifests are downloaded
// from the plan's URLs (served here by a local server standing in for
// raw.githubusercontent.com); a URL the plan's release does not hold is
// refused before any request, and a missing manifest is an error.
func TestCalicoFromDownloads(t *testing.T) {
	p := labPlan(t)
	base := "/projectcalico/calico/" + p.Calico.Version + "/manifests/"
	var others atomic.Int32 // requests for anything but the CRDs
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != base+p.Calico.CRDManifest {
			others.Add(1)
		}
		switch r.URL.Path {
		case base + p.Calico.CRDManifest:
			_, _ = w.Write([]byte("kind: CustomResourceDefinition\n"))
		case base + "tigera-operator.yaml":
			_, _ = w.Write([]byte("kind: Deployment\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	client := upstreamClient(srv)
	m, err := calicoFrom(p, "", client).Load(context.Background())
	if err != nil || string(m.CRDs) != "kind: CustomResourceDefinition\n" || string(m.Operator) != "kind: Deployment\n" {
		t.Fatalf("%v %+v", err, m)
	}
	q := *p
	q.Calico.OperatorManifestURL = plan.CalicoURLPrefix + p.Calico.Version + "/manifests/missing.yaml"
	if _, err := calicoFrom(&q, "", client).Load(context.Background()); err == nil || !strings.Contains(err.Error(), "missing.yaml: 404") {
		t.Errorf("missing manifest: %v", err)
	}
	others.Store(0)
	for name, u := range map[string]string{
		"another repository":   plan.CalicoURLPrefix + p.Calico.Version + "/manifests/../../../../evil/repo/main/tigera-operator.yaml",
		"another release":      plan.CalicoURLPrefix + "v3.20.0/manifests/tigera-operator.yaml",
		"another site":         srv.URL + base + "tigera-operator.yaml",
		"percent-encoded dots": plan.CalicoURLPrefix + p.Calico.Version + "/manifests/%2e%2e/%2e%2e/x/tigera-operator.yaml",
	} {
		q := *p
		q.Calico.OperatorManifestURL = u
		if _, err := calicoFrom(&q, "", client).Load(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing to download") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := others.Load(); n != 0 {
		t.Errorf("%d requests for the refused URLs", n)
	}
}

// upstreamClient sends every request to srv, whatever its host, as a site
// mirror would: the plan's own https URLs are then served by srv.
func upstreamClient(srv *httptest.Server) *http.Client {
	target, _ := url.Parse(srv.URL)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
