package checks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestLiveCorpus loads the real-world corpus into the real kube-apiserver,
// one manifest at a time, next to the guide's nodes (testdata/clusters/lab:
// its four Nodes, k8s-lab-win-1 tainted os=windows:NoSchedule with build
// 10.0.26100, the RuntimeClass windows-2025 and kubeadm-config), runs
// doctor's live path (checks.Audit) and compares with lint on the very
// objects that were loaded:
//
//   - doctor must give exactly the findings (check, severity, object and
//     message) of lint on the same objects read as a complete listing.
//     Any check that reads a field differently from the API server than
//     from a file fails here.
//   - plain lint (nothing complete: a manifest is never the whole cluster)
//     must give a subset of doctor's findings; what doctor adds may only
//     come from the checks that conclude "X does not exist", which only a
//     complete listing allows (liveOnly below, with the reason).
//   - doctor's per-workload verdicts are scored against the hand labels.
//
// What the API server refuses is converted or dropped by liveForm, which
// says so for every object it touches; the log lists it.
func TestLiveCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane (skipped under -short)")
	}
	ctx := context.Background()
	dir := corpusDir(t)
	labels := readLabels(t, dir)
	env := testenv.StartT(t, testenv.Options{Calico: true})

	warnings := &warningLog{}
	cfg := env.AdminConfig()
	cfg.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := testenv.NewRESTMapper(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The guide's cluster: what the corpus workloads are judged against.
	base := guideClusterObjects(t)
	if err := env.Load(ctx, base); err != nil {
		t.Fatal(err)
	}

	// Every corpus file, in live form. Namespaces are created once, up
	// front, with the labels of the file that defines them (deleting one
	// never finishes without kube-controller-manager).
	files := corpusFiles(t, dir)
	type prepared struct {
		file  string
		objs  []*unstructured.Unstructured
		notes []string
		// origNS maps "Kind/namespace/name" as loaded to the namespace the
		// label file uses ("" for a manifest that names none).
		origNS map[string]string
	}
	var all []prepared
	nsLabels := map[string]map[string]string{}
	for _, f := range files {
		p := prepared{file: f, origNS: map[string]string{}}
		objs, err := testenv.ReadFile(filepath.Join(dir, f))
		if err != nil {
			// testenv reads strictly; a duplicate key is read as the YAML
			// library does without strictness (the last one wins), which
			// is what lint reads too.
			objs = readLenient(t, filepath.Join(dir, f))
			p.notes = append(p.notes, fmt.Sprintf("read leniently: %v", err))
		}
		for _, o := range objs {
			u, note := liveForm(o.Unstructured)
			if note != "" {
				p.notes = append(p.notes, fmt.Sprintf("%s %s: %s", o.GetKind(), qualified(o.GetNamespace(), o.GetName()), note))
			}
			if u == nil {
				continue
			}
			if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
				nsLabels[u.GetName()] = u.GetLabels()
				continue
			}
			m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			if err != nil {
				p.notes = append(p.notes, fmt.Sprintf("%s %s: not served by kube-apiserver %s, not loaded: %v", u.GetKind(), u.GetName(), testenv.KubernetesVersion, err))
				continue
			}
			orig := u.GetNamespace()
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				if u.GetNamespace() == "" {
					u.SetNamespace(metav1.NamespaceDefault) // as kubectl does
				}
				if _, ok := nsLabels[u.GetNamespace()]; !ok {
					nsLabels[u.GetNamespace()] = nil
				}
			}
			p.origNS[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = orig
			p.objs = append(p.objs, u)
		}
		all = append(all, p)
	}
	var nsObjs []testenv.Object
	for _, name := range sortedKeys(nsLabels) {
		switch name {
		case "default", "kube-system", "kube-public", "kube-node-lease":
			continue // the API server made them
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
		u.SetName(name)
		u.SetLabels(nsLabels[name])
		nsObjs = append(nsObjs, testenv.Object{Unstructured: u, Source: "corpus"})
	}
	if err := env.Load(ctx, nsObjs); err != nil {
		t.Fatal(err)
	}

	// The lint side gets the same cluster objects: the base, and every
	// namespace as the API server holds it.
	tmp := t.TempDir()
	var baseYAML bytes.Buffer
	for _, o := range base {
		writeYAMLDoc(t, &baseYAML, o.Object)
	}
	nsList, err := dyn.Resource(nsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nsList.Items {
		u := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n.GetName(), "labels": toAny(n.GetLabels())}}
		writeYAMLDoc(t, &baseYAML, u)
	}
	basePath := filepath.Join(tmp, "cluster.yaml")
	if err := os.WriteFile(basePath, baseYAML.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	var (
		live, plain            confusion
		compared, liveOnlyN    int
		refused, notes, warned []string
		byCheckLive            = map[string]int{}
	)
	labelled := map[string]label{}
	for _, l := range labels {
		labelled[l.key()] = l
	}
	for _, p := range all {
		warnings.reset()
		// Create: everything else before workloads, workloads before
		// bare Pods (which need their ServiceAccount and RuntimeClass).
		sort.SliceStable(p.objs, func(i, j int) bool { return loadRank(p.objs[i]) < loadRank(p.objs[j]) })
		var loaded []*unstructured.Unstructured
		var created []createdObj
		for _, u := range p.objs {
			m, _ := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
			}
			if _, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: "hybridctl-test"}); err != nil {
				refused = append(refused, fmt.Sprintf("%s %s %s: %v", p.file, u.GetKind(), qualified(u.GetNamespace(), u.GetName()), err))
				continue
			}
			loaded = append(loaded, u)
			created = append(created, createdObj{ri, u.GetName()})
		}
		for _, w := range warnings.take() {
			warned = append(warned, p.file+": "+w)
		}
		for _, n := range p.notes {
			notes = append(notes, p.file+": "+n)
		}

		// doctor, the live path.
		res, _, err := checks.Audit(ctx, env.AdminConfig(), checks.Options{}, "")
		if err != nil {
			t.Fatalf("%s: doctor: %v", p.file, err)
		}
		if len(res.Skipped) > 0 {
			t.Fatalf("%s: doctor skipped checks as admin: %+v", p.file, res.Skipped)
		}

		// lint on the same objects.
		var buf bytes.Buffer
		for _, u := range loaded {
			writeYAMLDoc(t, &buf, u.Object)
		}
		path := filepath.Join(tmp, strings.ReplaceAll(p.file, "/", "__"))
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		complete := lintObjects(t, []string{basePath, path}, true)
		lint := lintObjects(t, []string{basePath, path}, false)

		gotLive, gotComplete, gotLint := findingLines(res), findingLines(complete), findingLines(lint)
		if d := diffLines(gotComplete, gotLive); d != "" {
			t.Errorf("%s: doctor and lint (as a complete listing) disagree on the same objects:\n%s", p.file, d)
		}
		liveSet := map[string]bool{}
		for _, l := range gotLive {
			liveSet[l] = true
		}
		lintSet := map[string]bool{}
		for _, l := range gotLint {
			lintSet[l] = true
			if !liveSet[l] {
				t.Errorf("%s: lint reports what doctor does not: %s", p.file, l)
			}
		}
		for _, f := range res.Findings {
			l := findingLine(f)
			if lintSet[l] {
				continue
			}
			liveOnlyN++
			if _, ok := liveOnly[f.Check]; !ok {
				t.Errorf("%s: only doctor reports %s; %s is not a check that needs a complete listing", p.file, l, f.Check)
			}
		}
		compared += len(gotLive)

		// Score doctor's and lint's per-workload verdicts.
		flagged := func(r *checks.Result) map[string]bool {
			out := map[string]bool{}
			for _, f := range r.Findings {
				byKind := f.Object.Kind + "/" + f.Object.Namespace + "/" + f.Object.Name
				ns, ok := p.origNS[byKind]
				if !ok {
					continue // not an object of this file (the base's nodes)
				}
				if f.Severity != finding.Info {
					out[p.file+"\t"+f.Object.Kind+"\t"+ns+"\t"+f.Object.Name] = true
				}
			}
			return out
		}
		fl, fp := flagged(res), flagged(lint)
		for _, f := range res.Findings {
			byCheckLive[f.Check]++
		}
		for _, l := range labels {
			if l.file != p.file {
				continue
			}
			found := false
			for _, u := range loaded {
				if u.GetKind() == l.kind && u.GetName() == l.name && p.origNS[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] == l.namespace {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: labelled %s %s was not loaded into the API server", p.file, l.kind, qualified(l.namespace, l.name))
			}
			live.add(fl[l.key()], l.flag)
			plain.add(fp[l.key()], l.flag)
		}

		// Leave the cluster as the next file expects it.
		for i := len(created) - 1; i >= 0; i-- {
			c := created[i]
			zero := int64(0)
			bg := metav1.DeletePropagationBackground
			if err := c.ri.Delete(ctx, c.name, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("%s: delete %s: %v", p.file, c.name, err)
			}
		}
	}

	sort.Strings(notes)
	t.Logf("converted or dropped for the API server (%d):\n  %s", len(notes), strings.Join(notes, "\n  "))
	if len(refused) > 0 {
		t.Logf("refused by the API server (%d):\n  %s", len(refused), strings.Join(refused, "\n  "))
	}
	if len(warned) > 0 {
		t.Logf("API server warnings (fields dropped, deprecations) (%d):\n  %s", len(warned), strings.Join(warned, "\n  "))
	}
	t.Logf("%d findings compared, %d only live (%s); by check: %v", compared, liveOnlyN, strings.Join(sortedKeys(liveOnly), ", "), byCheckLive)
	t.Logf("doctor (live, the guide's nodes) on the labelled workloads:\n%s", live.table("doctor"))
	t.Logf("lint (same objects, the guide's nodes) on the labelled workloads:\n%s", plain)
	// The comparison is only worth something with findings to compare.
	if compared < 60 || live.tp < 20 {
		t.Errorf("only %d findings compared and %d workloads flagged: the comparison says little", compared, live.tp)
	}
	if live.precision() < 0.95 || live.recall() < 0.90 {
		t.Errorf("doctor: precision %.1f%%, recall %.1f%%: want at least 95%% and 90%%", 100*live.precision(), 100*live.recall())
	}
}

