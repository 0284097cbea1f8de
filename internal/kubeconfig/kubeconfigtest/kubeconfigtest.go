// Package kubeconfigtest makes what kubeconfig tests need: throw-away CAs,
// client and serving certificates, kubeadm-shaped admin.conf files and small
// TLS servers that answer like an API server. Tests only.
package kubeconfigtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test, like kubeadm's
// /etc/kubernetes/pki/ca.{crt,key}.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
}

func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate: a client certificate (CN, O) or, with ips, a
// serving certificate for those addresses.
func (ca *CA) Issue(t testing.TB, cn string, orgs []string, ips ...net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(ips) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = ips
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// adminConf renders a kubeconfig exactly in the shape kubeadm writes
// /etc/kubernetes/admin.conf: cluster "kubernetes", user "kubernetes-admin",
// context "kubernetes-admin@kubernetes", everything embedded.
func AdminConf(server string, caPEM, certPEM, keyPEM []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: kubernetes-admin
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
kind: Config
preferences: {}
users:
- name: kubernetes-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
`, b64(caPEM), server, b64(certPEM), b64(keyPEM))
}

// FakeCluster is a stand-in API server for tests that do not need the real
// one: TLS with a certificate from its own CA, client certificates from that
// CA required, /version answering with its own gitVersion and a
// SelfSubjectReview that returns the client certificate's subject.
type FakeCluster struct {
	Name   string
	CA     *CA
	Server *httptest.Server
	Admin  struct{ Cert, Key []byte }
	// Requests counts the HTTP requests the server received (after the
	// TLS handshake), so that a test can show that nothing was sent.
	Requests atomic.Int64
}

func (f *FakeCluster) URL() string { return f.Server.URL }

// AdminConf is the cluster's kubeadm-style admin.conf.
func (f *FakeCluster) AdminConf() []byte {
	return AdminConf(f.Server.URL, f.CA.CertPEM, f.Admin.Cert, f.Admin.Key)
}

func (f *FakeCluster) Version() string { return "v1.37.2-" + f.Name }

func StartFakeCluster(t testing.TB, name string) *FakeCluster {
	t.Helper()
	f := &FakeCluster{Name: name, CA: NewCA(t, "kubernetes")} // kubeadm's CA CN is "kubernetes" in every cluster
	f.Admin.Cert, f.Admin.Key = f.CA.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	srvCert, srvKey := f.CA.Issue(t, "kube-apiserver", nil, net.ParseIP("127.0.0.1"))
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(f.CA.Cert)
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"gitVersion": f.Version(), "major": "1", "minor": "37"})
	})
	mux.HandleFunc("/apis/authentication.k8s.io/v1/selfsubjectreviews", func(w http.ResponseWriter, r *http.Request) {
		user := "system:anonymous"
		groups := []string{"system:unauthenticated"}
		if len(r.TLS.PeerCertificates) > 0 {
			c := r.TLS.PeerCertificates[0]
			user, groups = c.Subject.CommonName, append(append([]string{}, c.Subject.Organization...), "system:authenticated")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
			"status": map[string]any{"userInfo": map[string]any{"username": user, "groups": groups}},
		})
	})
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Requests.Add(1)
		mux.ServeHTTP(w, r)
	}))
	// Handshakes that fail on purpose (a wrong CA) are the point of some
	// tests; keep them out of the test output.
	f.Server.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.Server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	f.Server.StartTLS()
	t.Cleanup(f.Server.Close)
	return f
}

func WriteFile(t testing.TB, path string, data []byte, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
