package kubeconfig

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// TestListProblems: a context whose cluster or user is missing (or nil)
// lists each as a problem, without a server; a complete one has none, and
// "problems" and "shadowed" are [] in JSON, never null.
func TestListProblems(t *testing.T) {
	cfg := api.NewConfig()
	cfg.Clusters["c"] = &api.Cluster{Server: "https://h:6443"}
	cfg.Clusters["nil"] = nil
	cfg.AuthInfos["u"] = &api.AuthInfo{Token: "t"}
	cfg.AuthInfos["nilu"] = nil
	cfg.Contexts["ok"] = &api.Context{Cluster: "c", AuthInfo: "u", Namespace: "ns"}
	cfg.Contexts["dangling"] = &api.Context{Cluster: "gone", AuthInfo: "nobody"}
	cfg.Contexts["nils"] = &api.Context{Cluster: "nil", AuthInfo: "nilu"}
	cfg.Contexts["no-user"] = &api.Context{Cluster: "c", AuthInfo: "nobody"}
	cfg.Contexts["skipped"] = nil
	cfg.CurrentContext = "no-user"

	res := describe("/k", cfg)
	want := []ContextInfo{
		{Name: "dangling", Cluster: "gone", User: "nobody", Problems: []string{`cluster "gone" is not defined`, `user "nobody" is not defined`}},
		{Name: "nils", Cluster: "nil", User: "nilu", Problems: []string{`cluster "nil" is not defined`, `user "nilu" is not defined`}},
		{Name: "no-user", Current: true, Cluster: "c", User: "nobody", Server: "https://h:6443", Problems: []string{`user "nobody" is not defined`}},
		{Name: "ok", Cluster: "c", User: "u", Namespace: "ns", Server: "https://h:6443", Problems: []string{}},
	}
	if !reflect.DeepEqual(res.Contexts, want) {
		t.Errorf("contexts:\n got %+v\nwant %+v", res.Contexts, want)
	}
	b, err := json.Marshal(describe("/k", api.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"file":"/k","currentContext":"","contexts":[],"shadowed":[]}` {
		t.Errorf("empty list: %s", b)
	}
	b, _ = json.Marshal(res.Contexts[3])
	if !strings.Contains(string(b), `"problems":[]`) {
		t.Errorf("no problems: %s", b)
	}
}

// TestFindShadowsEdges: a context that differs only in its namespace is a
// shadow; several shadows of one kind keep their name order, kinds are
// sorted; an empty entry and a file named twice (once relatively) are
// skipped; a file that cannot be read, or a cancelled context, is an I/O
// error.
func TestFindShadowsEdges(t *testing.T) {
	dir := t.TempDir()
	file := func(name, ns, server string) string {
		return kt.WriteFile(t, filepath.Join(dir, name), []byte(`apiVersion: v1
kind: Config
clusters: [{name: b, cluster: {server: '`+server+`'}}, {name: a, cluster: {server: '`+server+`'}}, {name: same, cluster: {server: 'https://same'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: cx, context: {cluster: a, user: u, namespace: `+ns+`}}, {name: cy, context: {cluster: b, user: u}}]
`), 0o600)
	}
	f1 := file("one", "ns1", "https://one")
	f2 := file("two", "ns2", "https://two")
	sh, err := FindShadows(context.Background(), []string{"", f1, f2, f1, ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []Shadow{
		{Kind: "cluster", Name: "a", Winner: f1, Shadowed: f2},
		{Kind: "cluster", Name: "b", Winner: f1, Shadowed: f2},
		{Kind: "context", Name: "cx", Winner: f1, Shadowed: f2},
	}
	if !reflect.DeepEqual(sh, want) {
		t.Errorf("shadows:\n got %+v\nwant %+v", sh, want)
	}

	// The same file twice, once by a relative path: no shadow, and only
	// one read (a file changed in between would otherwise shadow itself).
	t.Chdir(dir)
	if sh, err := FindShadows(context.Background(), []string{f1, "one", "./one"}); err != nil || len(sh) != 0 {
		t.Errorf("one file named three ways: %+v %v", sh, err)
	}

	// A directory cannot be read as a file.
	_, err = FindShadows(context.Background(), []string{f1, dir})
	if KindOf(err) != KindIO || !strings.HasPrefix(err.Error(), "reading kubeconfig "+dir+": ") {
		t.Errorf("directory: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = FindShadows(ctx, []string{f1})
	if KindOf(err) != KindIO || err.Error() != "reading "+f1+": context canceled" {
		t.Errorf("cancelled: %v", err)
	}
	// The cancelled context is checked before each read, even of a missing
	// file; an empty entry is not a read.
	if _, err := FindShadows(ctx, []string{filepath.Join(dir, "missing")}); KindOf(err) != KindIO {
		t.Errorf("cancelled, missing file: %v", err)
	}
	if sh, err := FindShadows(ctx, []string{""}); err != nil || len(sh) != 0 {
		t.Errorf("cancelled, empty entry: %+v %v", sh, err)
	}
	// Nothing to read: no shadows, no error.
	if sh, err := FindShadows(context.Background(), []string{"", filepath.Join(dir, "missing")}); err != nil || len(sh) != 0 {
		t.Errorf("no files: %+v %v", sh, err)
	}
}

// TestRemoveExact: what Remove reports, entry by entry, and the names an
// unknown context's error lists ("none" for an empty file).
func TestRemoveExact(t *testing.T) {
	st := newStore(t)
	kt.WriteFile(t, st.Path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: 'https://one'}}, {name: c2, cluster: {server: 'https://two'}}]
users: [{name: u1, user: {token: a}}, {name: u2, user: {token: b}}]
contexts:
- {name: a, context: {cluster: c1, user: u1}}
- {name: b, context: {cluster: c1, user: u2}}
- {name: c, context: {cluster: c2, user: u1}}
- {name: d, context: {cluster: gone, user: nobody}}
current-context: b
`), 0o600)
	ctx := context.Background()
	_, err := Remove(ctx, st, "nope")
	if KindOf(err) != KindUsage || err.Error() != st.Path+`: no context "nope" (it has: a, b, c, d)` {
		t.Errorf("unknown: %v", err)
	}
	for _, tc := range []struct {
		name           string
		removed, kept  []string
		clearedCurrent bool
	}{
		{"a", []string{"context a"}, []string{"cluster c1", "user u1"}, false},
		{"b", []string{"context b", "cluster c1", "user u2"}, nil, true},
		{"d", []string{"context d"}, nil, false},
		{"c", []string{"context c", "cluster c2", "user u1"}, nil, false},
	} {
		rr, err := Remove(ctx, st, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rr.Removed, tc.removed) || !reflect.DeepEqual(rr.Kept, tc.kept) || rr.ClearedCurrent != tc.clearedCurrent || !rr.Written || rr.Context != tc.name || rr.Target != st.Path {
			t.Errorf("remove %s: %+v, want removed %v kept %v cleared %v", tc.name, rr, tc.removed, tc.kept, tc.clearedCurrent)
		}
	}
	_, err = Remove(ctx, st, "a")
	if KindOf(err) != KindUsage || err.Error() != st.Path+`: no context "a" (it has: none)` {
		t.Errorf("empty file: %v", err)
	}
	if _, err := os.Stat(st.Path); err != nil {
		t.Fatal(err)
	}
	if got := joinOrNone([]string{"x"}); got != "x" {
		t.Errorf("one name: %q", got)
	}
}

