package kubeconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// The edges of ParseSource and its helpers, each limit on both sides and
// each message exact (written for the mutants of source.go that survived
// hack/mutation.sh; docs/testing.md).

// TestSourceSizeLimit: a source of exactly maxSourceSize bytes is read
// (here: all blanks, so it is then refused as empty), one byte more is
// refused as too large, with the size in the message.
func TestSourceSizeLimit(t *testing.T) {
	_, err := ParseSource("big.conf", bytes.Repeat([]byte(" "), maxSourceSize), SourceOptions{})
	if KindOf(err) != KindInvalid || err.Error() != "big.conf: empty file, not a kubeconfig" {
		t.Errorf("exactly %d bytes: %v", maxSourceSize, err)
	}
	_, err = ParseSource("big.conf", bytes.Repeat([]byte(" "), maxSourceSize+1), SourceOptions{})
	if KindOf(err) != KindInvalid || err.Error() != "big.conf: 16777217 bytes is too large for a kubeconfig" {
		t.Errorf("%d bytes: %v", maxSourceSize+1, err)
	}
}

// TestRedactLoadError: the dump after " in list: " goes wherever it
// starts, and a message is cut after exactly 300 bytes.
func TestRedactLoadError(t *testing.T) {
	long := strings.Repeat("x", 300)
	for in, want := range map[string]string{
		`duplicate name "u" in list: [{u {...key...}}]`: `duplicate name "u"`,
		" in list: [{u {...key...}}]":                   "",
		"no list here":                                  "no list here",
		long:                                            long,
		long + "y":                                      long + "…",
		long + "y in list: secret":                      long + "…",
	} {
		if got := redactLoadError(in); got != want {
			t.Errorf("redactLoadError(%.40q...) = %.40q..., want %.40q... (len %d, want %d)", in, got, want, len(got), len(want))
		}
	}
}