// liveOnly are the checks whose findings need a complete listing (doctor,
// or lint of a file marked live) and why: a manifest is never the whole
// cluster, so lint cannot conclude that something does not exist.
var liveOnly = map[string]string{
	"HC105": "the RuntimeClass a workload names does not exist",
	"HC305": "ConfigMap tigera-operator/kubernetes-services-endpoint does not exist",
	"HC401": "no kube-proxy DaemonSet for Windows exists (lint decides only when the input has DaemonSets)",
}

var nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

type createdObj struct {
	ri   dynamic.ResourceInterface
	name string
}

func (c *confusion) add(got, want bool) {
	switch {
	case got && want:
		c.tp++
	case got:
		c.fp++
	case want:
		c.fn++
	default:
		c.tn++
	}
}

// liveForm returns the object as kube-apiserver v1.37.2 takes it, and a
// note when it had to change or drop it (nil: not loaded).
func liveForm(in *unstructured.Unstructured) (*unstructured.Unstructured, string) {
	u := in.DeepCopy()
	av, kind := u.GetAPIVersion(), u.GetKind()
	switch {
	case av == "extensions/v1beta1" && (kind == "DaemonSet" || kind == "Deployment" || kind == "ReplicaSet"):
		u.SetAPIVersion("apps/v1")
		note := "extensions/v1beta1 (removed in 1.16) loaded as apps/v1"
		if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "selector"); !ok {
			l, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			_ = unstructured.SetNestedStringMap(u.Object, l, "spec", "selector", "matchLabels")
			note += ", with spec.selector from the template's labels (extensions/v1beta1 defaulted it so)"
		}
		return u, note
	case kind == "PodSecurityPolicy":
		return nil, av + " PodSecurityPolicy was removed in 1.25 and no check reads it: not loaded"
	case av == "rbac.authorization.k8s.io/v1beta1":
		u.SetAPIVersion("rbac.authorization.k8s.io/v1")
		return u, "rbac.authorization.k8s.io/v1beta1 (removed in 1.22) loaded as v1 (same schema)"
	case av == "crd.projectcalico.org/v1" && kind == "IPAMConfig":
		u.SetAPIVersion("projectcalico.org/v3")
		u.SetKind("IPAMConfiguration")
		if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "autoAllocateBlocks"); !ok {
			_ = unstructured.SetNestedField(u.Object, true, "spec", "autoAllocateBlocks")
		}
		return u, "crd.projectcalico.org/v1 IPAMConfig loaded as projectcalico.org/v3 IPAMConfiguration, the API Calico 3.33 serves"
	case av == "v2" && kind == "Service":
		u.SetAPIVersion("v1")
		return u, "apiVersion v2 (no such core version: the manifest's typo) loaded as v1"
	}
	return u, ""
}

