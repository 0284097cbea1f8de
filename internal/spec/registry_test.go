package spec

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseRegistry walks both sides of every limit of images.registry.
func TestParseRegistry(t *testing.T) {
	cases := []struct {
		in      string
		prefix  string // "" means an error
		errWord string
	}{
		{"registry.example.internal", "registry.example.internal", ""},
		{"registry.example.internal:5000", "registry.example.internal:5000", ""},
		{"registry.example.internal:5000/mirror/k8s", "registry.example.internal:5000/mirror/k8s", ""},
		{"192.168.10.1:5000", "192.168.10.1:5000", ""},
		{"localhost", "localhost", ""},
		{"localhost:5000", "localhost:5000", ""},
		{"gateway:5000", "gateway:5000", ""},
		{"[fd00::1]:5000", "[fd00::1]:5000", ""},
		{"[fd00::1]", "[fd00::1]", ""},
		{"reg.test:1", "reg.test:1", ""},
		{"reg.test:65535", "reg.test:65535", ""},
		{"reg.test:0", "", "outside 1-65535"},
		{"reg.test:65536", "", "outside 1-65535"},
		{"reg.test:05000", "", "leading zero"},
		{"reg.test:", "", "port after : is empty"},
		{"reg.test:http", "", "not a number"},
		{"https://reg.test:5000", "", "scheme"},
		{"http://reg.test", "", "scheme"},
		{"reg.test:5000/pause:3.10", "", "has a tag"},
		{"reg.test:5000/mirror@sha256:" + strings.Repeat("a", 64), "", "digest"},
		{"fd00::1", "", "without brackets"},
		{"fd00::1:5000", "", "without brackets"},
		{"[fd00::1", "", "no closing ]"},
		{"[192.168.1.1]:5000", "", "not an IPv6"},
		{"[fd00::1]5000", "", "want :port"},
		{"registry", "", "Docker Hub namespace"},
		{"registry/mirror", "", "Docker Hub namespace"},
		{"reg.test/Mirror", "", "lowercase"},
		{"reg.test/mirror/", "", "empty path component"},
		{"reg.test//mirror", "", "empty path component"},
		{"reg_test.example", "", "not a DNS name"},
		{"-reg.test", "", "not a DNS name"},
		{"reg test", "", "white space"},
		{":5000", "", "no host"},
		{"", "", "empty"},
		{"reg.test/" + strings.Repeat("a", 240), "", "too long"},
	}
	for _, c := range cases {
		r, err := ParseRegistry(c.in)
		switch {
		case c.prefix != "" && err != nil:
			t.Errorf("ParseRegistry(%q): %v", c.in, err)
		case c.prefix != "" && r.Prefix() != c.prefix:
			t.Errorf("ParseRegistry(%q).Prefix() = %q, want %q", c.in, r.Prefix(), c.prefix)
		case c.prefix == "" && err == nil:
			t.Errorf("ParseRegistry(%q) = %+v, want an error about %q", c.in, r, c.errWord)
		case c.prefix == "" && !strings.Contains(err.Error(), c.errWord):
			t.Errorf("ParseRegistry(%q) error %q does not say %q", c.in, err, c.errWord)
		}
	}
}

func testCertPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestRegistryCA reads images.registryCA beside the spec: certificates are
// accepted, a key, junk, an empty or missing file are errors naming it.
func TestRegistryCA(t *testing.T) {
	cert := testCertPEM(t)
	base := mustRead(t, "testdata/valid/offline.yaml")
	src := strings.Replace(base, "    registry: registry.airgap.test:5000/mirror\n",
		"    registry: registry.airgap.test:5000/mirror\n    registryCA: ca.crt\n", 1)
	cases := []struct {
		name    string
		content []byte // nil: no file
		wantErr string
	}{
		{"one cert", cert, ""},
		{"two certs", append(append([]byte{}, cert...), cert...), ""},
		{"a key too", append(append([]byte{}, cert...), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")...), `a "PRIVATE KEY" block`},
		{"junk after", append(append([]byte{}, cert...), []byte("hello\n")...), "not a PEM block"},
		{"empty", []byte("\n"), "holds no certificate"},
		{"bad der", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "does not parse"},
		{"missing", nil, "cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "cluster.yaml")
			if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.content != nil {
				if err := os.WriteFile(filepath.Join(dir, "ca.crt"), c.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := LoadFile(context.Background(), file)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantErr == "" {
				if err := r.Err(); err != nil {
					t.Fatal(err)
				}
				if string(r.Cluster.Spec.Images.RegistryCAData) != string(c.content) {
					t.Errorf("RegistryCAData not read")
				}
				return
			}
			errs := r.Diagnostics.Errors()
			if len(errs) != 1 || errs[0].Path != "spec.images.registryCA" || errs[0].Rule != "S701" || errs[0].Line != 18 ||
				!strings.Contains(errs[0].Message, c.wantErr) || !strings.Contains(errs[0].Message, "ca.crt") {
				t.Errorf("want one S701 error on line 18 saying %q, got:\n%s", c.wantErr, diagText(r.Diagnostics))
			}
			if r.Cluster.Spec.Images.RegistryCAData != nil {
				t.Errorf("a bad CA was kept")
			}
		})
	}
}

// TestBundleVersionsOnlyWithABundle: the S703 fixture's versions with
// packages.source upstream give no S703 (the near miss), and with a bundle
// each bad one is reported.
func TestBundleVersionsOnlyWithABundle(t *testing.T) {
	src := mustRead(t, "testdata/invalid/S703-bundle-versions.yaml")
	count := func(src string) int {
		n := 0
		for _, d := range Parse("x.yaml", []byte(src)).Diagnostics {
			if d.Rule == "S703" {
				n++
			}
		}
		return n
	}
	if n := count(src); n != 4 {
		t.Errorf("with a bundle: %d S703 diagnostics, want 4", n)
	}
	if n := count(strings.Replace(src, "source: bundle", "source: upstream", 1)); n != 0 {
		t.Errorf("upstream: %d S703 diagnostics, want 0", n)
	}
}
