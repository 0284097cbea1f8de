package kubeconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// TestIdentityParts: each part of a user's or cluster's identity changes
// it, and formatting that does not change the connection does not: an
// exec plugin's or auth-provider's configuration, a CA file's path, the
// client certificate alone (same key), a certificate's PEM line endings.
func TestIdentityParts(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert1, key := ca.Issue(t, "admin", nil)
	cert2, _ := ca.Issue(t, "admin", nil)
	crlf := bytes.ReplaceAll(cert1, []byte("\n"), []byte("\r\n"))
	exec := func(args ...string) *api.ExecConfig {
		return &api.ExecConfig{Command: "kubelogin", Args: args, APIVersion: "client.authentication.k8s.io/v1"}
	}
	users := []struct {
		name string
		a, b api.AuthInfo
		same bool
	}{
		{"exec arguments", api.AuthInfo{Exec: exec("a")}, api.AuthInfo{Exec: exec("b")}, false},
		{"same exec", api.AuthInfo{Exec: exec("a")}, api.AuthInfo{Exec: exec("a")}, true},
		{"auth-provider config", api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "oidc", Config: map[string]string{"client-id": "a"}}},
			api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "oidc", Config: map[string]string{"client-id": "b"}}}, false},
		{"same auth-provider", api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "oidc"}}, api.AuthInfo{AuthProvider: &api.AuthProviderConfig{Name: "oidc"}}, true},
		{"certificate only", api.AuthInfo{ClientCertificateData: cert1, ClientKeyData: key}, api.AuthInfo{ClientCertificateData: cert2, ClientKeyData: key}, false},
		{"certificate with CRLF", api.AuthInfo{ClientCertificateData: cert1, ClientKeyData: key}, api.AuthInfo{ClientCertificateData: crlf, ClientKeyData: key}, true},
		{"unparsable certificates", api.AuthInfo{ClientCertificateData: []byte("x")}, api.AuthInfo{ClientCertificateData: []byte("y")}, false},
		{"unparsable, blanks around", api.AuthInfo{ClientCertificateData: []byte("x")}, api.AuthInfo{ClientCertificateData: []byte(" x\n")}, true},
	}
	for _, tc := range users {
		if got := UserIdentity(&tc.a) == UserIdentity(&tc.b); got != tc.same {
			t.Errorf("user, %s: same=%v, want %v", tc.name, got, tc.same)
		}
	}
	clusters := []struct {
		name string
		a, b api.Cluster
		same bool
	}{
		{"CA file path", api.Cluster{Server: "https://h", CertificateAuthority: "/a/ca.crt"}, api.Cluster{Server: "https://h", CertificateAuthority: "/b/ca.crt"}, false},
		{"CA file or none", api.Cluster{Server: "https://h", CertificateAuthority: "/a/ca.crt"}, api.Cluster{Server: "https://h"}, false},
		{"unparsable CA data", api.Cluster{Server: "https://h", CertificateAuthorityData: []byte("x")}, api.Cluster{Server: "https://h", CertificateAuthorityData: []byte("y")}, false},
	}
	for _, tc := range clusters {
		if got := ClusterIdentity(&tc.a) == ClusterIdentity(&tc.b); got != tc.same {
			t.Errorf("cluster, %s: same=%v, want %v", tc.name, got, tc.same)
		}
	}
	if ClusterIdentity(nil) != "" || UserIdentity(nil) != "" {
		t.Error("nil entries have an identity")
	}
}

// TestDescribeExact: the descriptions in conflict messages, part by part,
// with 16 hex digits of each fingerprint.
func TestDescribeExact(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "admin", []string{"sys:a", "sys:b"})
	fp := func(pemData []byte) string {
		certs, err := parseCerts(pemData)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(certs[0].Raw)
		return hex.EncodeToString(s[:])[:16]
	}
	tok := sha256.Sum256([]byte("abc"))
	certs, _ := parseCerts(cert)
	expires := certs[0].NotAfter.UTC().Format("2006-01-02")
	for _, tc := range []struct {
		c    api.Cluster
		want string
	}{
		{api.Cluster{Server: "https://h", CertificateAuthorityData: ca.CertPEM}, `server https://h, CA "kubernetes" sha256:` + fp(ca.CertPEM)},
		{api.Cluster{Server: "https://h", CertificateAuthorityData: []byte("junk")}, "server https://h, CA data that does not parse"},
		{api.Cluster{Server: "https://h"}, "server https://h, system CAs"},
		{api.Cluster{Server: "https://h", CertificateAuthority: "/etc/ca.crt"}, "server https://h, CA file /etc/ca.crt"},
		{api.Cluster{Server: "https://h", CertificateAuthorityData: ca.CertPEM, InsecureSkipTLSVerify: true}, "server https://h, insecure-skip-tls-verify"},
	} {
		if got := DescribeCluster(&tc.c); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	for _, tc := range []struct {
		u    api.AuthInfo
		want string
	}{
		{api.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}, `client certificate CN="admin" O="sys:a,sys:b" sha256:` + fp(cert) + ", expires " + expires},
		{api.AuthInfo{ClientCertificateData: []byte("junk")}, "client certificate that does not parse"},
		{api.AuthInfo{ClientCertificate: "a.crt", TokenFile: "tok"}, "client certificate file a.crt, token file tok"},
		{api.AuthInfo{Token: "abc"}, "token sha256:" + hex.EncodeToString(tok[:])[:16]},
		{api.AuthInfo{Exec: &api.ExecConfig{Command: "k"}, AuthProvider: &api.AuthProviderConfig{Name: "oidc"}, Username: "bob"}, "exec plugin k, auth provider oidc, basic auth user bob"},
		{api.AuthInfo{}, "no credentials"},
	} {
		if got := DescribeUser(&tc.u); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if got := short("0123456789abcdef"); got != "0123456789abcdef" {
		t.Errorf("short of 16: %s", got)
	}
	if got := short("0123456789abcdef0"); got != "0123456789abcdef" {
		t.Errorf("short of 17: %s", got)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(UserIdentity(&api.AuthInfo{Token: "abc"})) {
		t.Error("an identity is not a hex SHA-256")
	}
}
