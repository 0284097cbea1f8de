package kubeconfig

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

func TestParseSourceErrors(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	other := kt.NewCA(t, "other")
	_, otherKey := other.Issue(t, "someone", nil)
	b64 := base64.StdEncoding.EncodeToString
	good := string(kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key))
	user := "client-certificate-data: " + b64(cert) + "\n    client-key-data: " + b64(key)

	tests := []struct {
		name, data, sourceContext string
		kind                      Kind
		want                      string
	}{
		{"empty", "", "", KindInvalid, "empty file"},
		{"not yaml", "\x00\x01{{{", "", KindInvalid, "not a valid kubeconfig"},
		{"wrong type", "clusters: 12\n", "", KindInvalid, "not a valid kubeconfig"},
		{"no contexts", "apiVersion: v1\nkind: Config\n", "", KindInvalid, "has no contexts"},
		{"several contexts, no current", "apiVersion: v1\nkind: Config\ncontexts: [{name: a, context: {cluster: c}}, {name: b, context: {cluster: c}}]\n", "", KindUsage, "--source-context (a, b)"},
		{"unknown --source-context", good, "nope", KindUsage, `no context "nope"`},
		{"current context missing", strings.Replace(good, "current-context: kubernetes-admin@kubernetes", "current-context: gone", 1), "", KindInvalid, `current-context "gone" is not defined`},
		{"cluster missing", strings.Replace(good, "    cluster: kubernetes\n", "    cluster: elsewhere\n", 1), "", KindInvalid, `refers to cluster "elsewhere"`},
		{"user missing", strings.Replace(good, "    user: kubernetes-admin\n", "    user: nobody\n", 1), "", KindInvalid, `refers to user "nobody"`},
		{"http server", strings.Replace(good, "https://10.0.0.1:6443", "http://10.0.0.1:8080", 1), "", KindInvalid, "is not https"},
		{"no server", strings.Replace(good, "    server: https://10.0.0.1:6443\n", "", 1), "", KindInvalid, "no server"},
		{"CA not PEM", strings.Replace(good, b64(ca.CertPEM), b64([]byte("hello")), 1), "", KindInvalid, "certificate-authority-data"},
		{"key of another certificate", strings.Replace(good, b64(key), b64(otherKey), 1), "", KindInvalid, "do not form a pair"},
		{"certificate without key", strings.Replace(good, "    client-key-data: "+b64(key)+"\n", "", 1), "", KindInvalid, "without a client key"},
		{"no credentials", strings.Replace(good, "    "+user+"\n", "    {}\n", 1), "", KindInvalid, "no credentials"},
		{"bad base64", strings.Replace(good, b64(key), "\"not*base64\"", 1), "", KindInvalid, "not a valid kubeconfig"},
		// client-go's message for this dumps every user, keys included.
		{"duplicate user", good + "- name: kubernetes-admin\n  user:\n    " + user + "\n", "", KindInvalid, `duplicate name "kubernetes-admin"`},
		// The namespace is kept as it is and shown by list: a DNS label,
		// never a terminal escape.
		{"namespace with escapes", withNamespace(good, `"a\e[1A\e[2K\e]52;c;ZXZpbA==\a"`), "", KindInvalid, `context "kubernetes-admin@kubernetes": namespace "a\x1b[1A\x1b[2K\x1b]52;c;ZXZpbA==\a" is not a namespace name`},
		{"namespace upper case", withNamespace(good, "Team-B"), "", KindInvalid, `namespace "Team-B" is not a namespace name: a lowercase RFC 1123 label`},
		{"namespace of 64", withNamespace(good, strings.Repeat("a", 64)), "", KindInvalid, "must be no more than 63 characters"},
		{"namespace with a dot", withNamespace(good, "team.b"), "", KindInvalid, `namespace "team.b"`},
		{"missing CA file", strings.Replace(good, "certificate-authority-data: "+b64(ca.CertPEM), "certificate-authority: pki/nope.crt", 1), "", KindIO, "certificate-authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSource("src/admin.conf", []byte(tc.data), SourceOptions{Dir: openRoot(t, t.TempDir()), Context: tc.sourceContext})
			if err == nil {
				t.Fatal("no error")
			}
			if KindOf(err) != tc.kind {
				t.Errorf("kind %v, want %v (%v)", KindOf(err), tc.kind, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "src/admin.conf") {
				t.Errorf("error does not start with the file name: %s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error lacks %q: %s", tc.want, msg)
			}
			assertNoSecrets(t, msg, key, otherKey)
		})
	}
}

// withNamespace gives the context of an admin.conf the namespace ns (YAML).
func withNamespace(conf, ns string) string {
	return strings.Replace(conf, "    cluster: kubernetes\n", "    cluster: kubernetes\n    namespace: "+ns+"\n", 1)
}