// readLenient reads a multi-document YAML file without strictness.
func readLenient(t *testing.T, path string) []testenv.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []testenv.Object
	for _, doc := range manifest.Documents(b) {
		i := doc.Number
		js, err := yaml.YAMLToJSON(doc.Data)
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		if len(m) > 0 {
			out = append(out, testenv.Object{Unstructured: &unstructured.Unstructured{Object: m}, Source: fmt.Sprintf("%s document %d", path, i)})
		}
	}
	return out
}

func loadRank(u *unstructured.Unstructured) int {
	switch snapshot.KindOf(u.GetAPIVersion(), u.GetKind()) {
	case snapshot.KindPod:
		return 2
	case snapshot.KindDaemonSet, snapshot.KindDeployment, snapshot.KindStatefulSet, snapshot.KindReplicaSet, snapshot.KindJob, snapshot.KindCronJob:
		return 1
	}
	return 0
}

// guideClusterObjects are the guide's lab Nodes, its RuntimeClass and
// kubeadm-config: the cluster the corpus labels assume.
func guideClusterObjects(t *testing.T) []testenv.Object {
	t.Helper()
	lab, err := testenv.LabDir()
	if err != nil {
		t.Fatal(err)
	}
	var out []testenv.Object
	for _, f := range []string{"10-nodes.yaml", "40-runtimeclass.yaml", "20-kube-system.yaml"} {
		objs, err := testenv.ReadFile(filepath.Join(lab, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if f == "20-kube-system.yaml" && o.GetName() != snapshot.KubeadmConfigName {
				continue
			}
			out = append(out, o)
		}
	}
	return out
}

// lintObjects is lint on files; complete marks every kind as completely
// listed, as doctor's snapshot is.
func lintObjects(t *testing.T, paths []string, complete bool) *checks.Result {
	t.Helper()
	s, err := snapshot.LoadFiles(context.Background(), paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Diagnostics {
		t.Errorf("lint input: %s", d)
	}
	if complete {
		s.Live = true
		cs, _, _ := checks.Selected(checks.Options{})
		for _, k := range checks.Needs(cs) {
			s.Listed[k] = true
		}
	}
	res, err := checks.Run(s, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func findingLine(f checks.Finding) string {
	return fmt.Sprintf("%s %s %s %s: %s", f.Check, f.Severity, f.Object.Kind, qualified(f.Object.Namespace, f.Object.Name), f.Message)
}

func findingLines(r *checks.Result) []string {
	out := make([]string, 0, len(r.Findings))
	for _, f := range r.Findings {
		out = append(out, findingLine(f))
	}
	sort.Strings(out)
	return out
}

// diffLines returns "- only lint" and "+ only doctor" lines, or "".
func diffLines(lint, live []string) string {
	in := func(xs []string) map[string]int {
		m := map[string]int{}
		for _, x := range xs {
			m[x]++
		}
		return m
	}
	a, b := in(lint), in(live)
	var out []string
	for _, x := range lint {
		if b[x] == 0 {
			out = append(out, "  - lint only:   "+x)
		} else {
			b[x]--
		}
	}
	for _, x := range live {
		if a[x] == 0 {
			out = append(out, "  + doctor only: "+x)
		} else {
			a[x]--
		}
	}
	return strings.Join(out, "\n")
}

func writeYAMLDoc(t *testing.T, w *bytes.Buffer, obj map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("---\n")
	w.Write(b)
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// warningLog collects the API server's warnings (dropped unknown fields,
// deprecated APIs) for the log.
type warningLog struct {
	mu sync.Mutex
	ws []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	w.ws = append(w.ws, msg)
	w.mu.Unlock()
}

func (w *warningLog) reset() { w.take() }

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.ws
	w.ws = nil
	return out
}