// TestMarkerOfOtherObjects: a marker held as an object other than
// runtime.Unknown (set by a program, not read from a file) is read through
// its JSON; a marker that is not a Marker's JSON, or a nil one, is none.
func TestMarkerOfOtherObjects(t *testing.T) {
	if m, ok := MarkerOf(map[string]runtimeObject{ExtensionName: &api.Config{Kind: "Config"}}); !ok || m.Source != "" {
		t.Errorf("another object: %+v %v", m, ok)
	}
	obj, err := markerObject(Marker{Source: "/s", SourceContext: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := MarkerOf(map[string]runtimeObject{ExtensionName: obj}); !ok || m.Source != "/s" || m.SourceContext != "x" {
		t.Errorf("round trip: %+v %v", m, ok)
	}
	if _, ok := MarkerOf(map[string]runtimeObject{ExtensionName: nil}); ok {
		t.Error("nil marker read")
	}
	if _, ok := MarkerOf(map[string]runtimeObject{"other": obj}); ok {
		t.Error("another extension read as the marker")
	}
	cfg := api.NewConfig()
	cfg.Contexts["nil"] = nil
	cfg.Contexts["x"] = &api.Context{Extensions: map[string]runtimeObject{ExtensionName: obj}}
	if _, ok := ContextImported(cfg, "nil"); ok {
		t.Error("nil context imported")
	}
	if _, ok := ContextImported(cfg, "missing"); ok {
		t.Error("missing context imported")
	}
	if m, ok := ContextImported(cfg, "x"); !ok || m.Source != "/s" {
		t.Errorf("x: %+v %v", m, ok)
	}
}