// TestDescribePluginExact: each part of the description appears only when
// the plugin has it.
func TestDescribePluginExact(t *testing.T) {
	tests := []struct {
		name string
		u    api.AuthInfo
		want string
	}{
		{"none", api.AuthInfo{Token: "t"}, ""},
		{"exec, command only", api.AuthInfo{Exec: &api.ExecConfig{Command: "kubelogin"}},
			`an exec credential plugin that would run "kubelogin"`},
		{"exec, one argument", api.AuthInfo{Exec: &api.ExecConfig{Command: "kubelogin", Args: []string{"get-token"}}},
			`an exec credential plugin that would run "kubelogin" with arguments "get-token"`},
		{"exec, environment only", api.AuthInfo{Exec: &api.ExecConfig{Command: "kubelogin", Env: []api.ExecEnvVar{{Name: "A", Value: "secret-a"}}}},
			`an exec credential plugin that would run "kubelogin" and environment variables A`},
		{"exec, arguments and two variables", api.AuthInfo{Exec: &api.ExecConfig{Command: "/bin/k", Args: []string{"a b", `c"`}, Env: []api.ExecEnvVar{{Name: "A", Value: "x"}, {Name: "B", Value: "y"}}}},
			`an exec credential plugin that would run "/bin/k" with arguments "a b" "c\"" and environment variables A, B`},
		{"auth-provider without cmd-path", api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "oidc", Config: map[string]string{"cmd-args": "ignored", "id-token": "secret"}}},
			`the auth-provider "oidc"`},
		{"auth-provider, cmd-path only", api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "gcp", Config: map[string]string{"cmd-path": "/bin/gcloud"}}},
			`the auth-provider "gcp", which would run "/bin/gcloud"`},
		{"auth-provider, cmd-path and cmd-args", api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "gcp", Config: map[string]string{"cmd-path": "/bin/gcloud", "cmd-args": "config config-helper"}}},
			`the auth-provider "gcp", which would run "/bin/gcloud" with arguments "config config-helper"`},
		{"both", api.AuthInfo{Exec: &api.ExecConfig{Command: "k"}, AuthProvider: &api.AuthProviderConfig{Name: "oidc"}},
			`an exec credential plugin that would run "k" and the auth-provider "oidc"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DescribePlugin(&tc.u); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// conf is a one-context kubeconfig with the given cluster and user
// entries (flow-style YAML mappings).
func conf(cluster, user string) []byte {
	return []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: " + cluster + "}]\nusers: [{name: u, user: " + user + "}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
}

// TestExecCommandPaths: with --allow-exec, an exec command with a slash
// that is not absolute is made absolute against the source's directory
// (client-go resolves it against the file that names it); a bare command
// name (looked up in $PATH) and an absolute path are kept as they are. From
// standard input a relative path is refused, a bare name is not.
func TestExecCommandPaths(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	cluster := "{server: 'https://10.0.0.1:6443'}"
	for _, tc := range []struct {
		command string
		stdin   bool
		want    string // the stored command; "" for an error
		err     string
	}{
		{command: "./bin/plugin", want: filepath.Join(dir, "bin", "plugin")},
		{command: "bin/plugin", want: filepath.Join(dir, "bin", "plugin")},
		{command: `bin\plugin`, want: filepath.Join(dir, `bin\plugin`)},
		{command: "kubectl-oidc_login", want: "kubectl-oidc_login"},
		{command: "/usr/local/bin/plugin", want: "/usr/local/bin/plugin"},
		{command: "kubectl-oidc_login", stdin: true, want: "kubectl-oidc_login"},
		{command: "/usr/local/bin/plugin", stdin: true, want: "/usr/local/bin/plugin"},
		{command: "./bin/plugin", stdin: true, err: `<stdin>: user "u": the exec plugin's command "./bin/plugin" is a relative path, which means nothing for standard input; give an absolute path`},
	} {
		name, opts := "src.conf", SourceOptions{Dir: root, AllowExec: true}
		if tc.stdin {
			name, opts = "<stdin>", SourceOptions{AllowExec: true}
		}
		user := "{exec: {apiVersion: client.authentication.k8s.io/v1, command: '" + tc.command + "'}}"
		src, err := ParseSource(name, conf(cluster, user), opts)
		if tc.err != "" {
			if KindOf(err) != KindInvalid || err.Error() != tc.err {
				t.Errorf("%s from %s: got %v, want %s", tc.command, name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s from %s: %v", tc.command, name, err)
			continue
		}
		if got := src.User.Exec.Command; got != tc.want {
			t.Errorf("%s from %s: stored %q, want %q", tc.command, name, got, tc.want)
		}
	}
	// Without --allow-exec the same plugin is refused, whatever its path.
	_, err := ParseSource("src.conf", conf(cluster, "{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bin/plugin}}"), SourceOptions{Dir: root})
	if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), `refusing an exec credential plugin that would run "./bin/plugin"`) {
		t.Errorf("without --allow-exec: %v", err)
	}
}

