package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/manifest"
)

// aliasedConfigMap is a ConfigMap whose one alias (on its line 6) adds
// exactly grow bytes: a scalar of grow-3 bytes used once more.
func aliasedConfigMap(name string, grow int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: x}\ndata:\n  a: &a %s\n  b: *a\n", name, strings.Repeat("y", grow-3))
}

// bombDoc is a "billion laughs" of about 21 KB whose level l5 (its line 6)
// crosses the per-document limit.
func bombDoc(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: x}\n", name)
	b.WriteString("l0: &l0 [\"" + strings.Repeat("x", 64) + "\"]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	return b.String()
}

// TestLoadAliasBombs: forty bombs in one file are forty errors naming the
// document and the line of the alias that crossed the per-document limit;
// none is expanded, and the object after them is read.
func TestLoadAliasBombs(t *testing.T) {
	var docs []string
	for i := range 40 {
		docs = append(docs, bombDoc(fmt.Sprintf("b%d", i)))
	}
	docs = append(docs, ds)
	content := strings.Join(docs, "---\n")
	s := load(t, FileOptions{}, "bombs.yaml", content)
	var want []string
	docLines := strings.Count(docs[0], "\n") + 1 // a document and its "---"
	for i := range 40 {
		want = append(want, fmt.Sprintf("bombs.yaml:%d: error: cannot read this YAML document (document %d of the file): aliases expand this document by more than 1 MiB", i*docLines+9, i+1))
	}
	wantDiags(t, s, want...)
	if len(s.Workloads) != 1 || len(s.ConfigMaps) != 0 {
		t.Errorf("%d workloads and %d ConfigMaps, want the DaemonSet alone", len(s.Workloads), len(s.ConfigMaps))
	}
}

// TestLoadAliasPerDocument: both sides of the per-document limit.
func TestLoadAliasPerDocument(t *testing.T) {
	s := load(t, FileOptions{}, "at.yaml", aliasedConfigMap("at", manifest.MaxAliasExpansionPerDocument))
	wantDiags(t, s)
	if len(s.ConfigMaps) != 1 {
		t.Fatalf("%d ConfigMaps, want 1", len(s.ConfigMaps))
	}
	s = load(t, FileOptions{}, "over.yaml", "# a comment\n"+aliasedConfigMap("over", manifest.MaxAliasExpansionPerDocument+1))
	wantDiags(t, s, "over.yaml:7: error: cannot read this YAML document (document 1 of the file): aliases expand this document by more than 1 MiB")
	if s.Diagnostics[0].Fix == "" || len(s.ConfigMaps) != 0 {
		t.Errorf("fix %q, %d ConfigMaps", s.Diagnostics[0].Fix, len(s.ConfigMaps))
	}
}

// TestLoadAliasWholeInput: documents each within their own limit count
// together against the input's, across files, in the input's order
// whatever the number of workers; the document past it is named.
func TestLoadAliasWholeInput(t *testing.T) {
	per := manifest.MaxAliasExpansionPerDocument
	n := manifest.MaxAliasExpansion / per // documents that fill the budget
	dir := t.TempDir()
	var first, second []string
	for i := range n - 2 {
		first = append(first, aliasedConfigMap(fmt.Sprintf("a%d", i), per))
	}
	// The second file: no aliases, the last two that fill the budget,
	// one alias too many, then a document without aliases.
	second = append(second, ds, aliasedConfigMap("b0", per), aliasedConfigMap("b1", per), aliasedConfigMap("b2", 3),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b3, namespace: x}\ndata: {k: v}\n")
	p1, p2 := filepath.Join(dir, "1.yaml"), filepath.Join(dir, "2.yaml")
	if err := os.WriteFile(p1, []byte(strings.Join(first, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p2, []byte(strings.Join(second, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(ds, "\n") + 1 + 2*(strings.Count(second[1], "\n")+1) + 6
	for _, workers := range []int{1, 4} {
		s, err := FileOptions{Workers: workers}.Load(context.Background(), []string{p1, p2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.Diagnostics {
			s.Diagnostics[i].File = filepath.Base(s.Diagnostics[i].File)
		}
		wantDiags(t, s, fmt.Sprintf("2.yaml:%d: error: cannot read this YAML document (document 4 of the file): aliases expand the input by more than 8 MiB", line))
		if len(s.ConfigMaps) != n+1 || s.ConfigMaps[len(s.ConfigMaps)-1].Meta.Name != "b3" {
			t.Errorf("%d workers: %d ConfigMaps, want %d ending with b3", workers, len(s.ConfigMaps), n+1)
		}
	}
}

// TestLoadAliasListItem: an item of a List is measured on its own, and
// its error points at the file's line.
func TestLoadAliasListItem(t *testing.T) {
	content := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: ok, namespace: x}\n" +
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: big, namespace: x}\n  data:\n    a: &a " + strings.Repeat("z", manifest.MaxAliasExpansionPerDocument) + "\n    b: *a\n"
	s := load(t, FileOptions{}, "list.yaml", content)
	wantDiags(t, s, "list.yaml:12: error: cannot read this YAML document (document 1 of the file): aliases expand this document by more than 1 MiB")
	if len(s.ConfigMaps) != 1 || s.ConfigMaps[0].Meta.Name != "ok" {
		t.Errorf("ConfigMaps %d, want the first item", len(s.ConfigMaps))
	}
}

// TestKubeadmConfigAliases: the ClusterConfiguration inside kubeadm-config
// may grow through aliases by at most its own size: both sides.
func TestKubeadmConfigAliases(t *testing.T) {
	cm := func(text string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"name":"kubeadm-config","namespace":"kube-system"},"data":{"ClusterConfiguration":%q}}`, text)
	}
	// "a: &a X\nb: [*a, *a]\n" with X of v bytes is v+19 bytes long and
	// its aliases add 2(v+3): as much as its size at v = 13, one more at
	// v = 14.
	text := func(v int) string { return "a: &a " + strings.Repeat("x", v) + "\nb: [*a, *a]\n" }
	if len(text(13)) != 32 {
		t.Fatalf("len %d", len(text(13)))
	}
	s := New()
	if err := s.AddKind(KindConfigMap, "v1", "ConfigMap", cm(text(13)), Source{}); err != nil || len(s.ClusterConfigs) != 1 {
		t.Fatalf("aliases adding the text's size: %v", err)
	}
	s = New()
	err := s.AddKind(KindConfigMap, "v1", "ConfigMap", cm(text(14)), Source{})
	if err == nil || !strings.Contains(err.Error(), "data.ClusterConfiguration: document 1, line 2: aliases expand this document by more than 33 bytes") || s.Len() != 0 {
		t.Fatalf("aliases adding one byte more than the text's size: %v, %d objects", err, s.Len())
	}
	big := "a: &a " + strings.Repeat("x", 100) + "\nb: [" + strings.TrimSuffix(strings.Repeat("*a,", 20000), ",") + "]\n"
	if err := New().AddKind(KindConfigMap, "v1", "ConfigMap", cm(big), Source{}); err == nil {
		t.Fatal("a 60 KB text growing by 2 MB: accepted")
	}
}
