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

// load reads content as one file named name with small options.
func load(t *testing.T, o FileOptions, name, content string) *Snapshot {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := o.Load(context.Background(), []string{p}, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for i := range s.Diagnostics {
		s.Diagnostics[i].File = filepath.Base(s.Diagnostics[i].File)
	}
	return s
}

func diagStrings(s *Snapshot) []string {
	var out []string
	for _, d := range s.Diagnostics {
		out = append(out, d.String())
	}
	return out
}

// want checks the diagnostics, one substring each, in order.
func wantDiags(t *testing.T, s *Snapshot, want ...string) {
	t.Helper()
	got := diagStrings(s)
	if len(got) != len(want) {
		t.Fatalf("diagnostics =\n%s\nwant %d: %q", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("diagnostic %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

const ds = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ne, namespace: mon}
spec:
  template:
    spec:
      containers: [{name: c, image: "x:1"}]
`

func TestLoadKustomizationBesideDaemonSet(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml":     "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ds.yaml\n",
		"ds.yaml":                ds,
		"sub/kustomization.yaml": "# no apiVersion, as most are written\nresources: [../ds.yaml]\n",
		"other.yaml":             "resources: [a.yaml]\nnamePrefix: x-\n",
	}
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadFiles(context.Background(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workloads) != 1 || s.Workloads[0].Meta.Name != "ne" || s.Workloads[0].Source.Line != 1 {
		t.Fatalf("workloads = %+v, want the DaemonSet at line 1", s.Workloads)
	}
	if s.Len() != 1 {
		t.Errorf("objects = %d, want 1 (a kustomization is not one)", s.Len())
	}
	got := diagStrings(s)
	want := []string{
		filepath.Join(dir, "kustomization.yaml") + ":1: warning: a kustomization",
		filepath.Join(dir, "other.yaml") + ":1: warning: a kustomization",
		filepath.Join(dir, "sub", "kustomization.yaml") + ":2: warning: a kustomization",
	}
	if len(got) != len(want) {
		t.Fatalf("diagnostics = %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("diagnostic %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
	if fix := s.Diagnostics[0].Fix; fix != "lint what kustomize builds: kustomize build "+dir+" | hybridctl lint -" {
		t.Errorf("fix = %q", fix)
	}
}

func TestLoadDiagnostics(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
	cases := []struct {
		name, content string
		objects       int
		want          []string
	}{
		{"bad.yaml", node + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n---\n" + node,
			2, []string{"bad.yaml:7: error: cannot read this YAML document: did not find expected"}}, // yaml.v3 says the line before
		{"type.yaml", "# c\napiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus: {capacity: {pods: lots}}\n---\n" + node,
			1, []string{"type.yaml:2: error: Node a:"}},
		{"taints.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nspec: {taints: {key: os}}\n", 0, []string{"taints.yaml:1: error: Node a: spec.taints must be a list of mappings, not a mapping; the object was not checked"}},
		{"nokind.yaml", "metadata: {name: a}\n", 0, []string{"nokind.yaml:1: warning: not a Kubernetes object (no apiVersion or kind)"}},
		{"noapiversion.yaml", "kind: Deployment\nmetadata: {name: web}\n", 0, []string{"noapiversion.yaml:1: error: Deployment web has no apiVersion"}},
		{"nokindonly.yaml", "apiVersion: v1\nmetadata: {name: web}\n", 0, []string{"error: object web has no kind"}},
		{"scalar.yaml", "just a string\n---\n" + node, 1, []string{"scalar.yaml:1: warning: not a Kubernetes object (a scalar"}},
		{"seq.yaml", "- a\n- b\n", 0, []string{"seq.yaml:1: warning: not a Kubernetes object (a sequence"}},
		{"bad.json", "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n{\"apiVersion\": \"v1\",\n \"kind\": }", 1,
			[]string{"bad.json:3: error: invalid character '}'", "the rest of the file was not read"}},
		{"trunc.json", "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n{\"apiVersion\": \"v1\",", 1,
			[]string{"trunc.json:3: error: unexpected end of JSON input"}},
		{"str.json", "[\"x\", 1]\n", 0, []string{"str.json:1: warning: not a Kubernetes object (a scalar", "str.json:1: warning: not a Kubernetes object (a scalar"}},
		{"str2.json", "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n\"x\"\n", 1, []string{"str2.json:2: warning: not a Kubernetes object (a JSON string"}},
		{"tab.yaml", node + "---\napiVersion: v1\nkind: Node\nmetadata:\n\tname: b\n", 1, []string{"tab.yaml:8: error: cannot read this YAML document: a tab character at line 8, column 1: YAML indents with spaces only"}},
		{"tabafter.yaml", node + "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: b\nspec:\n  taints:\n  - key: os\n  \t effect: NoSchedule\n", 1, []string{"tabafter.yaml:12: error: cannot read this YAML document: a tab character at line 12, column 3"}},
		{"tabvalue.yaml", node + "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: \"b\tc\"\n  labels: [\n", 1, []string{"tabvalue.yaml:9: error: cannot read this YAML document: did not find expected node content"}},
		// An error at the end of the input is on the last line, with or
		// without a line break after it (yaml.v3 says the line after).
		{"eof.yaml", node + "---\nkind: \"unclosed", 1, []string{"eof.yaml:5: error: cannot read this YAML document: found unexpected end of stream"}},
		{"eofnl.yaml", node + "---\nkind: \"unclosed\n", 1, []string{"eofnl.yaml:5: error: cannot read this YAML document: found unexpected end of stream"}},
		{"empty.yaml", "---\n", 0, nil},
		{"comments.yaml", "# only\n---\n# comments\n...\n", 0, nil},
		{"emptylist.yaml", "apiVersion: v1\nkind: List\nitems: []\n", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := load(t, FileOptions{}, c.name, c.content)
			if s.Len() != c.objects {
				t.Errorf("objects = %d, want %d", s.Len(), c.objects)
			}
			if len(c.want) == 2 && c.name == "bad.json" {
				wantDiags(t, s, c.want[0])
				if !strings.Contains(s.Diagnostics[0].Message, c.want[1]) {
					t.Errorf("message = %q, want %q", s.Diagnostics[0].Message, c.want[1])
				}
				return
			}
			wantDiags(t, s, c.want...)
		})
	}
}

// A kubectl get -o yaml List is cut into its items: each keeps its own
// line, an error in one item is at its line and does not hide the others,
// and the List's fields after the items map back to their lines.
func TestLoadYAMLListStreamed(t *testing.T) {
	in := `apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
- apiVersion: v1
  kind: Node
  metadata:
	name: broken
-
  apiVersion: v1
  kind: Node
  metadata: {name: n3}
kind: List
metadata:
  resourceVersion: ""
---
apiVersion: v1
kind: List
items:
  # indented sequence, as some tools write it
  - apiVersion: v1
    kind: Namespace
    metadata: {name: ns1}

  - apiVersion: v1
    kind: Namespace
    metadata: {name: ns2}
metadata:
	resourceVersion: x
`
	s := load(t, FileOptions{Workers: 3}, "list.yaml", in)
	if len(s.Nodes) != 2 || s.Nodes[0].Source.Line != 3 || s.Nodes[1].Meta.Name != "n3" || s.Nodes[1].Source.Line != 11 {
		t.Fatalf("nodes = %d: %+v %+v", len(s.Nodes), s.Nodes[0].Object, s.Nodes[len(s.Nodes)-1].Object)
	}
	if len(s.Namespaces) != 2 || s.Namespaces[0].Source.Line != 23 || s.Namespaces[1].Source.Line != 27 {
		t.Fatalf("namespaces = %+v", s.Namespaces)
	}
	wantDiags(t, s, "list.yaml:10: error: cannot read", "list.yaml:31: error: cannot read")
}

// The cap is per document: a document of exactly the cap is read, one
// byte more is an error diagnostic, and the documents after it are read.
func TestLoadDocumentCap(t *testing.T) {
	const max = 300
	mk := func(size int) string {
		head := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {k: \""
		tail := "\"}\n"
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
	item := func(size int) string {
		head := "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: big}\n  data: {k: \""
		tail := "\"}\n"
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	jsonItem := func(size int) string {
		head := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"`
		tail := `"}}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	for _, n := range []int{max, max + 1} {
		over := n > max
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			o := FileOptions{MaxDocument: max}
			var wantDiag []string
			if over {
				wantDiag = []string{"big.yaml:1: error: document is larger than 300 bytes"}
			}
			s := load(t, o, "big.yaml", mk(n)+"---\n"+node)
			wantDiags(t, s, wantDiag...)
			if len(s.Nodes) != 1 || len(s.ConfigMaps) != map[bool]int{false: 1, true: 0}[over] {
				t.Errorf("nodes %d, configmaps %d", len(s.Nodes), len(s.ConfigMaps))
			}

			// A List item: the cap applies to each item, not the List.
			s = load(t, o, "list.yaml", "apiVersion: v1\nkind: List\nitems:\n"+item(n)+item(max/2)+item(max/2))
			if over {
				wantDiag = []string{"list.yaml:4: error: document is larger than 300 bytes"}
			}
			wantDiags(t, s, wantDiag...)
			if want := map[bool]int{false: 3, true: 2}[over]; len(s.ConfigMaps) != want {
				t.Errorf("list: configmaps %d, want %d", len(s.ConfigMaps), want)
			}

			// A JSON List item; JSON cannot resume after it.
			js := "{\"kind\": \"List\", \"apiVersion\": \"v1\", \"items\": [\n" + jsonItem(max/2) + ",\n" + jsonItem(n) + "\n]}\n"
			s = load(t, o, "list.json", js)
			if over {
				wantDiag = []string{"list.json:3: error: document is larger than 300 bytes"}
			}
			wantDiags(t, s, wantDiag...)
			if want := map[bool]int{false: 2, true: 1}[over]; len(s.ConfigMaps) != want {
				t.Errorf("json list: configmaps %d, want %d", len(s.ConfigMaps), want)
			}
		})
	}
}

// The real cap, 32 MiB, on both sides, with a single line as long as the
// document (minified JSON in YAML).
func TestLoadDocumentCapReal(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB")
	}
	for _, n := range []int{MaxDocument, MaxDocument + 1} {
		head := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"`
		tail := "\"}}\n"
		var b bytes.Buffer
		b.WriteString("# one line of JSON, in YAML\n")
		b.WriteString(head)
		b.Write(bytes.Repeat([]byte("x"), n-len(head)-len(tail)))
		b.WriteString(tail)
		b.WriteString("---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
		s, err := LoadFiles(context.Background(), []string{Stdin}, &b)
		if err != nil {
			t.Fatal(err)
		}
		over := n > MaxDocument
		if len(s.Nodes) != 1 || (len(s.ConfigMaps) == 1) == over || (len(s.Diagnostics) == 1) != over {
			t.Fatalf("size %d: %d nodes, %d configmaps, diagnostics %v", n, len(s.Nodes), len(s.ConfigMaps), diagStrings(s))
		}
		if over && !strings.Contains(s.Diagnostics[0].String(), "<stdin>:2: error: document is larger than 32 MiB") {
			t.Errorf("diagnostic = %s", s.Diagnostics[0])
		}
	}
}

func TestLoadReadError(t *testing.T) {
	_, err := LoadFiles(context.Background(), []string{filepath.Join(t.TempDir(), "missing.yaml")}, nil)
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: err = %v, want an I/O error naming it", err)
	}
	_, err = LoadFiles(context.Background(), []string{Stdin}, failingReader{})
	if err == nil || !strings.Contains(err.Error(), "read <stdin>: disk on fire") {
		t.Fatalf("failing stdin: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LoadFiles(ctx, []string{"testdata"}, nil); err == nil {
		t.Fatal("cancelled: no error")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, fmt.Errorf("disk on fire") }
