package snapshot

import (
	"bytes"
	"context"
	"fmt"
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
	if s.Nodes[0].Source.Line != 29 || s.Nodes[1].Source.Line != 30 {
		t.Errorf("List item lines = %d, %d, want 29 and 30 (each item's own line)", s.Nodes[0].Source.Line, s.Nodes[1].Source.Line)
	}
	if len(s.Diagnostics) != 0 {
		t.Errorf("diagnostics = %v, want none", s.Diagnostics)
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

// FuzzLoad feeds the file loader arbitrary input. It must not panic or
// hang; every diagnostic and object has a place inside the input; one
// worker and three read the same; and a small cap changes nothing but
// what is over it.
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
	f.Add([]byte("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\nkind: List\n"))
	f.Add([]byte("resources: [a.yaml]\n---\nkind: Deployment\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n  \t image: x\n"))
	f.Add([]byte("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: cns}\nspec:\n  template:\n    spec:\n      tolerations: [{operator: Exists}]\n      containers:\n      - {name: cns-container, image: cns, command: /usr/bin/cns, args: [1, {a: b}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := bytes.Count(b, []byte{'\n'}) + 1
		read := func(o FileOptions) (*Snapshot, string) {
			s, err := o.Load(context.Background(), []string{Stdin}, bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var sb strings.Builder
			for _, d := range s.Diagnostics {
				if d.Line < 1 || d.Line > lines {
					t.Fatalf("diagnostic outside the input (%d lines): %s", lines, d)
				}
				fmt.Fprintln(&sb, d)
			}
			for _, w := range s.Workloads {
				if w.Source.Line < 1 || w.Source.Line > lines {
					t.Fatalf("workload %s at line %d of %d", w.Meta.Name, w.Source.Line, lines)
				}
				fmt.Fprintln(&sb, w.Kind, w.Meta.Namespace, w.Meta.Name, w.Source.Line)
			}
			fmt.Fprintln(&sb, s.Len(), len(s.Nodes), len(s.Pods), s.Other)
			return s, sb.String()
		}
		_, one := read(FileOptions{Workers: 1})
		_, three := read(FileOptions{Workers: 3})
		if one != three {
			t.Fatalf("1 worker:\n%s\n3 workers:\n%s", one, three)
		}
		read(FileOptions{Workers: 2, MaxDocument: 64})
	})
}
