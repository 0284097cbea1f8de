package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{Calico: true}) }

// warnings collects the API server's warnings (Pod Security, deprecations).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	dc, err := kdiscovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// apply server-side applies one object; dryRun asks the server to run
// admission and validation (CRD schemas, CEL rules, Pod Security) without
// storing it.
func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "hybridctl-render-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Apply(ctx, u.GetName(), u, opts)
	return err
}

func objects(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// Every Kubernetes and Calico manifest render writes passes a server-side
// dry-run apply against kube-apiserver v1.37.2 with Calico's CRDs and
// admission policies, and the workloads draw no warning (the guide: "The pod
// passed restricted without a single warning").
func TestManifestsDryRun(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	w := &warnings{}
	cfg := env.AdminConfig()
	cfg.WarningHandler = w
	a := newApplier(t, cfg)

	// The operator manifest brings the tigera-operator namespace, as in
	// the guide's order.
	opPath := filepath.Join(calicoDir(t), "tigera-operator.yaml")
	op, err := os.ReadFile(opPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objects(t, opPath, op) {
		if u.GetKind() == "Namespace" {
			if err := a.apply(ctx, u, false); err != nil {
				t.Fatalf("%s: %v", opPath, err)
			}
		}
	}

	twoBuilds := func(t *testing.T) map[string]File {
		c := labCluster(t)
		c.Spec.Nodes = append(c.Spec.Nodes, spec.Node{Name: "k8s-lab-win-2", Role: spec.RoleWorker, OS: spec.OSWindows,
			Address: "192.168.10.27", Windows: &spec.Windows{Build: "10.0.20348"}})
		c.Spec.Network.BlockSize = 27
		return mustRender(t, planOf(t, c), Options{})
	}
	for _, tc := range []struct {
		name    string
		files   func(*testing.T) map[string]File
		objects int
	}{
		// ConfigMap, Installation, APIServer, IPAMConfiguration,
		// RuntimeClass, kube-proxy DaemonSet, 2 Namespaces, hello Deployment
		// and Service, aspnetapp Deployment and Service.
		// + the in-cluster CSR approver: Namespace, ServiceAccount,
		// ConfigMap with the spec, ClusterRole, binding, Deployment.
		{"lab", func(t *testing.T) map[string]File {
			return mustRender(t, labPlan(t), Options{Token: guideToken, CACertHash: guideHash,
				CSRApproverImage: "ghcr.io/hybridctl/hybridctl:v0.1.0", CSRApproverSpec: []byte("apiVersion: hybridctl.dev/v1alpha1\n")})
		}, 18},
		// + a second RuntimeClass and aspnetapp-windows-2022.
		{"two builds", twoBuilds, 15},
	} {
		name, files := tc.name, tc.files(t)
		// Namespaces are created for real (a namespaced dry run needs them).
		var rest []struct {
			path string
			u    *unstructured.Unstructured
		}
		n := 0
		for path, f := range files {
			if !strings.HasSuffix(path, ".yaml") || strings.HasPrefix(path, "nodes/") || path == "cluster/kubeadm-config.yaml" {
				continue // kubeadm and kubelet files are checked by kubeadm
			}
			for _, u := range objects(t, path, f.Data) {
				if u.GetKind() == "Namespace" {
					if err := a.apply(ctx, u, false); err != nil {
						t.Fatalf("%s: %s: %v", name, path, err)
					}
					n++
					continue
				}
				rest = append(rest, struct {
					path string
					u    *unstructured.Unstructured
				}{path, u})
			}
		}
		w.take()
		for _, o := range rest {
			if err := a.apply(ctx, o.u, true); err != nil {
				t.Errorf("%s: %s: %s %s: %v", name, o.path, o.u.GetKind(), o.u.GetName(), err)
			}
			if msgs := w.take(); len(msgs) > 0 {
				t.Errorf("%s: %s: %s %s: warnings %q", name, o.path, o.u.GetKind(), o.u.GetName(), msgs)
			}
			n++
		}
		if n != tc.objects {
			t.Errorf("%s: applied %d objects, want %d", name, n, tc.objects)
		}
	}
}

// The server rejects what it should: strictAffinity must be a boolean, and
// a Windows pod template with Linux fields is invalid. The dry run can fail.
func TestManifestsDryRunRejects(t *testing.T) {
	env := testenv.Get(t)
	a := newApplier(t, env.AdminConfig())
	ctx := t.Context()
	files := mustRender(t, labPlan(t), Options{})
	ipam := objects(t, "ipam", files["cluster/calico/ipamconfiguration.yaml"].Data)[0]
	if err := unstructured.SetNestedField(ipam.Object, "yes", "spec", "strictAffinity"); err != nil {
		t.Fatal(err)
	}
	if err := a.apply(ctx, ipam, true); err == nil {
		t.Error("the server accepted strictAffinity: \"yes\"")
	}
	inst := objects(t, "inst", files["cluster/calico/calico-installation.yaml"].Data)[0]
	if err := unstructured.SetNestedField(inst.Object, "Sometimes", "spec", "calicoNetwork", "bgp"); err != nil {
		t.Fatal(err)
	}
	if err := a.apply(ctx, inst, true); err == nil {
		t.Error("the server accepted bgp: Sometimes")
	}
}
