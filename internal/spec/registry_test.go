package spec

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
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
		// The limits at their edges (each found alive by gremlins).
		{"://reg.test", "", "scheme"},                                              // a scheme at index 0
		{"reg.test:5009", "reg.test:5009", ""},                                     // the digit 9 is a digit
		{"reg.test:9999", "reg.test:9999", ""},                                     // likewise
		{"reg.test:-5", "", "not a number"},                                        // a sign is not a digit
		{"reg.test:5a", "", "not a number"},                                        // a letter after the digits
		{strings.Repeat("a", 63) + ".test", strings.Repeat("a", 63) + ".test", ""}, // a 63-character label
		{strings.Repeat("a", 64) + ".test", "", "not a DNS name"},                  // a 64-character one
		{hostOfLength(253), "", "too long"},                                        // a 253-character name is a name (too long for images)
		{hostOfLength(254), "", "not a DNS name"},                                  // a 254-character one is not
		// image names of 255 characters: reg.test/ + 226 + /calico/node-windows
		{"reg.test/" + strings.Repeat("a", 226), "reg.test/" + strings.Repeat("a", 226), ""},
		{"reg.test/" + strings.Repeat("a", 227), "", "too long"},
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

// hostOfLength is a DNS name of n characters (n >= 64) in labels of at
// most 63.
func hostOfLength(n int) string {
	h := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "."
	h += strings.Repeat("d", n-len(h))
	if len(h) != n {
		panic(n)
	}
	return h
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

// TestVersionsStrictForEverySource: the release-version fixture's bad
// versions are reported the same whether packages come
// from upstream or from a bundle (a version reaches the download URLs, the
// scripts and the runbook either way).
func TestVersionsStrictForEverySource(t *testing.T) {
	src := mustRead(t, "testdata/invalid/S601-release-versions.yaml")
	versionDiags := func(src string) []string {
		var out []string
		for _, d := range Parse("x.yaml", []byte(src)).Diagnostics {
			if d.Rule == "S601" || d.Rule == "S604" {
				out = append(out, d.Path+": "+d.Message)
			}
		}
		return out
	}
	upstream := versionDiags(src)
	if len(upstream) != 6 {
		t.Fatalf("upstream: %d S601/S604 diagnostics, want 6:\n%s", len(upstream), strings.Join(upstream, "\n"))
	}
	bundled := versionDiags(strings.Replace(src, "  crictl: {version: 1.37.0-rc.1}\n", "  crictl: {version: 1.37.0-rc.1}\n  packages: {source: bundle}\n", 1))
	if strings.Join(bundled, "\n") != strings.Join(upstream, "\n") {
		t.Errorf("with a bundle:\n%s\nupstream:\n%s", strings.Join(bundled, "\n"), strings.Join(upstream, "\n"))
	}
}

// TestPreReleaseCharacters: a pre-release takes exactly [0-9A-Za-z-] and
// dots; each range is tested at both ends and at the character just
// outside it, through badPreRelease and through rule S601.
func TestPreReleaseCharacters(t *testing.T) {
	for _, id := range []string{"0", "9", "a", "z", "A", "Z", "-", "rc0", "rc.9", "Az-09", "0a", "rc.0"} {
		if bad := badPreRelease(id); bad != "" {
			t.Errorf("badPreRelease(%q) = %q, want it accepted", id, bad)
		}
	}
	for _, id := range []string{"/", ":", "`", "{", "@", "[", "_", "rc~", "rc\n"} {
		bad := badPreRelease(id)
		if want := fmt.Sprintf("%q in the pre-release", id[len(id)-1]); !strings.HasPrefix(bad, want) {
			t.Errorf("badPreRelease(%q) = %q, want it to start with %s", id, bad, want)
		}
	}
	if bad := badPreRelease("rc..1"); bad != "an empty pre-release identifier" {
		t.Errorf(`badPreRelease("rc..1") = %q`, bad)
	}
	if bad := badPreRelease("rc.01"); bad != "the pre-release number 01 has a leading zero" {
		t.Errorf(`badPreRelease("rc.01") = %q`, bad)
	}
	// Through the rule, with either source.
	for _, source := range []string{"upstream", "bundle"} {
		src := strings.Replace(mustRead(t, "testdata/valid/offline.yaml"), "source: bundle", "source: "+source, 1)
		for _, c := range []struct {
			version string
			want    int
		}{{"v1.38.0-rc.0", 0}, {"v1.38.0-rc.9", 0}, {"v1.38.0-RC.Z", 0}, {"v1.38.0-rc:0", 1}, {"v1.38.0-rc.00", 1}, {"v1.38.0-", 1}} {
			s := strings.Replace(src, "\nspec:\n", "\nspec:\n  kubernetesVersion: "+c.version+"\n", 1)
			n := 0
			for _, d := range Parse("offline.yaml", []byte(s)).Diagnostics {
				if d.Rule == "S601" && d.Path == "spec.kubernetesVersion" {
					n++
				}
			}
			if n != c.want {
				t.Errorf("kubernetesVersion %s with packages.source %s: %d S601 diagnostics, want %d", c.version, source, n, c.want)
			}
		}
	}
}

// TestReadLimitedEdge: a file of exactly the limit is read, one byte more
// is refused with the limit in the message.
func TestReadLimitedEdge(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := readLimited(context.Background(), file, 10); err != nil || string(data) != "0123456789" {
		t.Errorf("10 bytes, limit 10: %q, %v", data, err)
	}
	if data, err := readLimited(context.Background(), file, 9); err == nil || err.Error() != "is larger than 9 bytes" {
		t.Errorf("10 bytes, limit 9: %q, %v; want is larger than 9 bytes", data, err)
	}
}

// TestRegistryCAOtherDiagnostics: the CA is still read when the spec has
// errors elsewhere, and not read when the registryCA field itself has one
// (a path leaving the spec's directory is never opened, even when a
// certificate is there).
func TestRegistryCAOtherDiagnostics(t *testing.T) {
	cert := testCertPEM(t)
	base := mustRead(t, "testdata/valid/offline.yaml")
	load := func(t *testing.T, ca, src string) *Result {
		t.Helper()
		dir := t.TempDir()
		specDir := filepath.Join(dir, "spec")
		if err := os.Mkdir(specDir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{dir, specDir} {
			if err := os.WriteFile(filepath.Join(d, "ca.crt"), cert, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		src = strings.Replace(src, "    registry: registry.airgap.test:5000/mirror\n",
			"    registry: registry.airgap.test:5000/mirror\n    registryCA: "+ca+"\n", 1)
		file := filepath.Join(specDir, "cluster.yaml")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := LoadFile(context.Background(), file)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("error elsewhere", func(t *testing.T) {
		r := load(t, "ca.crt", strings.Replace(base, "    configure: systemd-networkd\n", "    configure: systemd-networkd\n    mtu: 1\n", 1))
		errs := r.Diagnostics.Errors()
		if len(errs) != 1 || errs[0].Rule != "S108" {
			t.Fatalf("want the one S108 error, got:\n%s", diagText(r.Diagnostics))
		}
		if string(r.Cluster.Spec.Images.RegistryCAData) != string(cert) {
			t.Errorf("the CA was not read beside a spec with an S108 error")
		}
	})
	t.Run("error on the field", func(t *testing.T) {
		r := load(t, "../ca.crt", base)
		var mine Diagnostics
		for _, d := range r.Diagnostics {
			if d.Path == "spec.images.registryCA" {
				mine = append(mine, d)
			}
		}
		if len(mine) != 1 || mine[0].Severity != finding.Error || !strings.Contains(mine[0].Message, "must be a file beside the spec") {
			t.Errorf("want one S701 error on registryCA, got:\n%s", diagText(r.Diagnostics))
		}
		if r.Cluster.Spec.Images.RegistryCAData != nil {
			t.Errorf("../ca.crt, outside the spec's directory, was read")
		}
	})
}
