package render

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// The rendered hosts.toml files are read here by containerd's own code
// (core/remotes/docker/config: HostDirFromRoot and ConfigureHosts, the
// functions containerd's CRI plugin uses for config_path), at the version
// the nodes run (2.2.2). A test-only import: the product does not link it.

// selfSignedCA is a real CA certificate in PEM (ConfigureHosts loads it).
func selfSignedCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "registry test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// writeCertsDir lays the files out as prepare.sh and prepare.ps1 do:
// certs.d/DIR/hosts.toml and, for the private registry, certs.d/DIR/ca.crt.
func writeCertsDir(t *testing.T, root string, files []hostsFile) {
	t.Helper()
	for _, f := range files {
		d := filepath.Join(root, f.Dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(f.HostsTOML), 0o644); err != nil {
			t.Fatal(err)
		}
		if f.CA != "" {
			if err := os.WriteFile(filepath.Join(d, "ca.crt"), []byte(f.CA), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// containerdHostsFor is the list of hosts containerd tries, in order, for
// images of the namespace ns with config_path root.
func containerdHostsFor(t *testing.T, root, ns string) []docker.RegistryHost {
	t.Helper()
	hosts, err := config.ConfigureHosts(context.Background(), config.HostOptions{HostDir: config.HostDirFromRoot(root)})(ns)
	if err != nil {
		t.Fatalf("containerd's ConfigureHosts for %s: %v", ns, err)
	}
	return hosts
}

type wantHost struct {
	host, path string
	caps       docker.HostCapabilities
	withCA     bool
}

// checkOnlyHost fails unless containerd tries exactly one host for ns, the
// private registry as wanted: no fallback to ns's upstream.
func checkOnlyHost(t *testing.T, what, ns string, got []docker.RegistryHost, want wantHost) {
	t.Helper()
	var tried []string
	for _, h := range got {
		tried = append(tried, h.Scheme+"://"+h.Host+h.Path)
	}
	if len(got) != 1 {
		t.Errorf("%s: containerd tries %d hosts for %s, want only the private registry: %s", what, len(got), ns, strings.Join(tried, ", "))
		return
	}
	h := got[0]
	if h.Scheme != "https" || h.Host != want.host || h.Path != want.path || h.Capabilities != want.caps {
		t.Errorf("%s: containerd's host for %s is %s (capabilities %b), want https://%s%s (capabilities %b)", what, ns, tried[0], h.Capabilities, want.host, want.path, want.caps)
	}
	tr, ok := h.Client.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("%s: %s: transport %T", what, ns, h.Client.Transport)
	}
	if gotCA := tr.TLSClientConfig != nil && tr.TLSClientConfig.RootCAs != nil; gotCA != want.withCA {
		t.Errorf("%s: %s: a CA pool is configured: %v, want %v", what, ns, gotCA, want.withCA)
	}
}

// TestContainerdHostsNoUpstreamFallback: for every mirrored public registry
// and for the private registry itself, containerd (its own parser, at the
// nodes' version) tries the private registry and nothing else, on Linux and
// on Windows, with and without a registry path and a CA. The files as they
// were before (the mirror as a [host], no server) make containerd try the
// upstream registry last, which this test catches.
func TestContainerdHostsNoUpstreamFallback(t *testing.T) {
	const pullResolve = docker.HostCapabilityPull | docker.HostCapabilityResolve
	const all = pullResolve | docker.HostCapabilityPush | docker.HostCapabilityReferrers
	ca := selfSignedCA(t)
	for _, tc := range []struct {
		registry, host, mirrorPath string
		withCA                     bool
	}{
		{"reg.test:5000/mirror", "reg.test:5000", "/v2/mirror", true},
		{"reg.test:5000/team/mirror", "reg.test:5000", "/v2/team/mirror", false},
		{"registry.example.internal:5000", "registry.example.internal:5000", "/v2", true},
		{"registry.example.internal", "registry.example.internal", "/v2", false},
	} {
		c := labCluster(t)
		c.Spec.Images.Registry = tc.registry
		p := planOf(t, c)
		if tc.withCA {
			p.Registry.CA, p.Registry.HasCA = ca, true
		}
		for _, form := range []struct {
			os, certsDir, sep string
		}{{"linux", LinuxCertsDir, "/"}, {"windows", WindowsCertsDir, `\`}} {
			what := form.os + " " + tc.registry
			root := t.TempDir()
			files := containerdHosts(p, form.certsDir, form.sep)
			// The CA path is the node's; containerd on this machine reads
			// it from root, so that one line is pointed there, after
			// checking it names the node's file.
			for i, f := range files {
				if !tc.withCA {
					if strings.Contains(f.HostsTOML, "ca =") {
						t.Errorf("%s: %s/hosts.toml names a CA without one:\n%s", what, f.Dir, f.HostsTOML)
					}
					continue
				}
				onNode := "ca = '" + form.certsDir + form.sep + hostDirectory(tc.host) + form.sep + "ca.crt'\n"
				if strings.Count(f.HostsTOML, onNode) != 1 {
					t.Errorf("%s: %s/hosts.toml does not name the node's CA file %q:\n%s", what, f.Dir, onNode, f.HostsTOML)
				}
				files[i].HostsTOML = strings.Replace(f.HostsTOML, onNode, "ca = '"+filepath.Join(root, hostDirectory(tc.host), "ca.crt")+"'\n", 1)
			}
			writeCertsDir(t, root, files)
			mirrored := plan.MirroredRegistries()
			if len(files) != len(mirrored)+1 {
				t.Fatalf("%s: %d host directories, want %d", what, len(files), len(mirrored)+1)
			}
			for _, ns := range mirrored {
				checkOnlyHost(t, what, ns, containerdHostsFor(t, root, ns), wantHost{tc.host, tc.mirrorPath, pullResolve, tc.withCA})
			}
			checkOnlyHost(t, what, tc.host, containerdHostsFor(t, root, tc.host), wantHost{tc.host, "/v2", all, tc.withCA})
		}
	}

	// The near miss: a mirror given only as a [host] (the form rendered
	// before) is followed by the upstream registry.
	root := t.TempDir()
	writeCertsDir(t, root, []hostsFile{{Dir: "docker.io", HostsTOML: "[host.'https://reg.test:5000/v2/mirror']\n  capabilities = ['pull', 'resolve']\n  override_path = true\n"}})
	got := containerdHostsFor(t, root, "docker.io")
	if len(got) != 2 || got[1].Host != "registry-1.docker.io" {
		t.Fatalf("the [host]-only form: containerd tries %+v; the test's premise (an upstream fallback) does not hold", got)
	}
}

// TestContainerdHostsEmbedded: prepare.sh and prepare.ps1 carry exactly the
// hosts.toml texts checked above, quoted, one per host directory.
func TestContainerdHostsEmbedded(t *testing.T) {
	p := registryPlan(t, "reg.test:5000/mirror")
	files := mustRender(t, p, Options{})
	for path, form := range map[string]struct {
		certsDir, sep string
		line          func(hostsFile) string
	}{
		"nodes/k8s-lab-node-1/prepare.sh": {LinuxCertsDir, "/", func(h hostsFile) string {
			return "printf '%s' " + ShQuote(h.HostsTOML) + " | install_file 644 " + ShQuote(LinuxCertsDir+"/"+h.Dir+"/hosts.toml") + " "
		}},
		"nodes/k8s-lab-win-1/prepare.ps1": {WindowsCertsDir, `\`, func(h hostsFile) string {
			// prepare.ps1 is written with CRLF line ends.
			return strings.ReplaceAll("if (Set-FileText ($CertsDir + '\\' + "+PsQuote(h.Dir)+" + '\\hosts.toml') "+PsQuote(h.HostsTOML)+") ", "\n", "\r\n")
		}},
	} {
		text := string(files[path].Data)
		for _, h := range containerdHosts(p, form.certsDir, form.sep) {
			if !strings.Contains(h.HostsTOML, "\nserver = 'https://reg.test:5000") || strings.Contains(h.HostsTOML, "[host") {
				t.Errorf("%s: %s/hosts.toml has no server or a host table:\n%s", path, h.Dir, h.HostsTOML)
			}
			if strings.Count(text, form.line(h)) != 1 {
				t.Errorf("%s does not write %s/hosts.toml once as\n%s", path, h.Dir, form.line(h))
			}
		}
	}
}
