package snapshot

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// kindConstants returns the Kind constants declared in types.go, so that a
// new kind without a table entry fails TestKindTable.
func kindConstants(t *testing.T) []Kind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Kind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				out = append(out, Kind(strings.Trim(lit.Value, `"`)))
			}
		}
	}
	if len(out) < 19 {
		t.Fatalf("found only %d Kind constants in types.go", len(out))
	}
	return out
}

// TestKindTable: every Kind constant has exactly one entry; every group
// and alias of the table names its kind and nothing else; the live
// resources are in the entry's groups.
func TestKindTable(t *testing.T) {
	consts := kindConstants(t)
	var inTable []Kind
	seen := map[groupKind]Kind{}
	for _, e := range kindTable {
		inTable = append(inTable, e.kind)
		if e.decode == nil || len(e.groups) == 0 {
			t.Errorf("%s: no decoder or no group", e.kind)
		}
		names := []groupKind{}
		for _, g := range e.groups {
			names = append(names, groupKind{g, string(e.kind)})
		}
		for _, gk := range append(names, e.aliases...) {
			if k, dup := seen[gk]; dup {
				t.Errorf("%s/%s names both %s and %s", gk.group, gk.kind, k, e.kind)
			}
			seen[gk] = e.kind
			apiVersion := "v1"
			if gk.group != "" {
				apiVersion = gk.group + "/v1"
			}
			if got := KindOf(apiVersion, gk.kind); got != e.kind {
				t.Errorf("KindOf(%s, %s) = %q, want %s", apiVersion, gk.kind, got, e.kind)
			}
		}
		if got := resourcesFor(e.kind); !slices.Equal(got, e.resources) {
			t.Errorf("resourcesFor(%s) = %v", e.kind, got)
		}
		for _, r := range e.resources {
			group := ""
			if i := strings.LastIndex(r.groupVersion, "/"); i >= 0 {
				group = r.groupVersion[:i]
			}
			if !slices.Contains(e.groups, group) {
				t.Errorf("%s is listed from %s, a group its manifests cannot name", e.kind, r.groupVersion)
			}
		}
		if len(e.resources) == 0 && e.kind != KindClusterConfiguration {
			t.Errorf("%s cannot be listed live", e.kind)
		}
	}
	slices.Sort(consts)
	slices.Sort(inTable)
	if !slices.Equal(consts, inTable) {
		t.Errorf("Kind constants %q, table %q", consts, inTable)
	}
}

// TestKindOfNearMisses: a kind in another group, a lower-case kind, an
// alias outside its group, a kind the checks do not read.
func TestKindOfNearMisses(t *testing.T) {
	for _, c := range []struct{ apiVersion, kind string }{
		{"apps/v1", "Node"},
		{"v1", "Deployment"},
		{"apps", "Deployment"}, // no version: read as the core group
		{"extensions/v1beta1", "StatefulSet"},
		{"batch/v1", "node"},
		{"v1", "node"},
		{"projectcalico.org/v3", "IPAMConfig"},
		{"crd.projectcalico.org/v1", "IPAM"},
		{"kubeadm.k8s.io/v1beta4", "InitConfiguration"},
		{"operator.tigera.io/v1", "APIServer"},
		{"v1", ""},
		{"x.example.com/v1", "Pod"},
	} {
		if got := KindOf(c.apiVersion, c.kind); got != "" {
			t.Errorf("KindOf(%q, %q) = %s, want none", c.apiVersion, c.kind, got)
		}
	}
	for _, c := range []struct {
		apiVersion, kind string
		want             Kind
	}{
		{"extensions/v1beta1", "Deployment", KindDeployment},
		{"crd.projectcalico.org/v1", "IPAMConfig", KindIPAMConfiguration},
		{"kubeadm.k8s.io/v1beta4", "ClusterConfiguration", KindClusterConfiguration},
		{"certificates.k8s.io/v1", "CertificateSigningRequest", KindCSR},
		{"v1", "Pod", KindPod},
	} {
		if got := KindOf(c.apiVersion, c.kind); got != c.want {
			t.Errorf("KindOf(%q, %q) = %q, want %s", c.apiVersion, c.kind, got, c.want)
		}
	}
}

