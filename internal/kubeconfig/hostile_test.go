//go:build unix

package kubeconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// writePlugin writes, in dir, a program that creates marker when it runs
// and then answers as an exec credential plugin with a token, so client-go
// goes on with the request.
func writePlugin(t testing.TB, dir, marker string) string {
	t.Helper()
	return kt.WriteFile(t, filepath.Join(dir, "plugin.sh"), []byte("#!/bin/sh\ntouch '"+marker+"'\n"+
		`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin"}}'`+"\n"), 0o700)
}

// sourceConf is a kubeconfig for cluster c (its CA embedded) whose user
// entry is the YAML given (indented under "user:").
func sourceConf(c *kt.FakeCluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: kubernetes, cluster: {server: ` + c.URL() + `, certificate-authority-data: ` + base64.StdEncoding.EncodeToString(c.CA.CertPEM) + `}}]
users:
- name: kubernetes-admin
  user:
` + user + `
contexts: [{name: kubernetes-admin@kubernetes, context: {cluster: kubernetes, user: kubernetes-admin}}]
current-context: kubernetes-admin@kubernetes
`)
}

func execUser(command string) string {
	return `    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ` + command + `
      args: [--cluster, lab]
      env: [{name: PLUGIN_SECRET, value: do-not-print-me}]
      interactiveMode: Never`
}

// TestExecPluginNeverRuns: an exec credential plugin (or an auth-provider
// with a cmd-path) in the source never runs during an import, whatever the
// flags; it is refused, naming what it would run, unless --allow-exec, and
// --verify refuses it even then. The control at the end uses the stored
// context through client-go, which does run it: the marker appears, so the
// checks above are able to fail.
func TestExecPluginNeverRuns(t *testing.T) {
	c := kt.StartFakeCluster(t, "exec")
	dir := t.TempDir()
	marker := filepath.Join(dir, "plugin-ran")
	script := writePlugin(t, dir, marker)
	execConf := kt.WriteFile(t, filepath.Join(dir, "exec.conf"), sourceConf(c, execUser(script)), 0o600)
	gcpConf := kt.WriteFile(t, filepath.Join(dir, "gcp.conf"), sourceConf(c, `    auth-provider:
      name: gcp
      config: {cmd-path: `+script+`, cmd-args: "config config-helper", access-token: secret-access-token}`), 0o600)

	tests := []struct {
		name      string
		src       string
		stdin     bool
		verify    bool
		allowExec bool
		kind      Kind // 0 with ok
		ok        bool
		want      []string
	}{
		{name: "exec from a file", src: execConf, kind: KindInvalid, want: []string{"exec credential plugin", `"` + script + `"`, `"--cluster" "lab"`, "PLUGIN_SECRET", "--allow-exec"}},
		{name: "exec from stdin", src: execConf, stdin: true, kind: KindInvalid, want: []string{"<stdin>", script}},
		{name: "exec with --verify", src: execConf, verify: true, kind: KindInvalid, want: []string{script}},
		{name: "exec, --allow-exec, --verify", src: execConf, verify: true, allowExec: true, kind: KindVerify, want: []string{"never runs a plugin", script}},
		{name: "auth-provider", src: gcpConf, verify: true, kind: KindInvalid, want: []string{`auth-provider "gcp"`, script, "config config-helper"}},
		{name: "auth-provider, --allow-exec, --verify", src: gcpConf, verify: true, allowExec: true, kind: KindVerify, want: []string{"never runs a plugin"}},
		{name: "exec, --allow-exec", src: execConf, allowExec: true, ok: true},
	}
	var stored *Store
	parent := t
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(parent) // outlives the subtest: the control below uses it
			o := ImportOptions{Source: tc.src, Name: "lab", Verify: tc.verify, AllowExec: tc.allowExec, VerifyTimeout: 10 * time.Second}
			if tc.stdin {
				o.Source, o.SourceData = "-", mustRead(t, tc.src)
			}
			res, err := Import(context.Background(), st, o)
			if _, statErr := os.Stat(marker); statErr == nil {
				t.Fatal("the import ran the plugin")
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), script) {
					t.Errorf("a stored plugin is not warned about: %q", res.Warnings)
				}
				stored = st
				return
			}
			if err == nil {
				t.Fatal("imported")
			}
			if KindOf(err) != tc.kind {
				t.Errorf("kind %v, want %v: %v", KindOf(err), tc.kind, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q: %v", w, err)
				}
			}
			assertNoSecrets(t, err.Error(), []byte("do-not-print-me"), []byte("secret-access-token"))
			if _, statErr := os.Stat(st.Path); !errors.Is(statErr, os.ErrNotExist) {
				t.Error("a refused import wrote the target")
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the plugin ran")
	}
	if stored == nil {
		t.Fatal("the --allow-exec import did not happen")
	}
	// Control: client-go, using the stored context, runs the plugin.
	rc := contextConfig(t, []string{stored.Path}, "lab")
	rc.Timeout = 20 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("using the stored context: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: client-go did not run the stored plugin either, so this test cannot tell: %v", err)
	}
}

// TestFileReferencesStayInside: file references are read only inside the
// source's directory, from a file source; everything else is refused
// before anything is sent, and the cluster's server receives no request.
// The accepted cases on the other side of each limit (a link that stays
// inside, a file of exactly 1 MiB) and a control that reaches the server
// show that the refusals and the request counter are able to fail.
func TestFileReferencesStayInside(t *testing.T) {
	c := kt.StartFakeCluster(t, "files")
	base := t.TempDir()
	secret := "OUTSIDE-SECRET-5f0c"
	outside := kt.WriteFile(t, filepath.Join(base, "outside", "secret"), []byte(secret), 0o600)
	src := filepath.Join(base, "src")
	kt.WriteFile(t, filepath.Join(src, "pki", "token"), []byte("inside-token"), 0o600)
	kt.WriteFile(t, filepath.Join(src, "pki", "ca.crt"), c.CA.CertPEM, 0o600)
	kt.WriteFile(t, filepath.Join(src, "big"), bytes.Repeat([]byte("a"), maxRefSize+1), 0o600)
	kt.WriteFile(t, filepath.Join(src, "exact"), bytes.Repeat([]byte("a"), maxRefSize), 0o600)
	for link, to := range map[string]string{"out-link": "../outside/secret", "in-link": "pki/token", "dir-link": "../outside"} {
		if err := os.Symlink(to, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, user string
		ok         bool
		want       string
	}{
		{"absolute path", "tokenFile: " + outside, false, "absolute path"},
		{"dot-dot", "tokenFile: ../outside/secret", false, `".." leads out`},
		{"dot-dot inside a path", "tokenFile: pki/../../outside/secret", false, `".."`},
		{"symlink out", "tokenFile: out-link", false, "symbolic link that leads out"},
		{"through a linked directory", "tokenFile: dir-link/secret", false, "symbolic link that leads out"},
		{"FIFO", "tokenFile: fifo", false, "a FIFO"},
		{"directory", "tokenFile: pki", false, "a directory"},
		{"over 1 MiB", "tokenFile: big", false, "1048577 bytes"},
		{"client-key outside", "{client-certificate: pki/ca.crt, client-key: ../outside/secret}", false, `client-key "../outside/secret"`},
		{"CA outside", "token: t", false, ""}, // replaced below: the cluster's certificate-authority
		{"symlink inside", "tokenFile: in-link", true, ""},
		{"exactly 1 MiB", "tokenFile: exact", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := sourceConf(c, "    "+tc.user)
			if tc.name == "CA outside" {
				conf = bytes.Replace(conf, []byte("certificate-authority-data: "+base64.StdEncoding.EncodeToString(c.CA.CertPEM)), []byte("certificate-authority: ../outside/secret"), 1)
				tc.want = `certificate-authority "../outside/secret"`
			}
			path := kt.WriteFile(t, filepath.Join(src, "admin.conf"), conf, 0o600)
			before := c.Requests.Load()
			st := newStore(t)
			done := make(chan error, 1)
			go func() {
				_, err := importFile(t, st, path, "lab", func(o *ImportOptions) { o.Verify = true; o.VerifyTimeout = 10 * time.Second })
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the import hangs")
			}
			if tc.ok {
				// The token is not one the fake server knows: --verify
				// fails there, after reaching it.
				if KindOf(err) != KindVerify || c.Requests.Load() == before {
					t.Fatalf("want a verify failure at the server, got %v (%d requests)", err, c.Requests.Load()-before)
				}
				return
			}
			if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("want a refusal saying %q, got %v", tc.want, err)
			}
			if n := c.Requests.Load() - before; n != 0 {
				t.Errorf("the server received %d requests", n)
			}
			if strings.Contains(err.Error(), secret) {
				t.Error("the error holds the outside file's content")
			}
			if _, statErr := os.Stat(st.Path); !errors.Is(statErr, os.ErrNotExist) {
				t.Error("a refused import wrote the target")
			}
		})
	}

	// From standard input, no file is ever read: a relative tokenFile
	// that exists in the current directory (a .vault-token, say) is refused.
	t.Run("stdin", func(t *testing.T) {
		t.Chdir(src)
		kt.WriteFile(t, filepath.Join(src, ".vault-token"), []byte(secret), 0o600)
		before := c.Requests.Load()
		st := newStore(t)
		_, err := Import(context.Background(), st, ImportOptions{Source: "-", SourceData: sourceConf(c, "    tokenFile: .vault-token"), Name: "lab", Verify: true})
		if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), "standard input cannot refer to files") {
			t.Fatalf("got %v", err)
		}
		if n := c.Requests.Load() - before; n != 0 {
			t.Errorf("the server received %d requests", n)
		}
	})
}

// TestImportWarnings: proxy-url (password masked), basic auth and
// insecure-skip-tls-verify are named; a plain admin.conf has no warning.
func TestImportWarnings(t *testing.T) {
	c := kt.StartFakeCluster(t, "warn")
	dir := t.TempDir()
	plain := kt.WriteFile(t, filepath.Join(dir, "plain.conf"), c.AdminConf(), 0o600)
	res, err := importFile(t, newStore(t), plain, "plain", nil)
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("plain admin.conf: %v %q", err, res.Warnings)
	}
	conf := string(sourceConf(c, "    {username: admin, password: hunter2-password}"))
	conf = strings.Replace(conf, "certificate-authority-data:", "proxy-url: 'http://proxyuser:proxy-pass-77@127.0.0.1:3128', insecure-skip-tls-verify: true, certificate-authority-data:", 1)
	warn := kt.WriteFile(t, filepath.Join(dir, "warn.conf"), []byte(conf), 0o600)
	res, err = importFile(t, newStore(t), warn, "warn", nil)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, w := range []string{"insecure-skip-tls-verify", "proxy-url http://proxyuser:xxxxx@127.0.0.1:3128", `basic auth (username "admin"`} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	for _, s := range []string{"proxy-pass-77", "hunter2-password"} {
		if strings.Contains(all, s) {
			t.Errorf("warnings show a password:\n%s", all)
		}
	}
}

// FuzzParseSource: whatever the bytes, parsing never panics or hangs, every
// error names the source, and an accepted source holds no plugin, no file
// reference and nothing read from outside its directory (a file outside,
// reached by an absolute path, "..", or a symbolic link, holds a marker that
// must never appear). From standard input nothing at all is read.
func FuzzParseSource(f *testing.F) {
	ca := kt.NewCA(f, "kubernetes")
	cert, key := ca.Issue(f, "kubernetes-admin", nil)
	base := f.TempDir()
	const outsideMark, insideMark = "OUTSIDE-MARK-91ad", "INSIDE-MARK-3c2e"
	kt.WriteFile(f, filepath.Join(base, "outside", "token"), []byte(outsideMark), 0o600)
	kt.WriteFile(f, filepath.Join(base, "src", "token"), []byte(insideMark), 0o600)
	kt.WriteFile(f, filepath.Join(base, "src", "ca.crt"), ca.CertPEM, 0o600)
	kt.WriteFile(f, filepath.Join(base, "src", "admin.crt"), cert, 0o600)
	kt.WriteFile(f, filepath.Join(base, "src", "admin.key"), key, 0o600)
	if err := os.Symlink("../outside/token", filepath.Join(base, "src", "link")); err != nil {
		f.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(base, "src", "fifo"), 0o600); err != nil {
		f.Fatal(err)
	}
	root := openRoot(f, filepath.Join(base, "src"))
	f.Add(kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key))
	f.Add([]byte("apiVersion: v1\nkind: Config\n"))
	for _, ref := range []string{"token", "../outside/token", "link", "fifo", filepath.Join(base, "outside", "token"), "src/../token", "."} {
		f.Add([]byte("contexts: [{name: a, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://x', certificate-authority: ca.crt}}]\nusers: [{name: u, user: {tokenFile: '" + ref + "'}}]\ncurrent-context: a\n"))
	}
	f.Add([]byte("contexts: [{name: a, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://x'}}]\nusers: [{name: u, user: {client-certificate: admin.crt, client-key: link}}]\ncurrent-context: a\n"))
	f.Add([]byte("contexts: [{name: a, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://x'}}]\nusers: [{name: u, user: {exec: {command: /bin/true, apiVersion: client.authentication.k8s.io/v1}}}]\ncurrent-context: a\n"))
	f.Add([]byte("contexts: [{name: a, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://x'}}]\nusers: [{name: u, user: {auth-provider: {name: gcp, config: {cmd-path: /bin/true}}}}]\ncurrent-context: a\n"))
	f.Add([]byte("users: [{name: u}, {name: u}]"))
	f.Add([]byte("{\"clusters\": [{\"name\": \"x\", \"cluster\": {\"extensions\": [{\"name\": \"e\", \"extension\": null}]}}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, stdin := range []bool{false, true} {
			name, opts := "fuzz.conf", SourceOptions{Dir: root}
			if stdin {
				name, opts = "<stdin>", SourceOptions{}
			}
			src, err := ParseSource(name, data, opts)
			if err != nil {
				if !strings.HasPrefix(err.Error(), name) {
					t.Fatalf("error does not name the source: %v", err)
				}
				if strings.Contains(err.Error(), outsideMark) {
					t.Fatalf("error holds a file from outside: %v", err)
				}
				continue
			}
			if src.Cluster == nil || src.User == nil || src.Cluster.Server == "" {
				t.Fatalf("accepted a source without cluster, user or server")
			}
			if src.User.Exec != nil || src.User.AuthProvider != nil {
				t.Fatalf("accepted a plugin without AllowExec")
			}
			if refs := fileRefs(src.Cluster, src.User); len(refs) > 0 {
				t.Fatalf("file references left: %v", refs)
			}
			out, err := clientcmd.Write(*sourceAsConfig(src))
			if err != nil {
				t.Fatalf("cannot write the accepted source: %v", err)
			}
			decoded := string(out) + src.User.Token + string(src.User.ClientKeyData) + string(src.User.ClientCertificateData) + string(src.Cluster.CertificateAuthorityData)
			if strings.Contains(decoded, outsideMark) && !bytes.Contains(data, []byte(outsideMark)) {
				t.Fatalf("read a file from outside the source's directory")
			}
			if stdin && strings.Contains(decoded, insideMark) && !bytes.Contains(data, []byte(insideMark)) {
				t.Fatalf("read a file for a source from standard input")
			}
			_ = ClusterIdentity(src.Cluster)
			_ = UserIdentity(src.User)
			_ = DescribeCluster(src.Cluster)
			_ = DescribeUser(src.User)
		}
	})
}

// sourceAsConfig puts a parsed source in a kubeconfig of its own.
func sourceAsConfig(src *Source) *api.Config {
	cfg := api.NewConfig()
	cfg.Clusters["c"], cfg.AuthInfos["u"] = src.Cluster, src.User
	cfg.Contexts["x"] = &api.Context{Cluster: "c", AuthInfo: "u"}
	return cfg
}