// TestInlineDataWins: a cluster or user with both the data and a file
// reference keeps the data (as client-go does), the reference is dropped,
// and the file is still checked: a reference that leads out is refused
// even though its content would not be used.
func TestInlineDataWins(t *testing.T) {
	dir := t.TempDir()
	a, b := kt.NewCA(t, "a"), kt.NewCA(t, "b")
	cert, key := a.Issue(t, "alice", nil)
	bCert, bKey := b.Issue(t, "bob", nil)
	kt.WriteFile(t, filepath.Join(dir, "b.crt"), b.CertPEM, 0o600)
	kt.WriteFile(t, filepath.Join(dir, "bob.crt"), bCert, 0o600)
	kt.WriteFile(t, filepath.Join(dir, "bob.key"), bKey, 0o600)
	kt.WriteFile(t, filepath.Join(dir, "token"), []byte("  from-file\n"), 0o600)
	b64 := base64.StdEncoding.EncodeToString
	root := openRoot(t, dir)

	data := conf("{server: 'https://10.0.0.1:6443', certificate-authority-data: "+b64(a.CertPEM)+", certificate-authority: b.crt}",
		"{client-certificate-data: "+b64(cert)+", client-certificate: bob.crt, client-key-data: "+b64(key)+", client-key: bob.key, token: explicit, tokenFile: token}")
	src, err := ParseSource("src.conf", data, SourceOptions{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	c, u := src.Cluster, src.User
	if !bytes.Equal(c.CertificateAuthorityData, a.CertPEM) || c.CertificateAuthority != "" {
		t.Errorf("cluster CA: data from file b.crt %v, reference %q", bytes.Equal(c.CertificateAuthorityData, b.CertPEM), c.CertificateAuthority)
	}
	if !bytes.Equal(u.ClientCertificateData, cert) || !bytes.Equal(u.ClientKeyData, key) || u.ClientCertificate != "" || u.ClientKey != "" {
		t.Errorf("user certificate and key: not the embedded ones, or references left (%q, %q)", u.ClientCertificate, u.ClientKey)
	}
	if u.Token != "explicit" || u.TokenFile != "" {
		t.Errorf("token %q, tokenFile %q; want the explicit token and no reference", u.Token, u.TokenFile)
	}

	// Only a tokenFile: its content, trimmed.
	src, err = ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443'}", "{tokenFile: token}"), SourceOptions{Dir: root})
	if err != nil || src.User.Token != "from-file" {
		t.Fatalf("tokenFile only: %+v %v", src, err)
	}

	// The data wins, but the reference is still checked.
	_, err = ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443', certificate-authority-data: "+b64(a.CertPEM)+", certificate-authority: ../b.crt}", "{token: t}"), SourceOptions{Dir: root})
	if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), `certificate-authority "../b.crt": refused: ".." leads out`) {
		t.Errorf("data with a reference that leads out: %v", err)
	}
}

// TestRefSizeExact: a referenced file of exactly maxRefSize bytes is read
// whole; the limit+1 read is what tells it from a larger one.
func TestRefSizeExact(t *testing.T) {
	dir := t.TempDir()
	tok := bytes.Repeat([]byte("a"), maxRefSize)
	kt.WriteFile(t, filepath.Join(dir, "exact"), tok, 0o600)
	kt.WriteFile(t, filepath.Join(dir, "over"), append(tok, 'a'), 0o600)
	root := openRoot(t, dir)
	src, err := ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443'}", "{tokenFile: exact}"), SourceOptions{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.User.Token) != maxRefSize {
		t.Errorf("token of %d bytes, want %d", len(src.User.Token), maxRefSize)
	}
	_, err = ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443'}", "{tokenFile: over}"), SourceOptions{Dir: root})
	if KindOf(err) != KindInvalid || err.Error() != `src.conf: user "u": tokenFile "over": refused: 1048577 bytes; a certificate, key or token file is at most 1048576` {
		t.Errorf("one byte over: %v", err)
	}
}

