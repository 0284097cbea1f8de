package kubeconfig

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// TestVerifyResult: what --verify reports against a server that knows the
// client certificate: the version, the imported CA as the trust, who the
// server says the user is. A zero timeout is the default one (15 s).
func TestVerifyResult(t *testing.T) {
	c := kt.StartFakeCluster(t, "v")
	v, err := Verify(context.Background(), &api.Cluster{Server: c.URL(), CertificateAuthorityData: c.CA.CertPEM},
		&api.AuthInfo{ClientCertificateData: c.Admin.Cert, ClientKeyData: c.Admin.Key}, 0, "w")
	if err != nil {
		t.Fatal(err)
	}
	want := &Verified{ServerVersion: c.Version(), TrustedBy: "the imported CA", Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %+v\nwant %+v", v, want)
	}
	// The refusals before any request, exact.
	before := c.Requests.Load()
	for _, tc := range []struct {
		name    string
		cluster api.Cluster
		user    api.AuthInfo
		want    string
	}{
		{"file references", api.Cluster{Server: c.URL(), CertificateAuthority: "ca.crt"}, api.AuthInfo{TokenFile: "tok", ClientKey: "k"},
			"w: cannot verify: the entries refer to local files (certificate-authority, client-key, tokenFile), and --verify sends only what the import holds"},
		{"insecure", api.Cluster{Server: c.URL(), InsecureSkipTLSVerify: true}, api.AuthInfo{Token: "t"},
			"w: cannot verify: the cluster sets insecure-skip-tls-verify, so the server's identity cannot be checked"},
	} {
		_, err := Verify(context.Background(), &tc.cluster, &tc.user, time.Second, "w")
		if KindOf(err) != KindVerify || err.Error() != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if n := c.Requests.Load() - before; n != 0 {
		t.Errorf("the refusals sent %d requests", n)
	}
}

// TestVerifyTimeout: --verify gives up after the timeout it is given, not
// the 15 s default, on a server that accepts the connection and never
// answers: unreachable, as a server that refuses the connection.
func TestVerifyTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	start := time.Now()
	_, err := Verify(context.Background(), &api.Cluster{Server: srv.URL, CertificateAuthorityData: caPEM}, &api.AuthInfo{Token: "t"}, 300*time.Millisecond, "w")
	elapsed := time.Since(start)
	if KindOf(err) != KindUnreachable || !strings.HasPrefix(err.Error(), "w: GET "+srv.URL+"/version: ") {
		t.Fatalf("want an unreachable error of the GET, got %v", err)
	}
	if elapsed > 8*time.Second {
		t.Errorf("gave up after %s with a 300ms timeout", elapsed)
	}
	// Nothing listens on port 9 of loopback: refused.
	_, err = Verify(context.Background(), &api.Cluster{Server: "https://127.0.0.1:9", CertificateAuthorityData: caPEM}, &api.AuthInfo{Token: "t"}, 5*time.Second, "w")
	if KindOf(err) != KindUnreachable || !strings.HasPrefix(err.Error(), "w: GET https://127.0.0.1:9/version: ") {
		t.Fatalf("refused: want an unreachable error, got %v", err)
	}
}

// TestVerifyTrustsSystemCAs: a cluster without CA data is checked against
// the system CAs, and --verify says so. The system pool is read once per
// process, so the test runs itself in a child whose SSL_CERT_FILE holds the
// fake cluster's CA.
func TestVerifyTrustsSystemCAs(t *testing.T) {
	const env = "HYBRIDCTL_TEST_SYSTEM_CA_CHILD"
	if os.Getenv(env) == "" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestVerifyTrustsSystemCAs$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), env+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "trusted by the system CAs") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	c := kt.StartFakeCluster(t, "sys")
	dir := t.TempDir()
	t.Setenv("SSL_CERT_FILE", kt.WriteFile(t, filepath.Join(dir, "ca.pem"), c.CA.CertPEM, 0o600))
	t.Setenv("SSL_CERT_DIR", dir)
	v, err := Verify(context.Background(), &api.Cluster{Server: c.URL()}, &api.AuthInfo{ClientCertificateData: c.Admin.Cert, ClientKeyData: c.Admin.Key}, 10*time.Second, "w")
	if err != nil {
		t.Fatal(err)
	}
	if v.TrustedBy != "the system CAs" || v.Username != "kubernetes-admin" {
		t.Fatalf("%+v", v)
	}
	t.Log("trusted by the system CAs")
}
