package procedure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// TestRedactKeys: of admin.conf, the client key and a token are secrets;
// the certificate (public) and the server are not, and are left readable.
func TestRedactKeys(t *testing.T) {
	const conf = `apiVersion: v1
clusters:
- cluster:
    server: https://k8s-lab-api.example.com:6443
users:
- name: kubernetes-admin
  user:
    client-certificate-data: Y2VydGlmaWNhdGUtcHVibGljLWFuZC1sb25n
    client-key-data: a2V5LXByaXZhdGUtYW5kLWxvbmctZW5vdWdo
- name: robot
  user:
    token: abcdef.0123456789abcdef
`
	red := &engine.Redactor{}
	(&kubeconfigPhase{redactor: red}).redactKeys([]byte(conf))
	for _, c := range []struct {
		value  string
		secret bool
	}{
		{"a2V5LXByaXZhdGUtYW5kLWxvbmctZW5vdWdo", true},
		{"abcdef.0123456789abcdef", true},
		{"Y2VydGlmaWNhdGUtcHVibGljLWFuZC1sb25n", false},
		{"https://k8s-lab-api.example.com:6443", false},
	} {
		if got := red.Redact(c.value) != c.value; got != c.secret {
			t.Errorf("%s: redacted %v, want %v", c.value, got, c.secret)
		}
	}
	// Without a redactor, nothing happens (and nothing panics).
	(&kubeconfigPhase{}).redactKeys([]byte(conf))
}

// TestDecodeDocsNamesTheDocument: errors name the file and the document's
// place in it.
func TestDecodeDocsNamesTheDocument(t *testing.T) {
	const data = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n"
	objs, err := decodeDocs("calico.yaml", []byte(data), &manifest.AliasBudget{})
	if err == nil || err.Error() != "calico.yaml: document 2 has no kind or name" || objs != nil {
		t.Fatalf("decodeDocs: %v, %d objects", err, len(objs))
	}
	objs, err = decodeDocs("ok.yaml", []byte("---\n{apiVersion: v1, kind: Namespace, metadata: {name: a}}\n---\n"), &manifest.AliasBudget{})
	if err != nil || len(objs) != 1 || objs[0].GetName() != "a" {
		t.Fatalf("decodeDocs: %v, %v", err, objs)
	}
	if _, err = decodeDocs("bad.yaml", []byte("kind: A\nmetadata: {name: a}\n---\n[1, 2\n"), &manifest.AliasBudget{}); err == nil || !strings.HasPrefix(err.Error(), "bad.yaml: document 2: ") {
		t.Errorf("decodeDocs of a broken second document: %v", err)
	}
}

// TestDecodeDocsAliases: aliases are measured before the decoder expands
// them, per document and over every file one phase reads; the error names
// the file, the document and the line. Both sides of each limit.
func TestDecodeDocsAliases(t *testing.T) {
	cm := func(name string, grow int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata:\n  a: &a %s\n  b: *a\n", name, strings.Repeat("y", grow-3))
	}
	var b manifest.AliasBudget
	objs, err := decodeDocs("a.yaml", []byte(cm("a", manifest.MaxAliasExpansionPerDocument)), &b)
	if err != nil || len(objs) != 1 {
		t.Fatalf("at the per-document limit: %v", err)
	}
	_, err = decodeDocs("b.yaml", []byte(cm("b", 10)+"---\n"+cm("c", manifest.MaxAliasExpansionPerDocument+1)), &manifest.AliasBudget{})
	if err == nil || err.Error() != "b.yaml: document 2, line 13: aliases expand this document by more than 1 MiB, the most one document may grow through aliases" {
		t.Fatalf("past the per-document limit: %v", err)
	}
	// One phase's files share a budget: 150 bytes fill it exactly.
	phase := &manifest.AliasBudget{PerDocument: 100, Total: 150}
	if _, err := decodeDocs("1.yaml", []byte(cm("d", 100)), phase); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeDocs("2.yaml", []byte(cm("e", 50)), phase); err != nil {
		t.Fatalf("filling the phase's budget: %v", err)
	}
	if _, err := decodeDocs("3.yaml", []byte(cm("f", 3)), phase); err == nil || !strings.HasPrefix(err.Error(), "3.yaml: document 1, line 6: aliases expand the input by more than 150 bytes") {
		t.Fatalf("past the phase's budget: %v", err)
	}
}

// TestCalicoReadyRequires: calico-windows is waited for only when the
// cluster has a Windows node (a Linux-only cluster never gets it).
func TestCalicoReadyRequires(t *testing.T) {
	linux := []engine.Host{cp1, node1}
	if got := (&calicoReadyPhase{hosts: linux}).required(); !slices.Equal(got, []string{"apiserver", "calico"}) {
		t.Errorf("Linux only: %q", got)
	}
	if got := (&calicoReadyPhase{hosts: append(linux, win1)}).required(); !slices.Equal(got, []string{"apiserver", "calico", "calico-windows"}) {
		t.Errorf("with Windows: %q", got)
	}
}