// TestReadRefTypes: a socket is named as one; a reference that is absent
// is an I/O error naming it.
func TestReadRefTypes(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	root := openRoot(t, dir)
	_, err = ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443'}", "{tokenFile: sock}"), SourceOptions{Dir: root})
	if KindOf(err) != KindInvalid || err.Error() != `src.conf: user "u": tokenFile "sock": refused: not a regular file (a socket)` {
		t.Errorf("socket: %v", err)
	}
	_, err = ParseSource("src.conf", conf("{server: 'https://10.0.0.1:6443'}", "{tokenFile: absent}"), SourceOptions{Dir: root})
	if KindOf(err) != KindIO || !strings.HasPrefix(err.Error(), `src.conf: user "u": tokenFile "absent": `) || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("absent: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestCheckClusterAndUserEdges: a cluster without CA data is accepted (the
// system CAs are used); the server must be an https URL with a host; a
// bundle's bad certificate is named by its position; a key needs its
// certificate.
func TestCheckClusterAndUserEdges(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "admin", nil)
	b64 := base64.StdEncoding.EncodeToString
	bad := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	keyBlock := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("ignored")})

	src, err := ParseSource("s", conf("{server: 'https://10.0.0.1:6443'}", "{token: t}"), SourceOptions{})
	if err != nil || len(src.Cluster.CertificateAuthorityData) != 0 {
		t.Fatalf("no CA data: %+v %v", src, err)
	}
	// A bundle with another block first and two certificates is accepted.
	bundle := append(append(append([]byte{}, keyBlock...), ca.CertPEM...), ca.CertPEM...)
	if _, err := ParseSource("s", conf("{server: 'https://10.0.0.1:6443', certificate-authority-data: "+b64(bundle)+"}", "{token: t}"), SourceOptions{}); err != nil {
		t.Errorf("bundle: %v", err)
	}
	for _, tc := range []struct{ name, cluster, user, want string }{
		{"no host", "{server: 'https://'}", "{token: t}", `s: cluster "c": server "https://" is not a URL`},
		{"no scheme", "{server: '10.0.0.1:6443'}", "{token: t}", `s: cluster "c": server "10.0.0.1:6443" is not a URL`},
		{"bad first certificate", "{server: 'https://h', certificate-authority-data: " + b64(append(append([]byte{}, bad...), ca.CertPEM...)) + "}", "{token: t}", `s: cluster "c": certificate-authority-data: certificate 1: `},
		{"bad second certificate", "{server: 'https://h', certificate-authority-data: " + b64(append(append([]byte{}, ca.CertPEM...), bad...)) + "}", "{token: t}", `s: cluster "c": certificate-authority-data: certificate 2: `},
		{"only a key block", "{server: 'https://h', certificate-authority-data: " + b64(keyBlock) + "}", "{token: t}", `s: cluster "c": certificate-authority-data: no PEM certificate found`},
		{"key without certificate", "{server: 'https://h'}", "{client-key-data: " + b64(key) + "}", `s: user "u": client key without a client certificate`},
		{"bad client certificate", "{server: 'https://h'}", "{client-certificate-data: " + b64(bad) + ", client-key-data: " + b64(key) + "}", `s: user "u": client-certificate-data: certificate 1: `},
		{"no credentials", "{server: 'https://h'}", "{client-certificate: '', token: ''}", `s: user "u": no credentials (no client certificate, token, exec plugin or basic auth)`},
	} {
		_, err := ParseSource("s", conf(tc.cluster, tc.user), SourceOptions{})
		if KindOf(err) != KindInvalid || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	// Each single way to authenticate is enough.
	for _, user := range []string{"{token: t}", "{username: u, password: p}", "{client-certificate-data: " + b64(cert) + ", client-key-data: " + b64(key) + "}"} {
		if _, err := ParseSource("s", conf("{server: 'https://h'}", user), SourceOptions{}); err != nil {
			t.Errorf("%s: %v", user, err)
		}
	}
	for _, user := range []string{"{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/k}}", "{auth-provider: {name: oidc}}"} {
		if _, err := ParseSource("s", conf("{server: 'https://h'}", user), SourceOptions{AllowExec: true}); err != nil {
			t.Errorf("%s with --allow-exec: %v", user, err)
		}
	}
}

// TestParseSourceOneContextNoCurrent: a file with one context and no
// current-context gives that context.
func TestParseSourceOneContextNoCurrent(t *testing.T) {
	data := bytes.Replace(conf("{server: 'https://h'}", "{token: t}"), []byte("current-context: x\n"), nil, 1)
	src, err := ParseSource("s", data, SourceOptions{})
	if err != nil || src.Context != "x" || src.ClusterName != "c" || src.UserName != "u" {
		t.Fatalf("%+v %v", src, err)
	}
}