// counts is how many objects each list of the snapshot holds.
func counts(s *Snapshot) map[string]int {
	return map[string]int{"Nodes": len(s.Nodes), "Namespaces": len(s.Namespaces), "Workloads": len(s.Workloads),
		"Pods": len(s.Pods), "Services": len(s.Services), "ConfigMaps": len(s.ConfigMaps), "RuntimeClasses": len(s.RuntimeClasses),
		"CSRs": len(s.CSRs), "Installations": len(s.Installations), "TigeraStatuses": len(s.TigeraStatuses), "IPPools": len(s.IPPools),
		"IPAMConfigs": len(s.IPAMConfigs), "FelixConfigs": len(s.FelixConfigs), "ClusterConfigs": len(s.ClusterConfigs),
		"Owners": len(s.Owners), "Other": s.Other}
}

func object(t *testing.T, apiVersion, kind string, extra map[string]any) []byte {
	t.Helper()
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{
		"name": "x", "namespace": "ns", "labels": map[string]any{"k8s-app": "a"},
		"annotations": map[string]any{IgnoreAnnotation: "HC101", "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}
	for k, v := range extra {
		o[k] = v
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAddKindStores: each kind lands in its own list, and only there, with
// its identity and origin and only the ignore annotation; the special
// cases keep their rules (owned ReplicaSets and Jobs as owner links, owned
// pods as Pods, kubeadm-config's ClusterConfiguration, a Service's labels
// dropped).
func TestAddKindStores(t *testing.T) {
	owned := func(kind string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns",
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": kind, "name": "o", "controller": true}}}}
	}
	for _, c := range []struct {
		apiVersion, kind string
		extra            map[string]any
		want             map[string]int
	}{
		{"v1", "Node", nil, map[string]int{"Nodes": 1}},
		{"v1", "Namespace", nil, map[string]int{"Namespaces": 1}},
		{"v1", "Pod", nil, map[string]int{"Workloads": 1}},
		{"v1", "Pod", owned("ReplicaSet"), map[string]int{"Pods": 1}},
		{"v1", "Service", nil, map[string]int{"Services": 1}},
		{"v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "http://x.y:80"}}, map[string]int{"ConfigMaps": 1}},
		{"v1", "ConfigMap", map[string]any{"metadata": map[string]any{"name": KubeadmConfigName, "namespace": KubeadmConfigNamespace},
			"data": map[string]any{"ClusterConfiguration": "kubernetesVersion: v1.37.2\n"}}, map[string]int{"ConfigMaps": 1, "ClusterConfigs": 1}},
		{"apps/v1", "DaemonSet", nil, map[string]int{"Workloads": 1}},
		{"extensions/v1beta1", "Deployment", nil, map[string]int{"Workloads": 1}},
		{"apps/v1", "StatefulSet", nil, map[string]int{"Workloads": 1}},
		{"apps/v1", "ReplicaSet", nil, map[string]int{"Workloads": 1}},
		{"apps/v1", "ReplicaSet", owned("Deployment"), map[string]int{"Owners": 1}},
		{"apps/v1", "ReplicaSet", owned("Foo"), map[string]int{"Workloads": 1}},
		{"batch/v1", "Job", owned("CronJob"), map[string]int{"Owners": 1}},
		{"batch/v1", "CronJob", map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{"kubernetes.io/os": "linux"}}}}}}}, map[string]int{"Workloads": 1}},
		{"node.k8s.io/v1", "RuntimeClass", nil, map[string]int{"RuntimeClasses": 1}},
		{"certificates.k8s.io/v1", "CertificateSigningRequest", nil, map[string]int{"CSRs": 1}},
		{"operator.tigera.io/v1", "Installation", nil, map[string]int{"Installations": 1}},
		{"operator.tigera.io/v1", "TigeraStatus", nil, map[string]int{"TigeraStatuses": 1}},
		{"projectcalico.org/v3", "IPPool", nil, map[string]int{"IPPools": 1}},
		{"crd.projectcalico.org/v1", "IPAMConfig", nil, map[string]int{"IPAMConfigs": 1}},
		{"projectcalico.org/v3", "FelixConfiguration", nil, map[string]int{"FelixConfigs": 1}},
		{"kubeadm.k8s.io/v1beta4", "ClusterConfiguration", nil, map[string]int{"ClusterConfigs": 1}},
		{"example.com/v1", "Widget", nil, map[string]int{"Other": 1}},
	} {
		name := c.apiVersion + " " + c.kind
		s := New()
		src := Source{File: "f.yaml", Line: 7}
		if err := s.Add(object(t, c.apiVersion, c.kind, c.extra), src); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for list, n := range counts(s) {
			if n != c.want[list] {
				t.Errorf("%s: %s holds %d, want %d", name, list, n, c.want[list])
			}
		}
		var objs []*Object
		for _, x := range s.Nodes {
			objs = append(objs, &x.Object)
		}
		for _, x := range s.Workloads {
			objs = append(objs, &x.Object)
		}
		for _, x := range s.Services {
			objs = append(objs, &x.Object)
			if x.Meta.Labels != nil {
				t.Errorf("%s: labels kept: %v", name, x.Meta.Labels)
			}
		}
		for _, x := range s.ConfigMaps {
			objs = append(objs, &x.Object)
		}
		for _, x := range s.ClusterConfigs {
			objs = append(objs, &x.Object)
		}
		for _, x := range s.IPAMConfigs {
			objs = append(objs, &x.Object)
		}
		for _, o := range objs {
			if o.APIVersion != c.apiVersion || o.Kind != c.kind || o.Source != src {
				t.Errorf("%s: stored as %s %s from %+v", name, o.APIVersion, o.Kind, o.Source)
			}
			if c.extra == nil && (len(o.Meta.Annotations) != 1 || o.Meta.Annotations[IgnoreAnnotation] != "HC101") {
				t.Errorf("%s: annotations %v", name, o.Meta.Annotations)
			}
		}
	}
}

