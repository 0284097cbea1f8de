package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFilesHelmAndLists(t *testing.T) {
	s, err := LoadFiles(context.Background(), []string{"testdata"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workloads) != 1 || len(s.Nodes) != 2 || len(s.Pods) != 1 || s.Other != 1 {
		t.Fatalf("got %d workloads, %d nodes, %d pods, %d other", len(s.Workloads), len(s.Nodes), len(s.Pods), s.Other)
	}
	ds := s.Workloads[0]
	if ds.Source.File != filepath.Join("testdata", "helm.yaml") || ds.Source.Line != 9 || ds.Source.Template != "chart/templates/ds.yaml" {
		t.Errorf("DaemonSet source = %+v, want testdata/helm.yaml:9 from chart/templates/ds.yaml", ds.Source)
	}
	if len(ds.Meta.Annotations) != 1 || ds.Meta.Annotations[IgnoreAnnotation] != "HC101" {
		t.Errorf("annotations kept = %v, want only the ignore annotation", ds.Meta.Annotations)
	}
	if s.Nodes[0].Status.Capacity.Pods.Value != 60 || s.Nodes[1].Status.Capacity.Pods.Value != 110 {
		t.Errorf("capacity.pods = %v, %v", s.Nodes[0].Status.Capacity.Pods, s.Nodes[1].Status.Capacity.Pods)
	}
	if s.Nodes[0].Source.Line != 26 {
		t.Errorf("List item line = %d, want 26 (the List's first line)", s.Nodes[0].Source.Line)
	}
	if o := s.Owners["ReplicaSet/a/rs"]; o.Kind != "Deployment" || o.Name != "web" {
		t.Errorf("ReplicaSet owner = %+v", o)
	}
	if p := s.Pods[0]; p.NodeName != "n1" || p.Owner.Name != "rs" {
		t.Errorf("pod = %+v", p)
	}
}

func TestLoadFilesStdin(t *testing.T) {
	s, err := LoadFiles(context.Background(), []string{Stdin}, strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Namespaces) != 1 || s.Namespaces[0].Source.File != "<stdin>" || s.Namespaces[0].Source.Line != 1 {
		t.Fatalf("namespaces = %+v", s.Namespaces)
	}
}

func TestLoadFilesErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, content, want string
	}{
		{"bad.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n", "bad.yaml:7: did not find expected"},
		{"type.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus: {capacity: {pods: lots}}\n", "type.yaml:1: Node a:"},
		{"nokind.yaml", "metadata: {name: a}\n", "nokind.yaml:1: object a: object has no apiVersion or kind"},
		{"scalar.yaml", "just a string\n", "scalar.yaml:1: not a Kubernetes object"},
		{"bad.json", "{\"apiVersion\": \"v1\",\n \"kind\": }", "bad.json:2:"},
		{"taints.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nspec: {taints: {key: os}}\n", "field spec.taints"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadFiles(context.Background(), []string{write(c.name, c.content)}, nil)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ParseError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := LoadFiles(context.Background(), []string{filepath.Join(dir, "missing.yaml")}, nil); err == nil || errors.As(err, new(*ParseError)) {
		t.Fatalf("missing file: err = %v, want an I/O error", err)
	}
}

func TestDottedHosts(t *testing.T) {
	cases := map[string][]string{
		"http://hello.demo/healthz":               {"hello.demo"},
		"hello.demo.svc:8080":                     {"hello.demo.svc"},
		"http://hello.demo.svc.cluster.local/":    nil,
		"--config.file=config.yml":                {"config.yml"}, // a candidate; checks keep only Services
		"0.0.0.0":                                 nil,
		`{"Backend": "http://hello.demo:80/api"}`: {"hello.demo"},
		"a.b c.d":           {"a.b", "c.d"},
		"user@mail.example": nil,
		"https://k8s-lab-api.example.com:6443/path": nil,
	}
	for in, want := range cases {
		got := DottedHosts(in)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("DottedHosts(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	for _, p := range []string{"testdata/helm.yaml", "testdata/list.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("--- {apiVersion: v1, kind: Node, metadata: {name: x}}\n"))
	f.Add([]byte("[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New()
		for _, d := range splitDocs("f.yaml", b) {
			if err := s.addDoc(d); err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line < 1 {
					t.Fatalf("error without a place: %v", err)
				}
			}
		}
		s.Sort()
	})
}