// TestPollIntervals: the phases that wait on the API server ask every 2
// seconds (Calico's status every 5), not in a busy loop.
func TestPollIntervals(t *testing.T) {
	n := 0
	for _, p := range mustPhases(t, labDeps(t)) {
		var poll, want time.Duration = 0, 2 * time.Second
		switch p := engine.Impl(p).(type) {
		case *nodesReadyPhase:
			poll = p.poll
		case *approveCSRsPhase:
			poll = p.poll
		case *corednsRestartPhase:
			poll = p.poll
		case *calicoReadyPhase:
			poll, want = p.poll, 5*time.Second
		default:
			continue
		}
		n++
		if poll != want {
			t.Errorf("%s polls every %s, want %s", title(p), poll, want)
		}
	}
	if n < 6 {
		t.Errorf("%d phases wait on the API server", n)
	}
}

// TestAddonsDryRunNamesTheSource: the dry run names the file an add-on is
// read from in a bundle, and its URL otherwise.
func TestAddonsDryRunNamesTheSource(t *testing.T) {
	const url = "https://github.com/kubernetes-sigs/metrics-server/releases/download/v0.9.0/components.yaml"
	a := AddonSource{Name: "metrics-server", Version: "v0.9.0", URL: url}
	for _, c := range []struct {
		file, want string
	}{
		{"", url},
		{filepath.Join("bundle", "manifests", "components.yaml"), filepath.Join("bundle", "manifests", "components.yaml")},
	} {
		a.File = c.file
		got, err := (&addonsPhase{addons: []AddonSource{a}}).DryRun(context.Background(), engine.ClusterHost())
		if err != nil || len(got) != 1 || !strings.HasSuffix(got[0], "metrics-server v0.9.0 from "+c.want) {
			t.Errorf("file %q: %q %v", c.file, got, err)
		}
	}
}

// TestAddonFromBundle: an add-on read from the bundle is the file's bytes,
// up to maxManifestBytes; a missing or larger file is an error naming it.
func TestAddonFromBundle(t *testing.T) {
	dir := t.TempDir()
	exact, over := filepath.Join(dir, "exact.yaml"), filepath.Join(dir, "over.yaml")
	if err := os.WriteFile(exact, bytes.Repeat([]byte("a"), maxManifestBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, bytes.Repeat([]byte("a"), maxManifestBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if data, err := (AddonSource{File: exact}).load(ctx); err != nil || len(data) != maxManifestBytes {
		t.Errorf("a manifest of the limit: %d bytes, %v", len(data), err)
	}
	if data, err := (AddonSource{File: over}).load(ctx); err == nil || data != nil || !strings.Contains(err.Error(), over+": larger than") {
		t.Errorf("a manifest over the limit: %d bytes, %v", len(data), err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if data, err := (AddonSource{File: missing}).load(ctx); !errors.Is(err, fs.ErrNotExist) || data != nil || !strings.HasPrefix(err.Error(), "add-on manifest: ") {
		t.Errorf("a missing manifest: %d bytes, %v", len(data), err)
	}
}

// TestRESTConfigFrom: the API phases' configuration is the imported
// context's; a kubeconfig without it, or whose context lacks its cluster
// or user, is an error naming the file and the context.
func TestRESTConfigFrom(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const cluster = "clusters:\n- name: lab\n  cluster: {server: 'https://127.0.0.1:6443'}\n"
	const user = "users:\n- name: lab-admin\n  user: {token: abcdef.0123456789abcdef}\n"
	const context1 = "contexts:\n- name: lab\n  context: {cluster: lab, user: lab-admin}\n"
	for _, c := range []struct {
		name, body, want string
	}{
		{"good", "apiVersion: v1\nkind: Config\n" + cluster + user + context1, ""},
		{"no-context", "apiVersion: v1\nkind: Config\n" + cluster + user, `has no context "lab": run the kubeconfig phase first`},
		{"no-user", "apiVersion: v1\nkind: Config\n" + cluster + context1, `: context "lab" lacks its cluster or user`},
		{"no-cluster", "apiVersion: v1\nkind: Config\n" + user + context1, `: context "lab" lacks its cluster or user`},
	} {
		path := write(c.name, c.body)
		rc, err := RESTConfigFrom(&KubeconfigTarget{Store: &kubeconfig.Store{Path: path}, Name: "lab"})(ctx)
		switch {
		case c.want == "" && (err != nil || rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != "abcdef.0123456789abcdef"):
			t.Errorf("%s: %v %v", c.name, rc, err)
		case c.want != "" && (err == nil || rc != nil || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %s with %q", c.name, err, path, c.want)
		}
	}
	if _, err := RESTConfigFrom(&KubeconfigTarget{Store: &kubeconfig.Store{Path: filepath.Join(dir, "missing")}, Name: "lab"})(ctx); err == nil {
		t.Error("a missing kubeconfig gave a configuration")
	}
}