// TestAddKindTypeErrorKept: a container field of the wrong type that no
// check reads is named, with the container's index and name, and the
// object is stored with the rest of what it holds, so that its checks run.
func TestAddKindTypeErrorKept(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		data string
		want string
	}{
		{KindDaemonSet, `{"metadata":{"name":"cns"},"spec":{"template":{"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"cns-container","image":"cns:1","command":"/usr/bin/cns"}]}}}}`,
			"containers[0] (cns-container): command must be a list of strings, not a string; the object's other fields were checked"},
		{KindPod, `{"metadata":{"name":"p"},"spec":{"tolerations":[{"operator":"Exists"}],"initContainers":[{"name":"i","image":"cns:1","args":["a",7]}],"containers":[{"name":"c","image":"cns:1"}]}}`,
			"initContainers[0] (i): args[1] must be a string, not a number; the object's other fields were checked"},
		{KindCronJob, `{"metadata":{"name":"j"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"c","image":"cns:1","env":{"A":"b"}}]}}}}}}`,
			"containers[0] (c): env must be a list of mappings, not a mapping"},
	} {
		s := New()
		err := s.AddKind(c.kind, "v1", string(c.kind), []byte(c.data), Source{})
		var te *TypeError
		if err == nil || !errors.As(err, &te) || !te.Kept || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want a kept type error %q", c.kind, c.data, err, c.want)
			continue
		}
		if len(s.Workloads) != 1 {
			t.Fatalf("%s: %d workloads stored, want the object", c.kind, len(s.Workloads))
		}
		w := s.Workloads[0]
		if len(w.Template.Spec.Tolerations) != 1 || w.Template.Spec.AllContainers()[0].Image != "cns:1" {
			t.Errorf("%s: the rest of the object was not kept: %+v", c.kind, w.Template.Spec)
		}
	}
}

