package artifacts

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testCA makes a CA and, when host is set, a server certificate it signs
// for that IP; it writes ca.crt (and server.crt, server.key) into dir.
func testCA(t *testing.T, dir, host string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lab test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
	if host == "" {
		return
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(host)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "server.crt"), "CERTIFICATE", der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "server.key"), "EC PRIVATE KEY", kder)
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startRegistry runs the built registry on 127.0.0.1 over TLS until the
// test ends, and returns its host:port.
func startRegistry(t *testing.T, b *Builder, dir string) string {
	t.Helper()
	bin, err := b.Path(context.Background(), "registry")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
`, filepath.Join(dir, "storage"), addr, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", filepath.Join(dir, "config.yml"))
	cmd.Stdout, cmd.Stderr = testLog{t}, testLog{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(2 * time.Minute) // a loaded machine starts it slowly
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only waiting for the listener
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("the registry exited before it listened on %s", addr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry does not answer on %s: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRegistryOverTLS(t *testing.T) {
	b := testBuilder(t)
	ctx := context.Background()
	if err := b.Build(ctx, "registry", "lab-programs"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testCA(t, dir, "127.0.0.1")
	addr := startRegistry(t, b, dir)

	d, _ := LookupImage("hello")
	img, err := b.BuildImage(ctx, KubernetesVersion, d)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	ref, err := name.ParseReference(addr+"/example/hello:1.2", name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transport(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithTransport(tr)); err != nil {
		t.Fatalf("push: %v", err)
	}
	got, err := remote.Image(ref, remote.WithContext(ctx), remote.WithTransport(tr))
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if dg, _ := got.Digest(); dg != want {
		t.Fatalf("pulled %s, pushed %s", dg, want)
	}
	ls, err := got.Layers()
	if err != nil || len(ls) != 2 {
		t.Fatalf("pulled image has %d layers (%v), want 2", len(ls), err)
	}
	rc, err := ls[1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()

	// Another CA is refused, and so is the system's trust store.
	other := t.TempDir()
	testCA(t, other, "")
	for _, ca := range []string{filepath.Join(other, "ca.crt"), ""} {
		tr, err := transport(ca)
		if err != nil {
			t.Fatal(err)
		}
		_, err = remote.Image(ref, remote.WithContext(ctx), remote.WithTransport(tr))
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("CA %q: pull = %v, want a certificate error", ca, err)
		}
	}
}

func TestTransportRefusesABadCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := transport(filepath.Join(dir, "missing.crt")); err == nil {
		t.Error("a missing CA file was accepted")
	}
	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := transport(bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file without certificates: %v", err)
	}
}