// TestParseSourceNamespace: the near misses of the namespace check pass.
func TestParseSourceNamespace(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	good := string(kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key))
	for _, ns := range []string{"team-b", strings.Repeat("a", 63), "0a", "kube-system"} {
		src, err := ParseSource("admin.conf", []byte(withNamespace(good, ns)), SourceOptions{})
		if err != nil {
			t.Errorf("namespace %q: %v", ns, err)
		} else if src.Namespace != ns {
			t.Errorf("namespace %q kept as %q", ns, src.Namespace)
		}
	}
}

func TestParseSourcePicksContext(t *testing.T) {
	a, b := kt.NewCA(t, "a"), kt.NewCA(t, "b")
	ac, ak := a.Issue(t, "alice", nil)
	bc, bk := b.Issue(t, "bob", nil)
	b64 := base64.StdEncoding.EncodeToString
	data := `apiVersion: v1
kind: Config
clusters:
- {name: ca, cluster: {server: "https://a:6443", certificate-authority-data: ` + b64(a.CertPEM) + `}}
- {name: cb, cluster: {server: "https://b:6443", certificate-authority-data: ` + b64(b.CertPEM) + `}}
users:
- {name: ua, user: {client-certificate-data: ` + b64(ac) + `, client-key-data: ` + b64(ak) + `}}
- {name: ub, user: {client-certificate-data: ` + b64(bc) + `, client-key-data: ` + b64(bk) + `}}
contexts:
- {name: xa, context: {cluster: ca, user: ua}}
- {name: xb, context: {cluster: cb, user: ub, namespace: team-b}}
current-context: xa
`
	for _, tc := range []struct{ pick, server, ns string }{{"", "https://a:6443", ""}, {"xb", "https://b:6443", "team-b"}} {
		src, err := ParseSource("multi.conf", []byte(data), SourceOptions{Context: tc.pick})
		if err != nil {
			t.Fatal(err)
		}
		if src.Cluster.Server != tc.server || src.Namespace != tc.ns {
			t.Errorf("--source-context %q: server %s namespace %q", tc.pick, src.Cluster.Server, src.Namespace)
		}
	}
}

func TestTargetPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	real := filepath.Join(dir, "real-config")
	link := filepath.Join(dir, "link")
	if err := os.Symlink("real-config", link); err != nil {
		t.Fatal(err)
	}
	sep := string(filepath.ListSeparator)
	tests := []struct{ name, explicit, env, want string }{
		{"flag wins", filepath.Join(dir, "x"), filepath.Join(dir, "y"), filepath.Join(dir, "x")},
		{"first of KUBECONFIG", "", filepath.Join(dir, "a") + sep + filepath.Join(dir, "b"), filepath.Join(dir, "a")},
		{"empty entries skipped", "", sep + filepath.Join(dir, "b"), filepath.Join(dir, "b")},
		{"home default", "", "", filepath.Join(home, ".kube", "config")},
		{"symlink followed", link, "", real},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TargetPath(tc.explicit, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"lab": true, "prod-eu.1": true, "a": true, "A_b": true,
		"": false, "-lab": false, "lab-": false, "la b": false, "lab/x": false, "ла": false,
		strings.Repeat("a", 63): true, strings.Repeat("a", 64): false,
	} {
		if err := ValidateName(name); (err == nil) != ok {
			t.Errorf("%q: err=%v, want ok=%v", name, err, ok)
		}
	}
}

// FuzzImportIntoTarget: whatever the existing kubeconfig holds, an import
// never panics, and either succeeds or fails naming the target with the
// file unchanged.
func FuzzImportIntoTarget(f *testing.F) {
	ca := kt.NewCA(f, "kubernetes")
	cert, key := ca.Issue(f, "kubernetes-admin", nil)
	conf := kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key)
	src := kt.WriteFile(f, filepath.Join(f.TempDir(), "admin.conf"), conf, 0o600)
	f.Add(conf)
	f.Add([]byte(""))
	f.Add([]byte("contexts: [{name: lab}]\nclusters: [{name: lab}]\nusers: [{name: lab-admin}]\n"))
	f.Add([]byte("contexts: [{name: x, context: {cluster: lab, user: lab-admin}}]\n"))
	f.Add([]byte("clusters: [{name: lab, cluster: {server: 'https://10.0.0.1:6443', extensions: [{name: hybridctl.dev/imported, extension: {importedAt: 3}}]}}]\n"))
	f.Fuzz(func(t *testing.T, target []byte) {
		st := &Store{Path: filepath.Join(t.TempDir(), "config")}
		if err := os.WriteFile(st.Path, target, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Import(context.Background(), st, ImportOptions{Source: src, Name: "lab"})
		if err != nil {
			if KindOf(err) == KindInvalid && !strings.Contains(err.Error(), st.Path) {
				t.Fatalf("error does not name the target: %v", err)
			}
			if b, _ := os.ReadFile(st.Path); string(b) != string(target) {
				t.Fatal("failed import changed the target")
			}
			return
		}
		if _, err := List(context.Background(), st); err != nil {
			t.Fatalf("list after a successful import: %v", err)
		}
		if _, err := Remove(context.Background(), st, "lab"); err != nil {
			t.Fatalf("remove after a successful import: %v", err)
		}
	})
}

// openRoot opens dir as the source directory of a test.
func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