// TestAddKindErrors: a field of the wrong type is named in words and
// nothing is stored; a kind without a decoder is an internal error.
func TestAddKindErrors(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		data string
		want string
	}{
		{KindNode, `{"metadata":{"name":5}}`, "metadata.name must be a string, not a number; the object was not checked"},
		{KindPod, `{"spec":{"nodeName":[]}}`, "spec.nodeName must be a string, not a list"},
		{KindService, `{"metadata":{"labels":{"a":1}}}`, "metadata.labels.a must be a string, not a number"},
		{KindDeployment, `{"spec":{"template":"x"}}`, "spec.template must be a mapping, not a string"},
		// Fields the checks read, in a container or around it: not stored.
		{KindDeployment, `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":5}]}}}}`, "containers[0] (a): image must be a string, not a number; the object was not checked"},
		{KindDaemonSet, `{"spec":{"template":{"spec":{"initContainers":[{"name":"i"}],"containers":[{"name":"a"},{"name":{"x":1},"image":"b"}]}}}}`,
			"containers[1]: name must be a string, not a mapping; the object was not checked"},
		{KindPod, `{"spec":{"nodeSelector":{"kubernetes.io/os":["linux"]},"containers":[{"name":"a","command":"x"}]}}`, "spec.nodeSelector.kubernetes.io/os must be a string, not a list"},
		{KindConfigMap, `{"metadata":{"name":"kubeadm-config","namespace":"kube-system"},"data":{"ClusterConfiguration":"a: [b"}}`, "data.ClusterConfiguration: "},
		{KindIPPool, `[1]`, "cannot unmarshal array"},
		{"Widget", `{}`, "internal: no decoder for kind Widget"},
	} {
		s := New()
		err := s.AddKind(c.kind, "v1", string(c.kind), []byte(c.data), Source{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.kind, c.data, err, c.want)
		}
		if s.Len() != 0 {
			t.Errorf("%s %s: %d objects stored after an error", c.kind, c.data, s.Len())
		}
	}
}

// FuzzAddKind feeds each decoder arbitrary JSON: no panic; an error stores
// nothing; a success stores one object (two for kubeadm-config: the
// ConfigMap and its ClusterConfiguration) with the identity given.
func FuzzAddKind(f *testing.F) {
	for i := range kindTable {
		f.Add(uint8(i), []byte(`{"metadata":{"name":"a","namespace":"b","annotations":{"hybridctl.dev/ignore":"x"}}}`))
	}
	f.Add(uint8(4), []byte(`{"metadata":{"name":"kubeadm-config","namespace":"kube-system"},"data":{"ClusterConfiguration":"networking: {podSubnet: 10.0.0.0/8}"}}`))
	f.Add(uint8(2), []byte(`{"metadata":{"ownerReferences":[{"kind":"ReplicaSet","name":"r"}]},"spec":{"nodeName":"n"}}`))
	f.Add(uint8(8), []byte(`{"metadata":{"ownerReferences":[{"kind":"Deployment","name":"d","controller":true}]}}`))
	f.Add(uint8(10), []byte(`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}}}}`))
	f.Fuzz(func(t *testing.T, i uint8, data []byte) {
		e := kindTable[int(i)%len(kindTable)]
		s := New()
		err := s.AddKind(e.kind, "v9", string(e.kind), data, Source{File: "f", Line: 3})
		n := s.Len()
		switch {
		case err != nil && n != 0:
			t.Fatalf("%s: error %v, but %d objects stored", e.kind, err, n)
		case err == nil && (n < 1 || n > 2 || (n == 2 && e.kind != KindConfigMap)):
			t.Fatalf("%s: %d objects stored", e.kind, n)
		}
		for _, w := range s.Workloads {
			if w.APIVersion != "v9" || w.Kind != string(e.kind) || w.Source.Line != 3 {
				t.Fatalf("%s stored as %s %s line %d", e.kind, w.APIVersion, w.Kind, w.Source.Line)
			}
		}
	})
}
