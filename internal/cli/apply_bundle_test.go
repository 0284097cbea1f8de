package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

const labLinux = "../../examples/lab-linux.yaml"

// fakeBundle lays out the spec's bundle with small fake files and its
// SHA256SUMS.
func fakeBundle(t *testing.T, specFile string) string {
	t.Helper()
	res, err := spec.LoadFile(context.Background(), specFile)
	if err != nil || res.Err() != nil {
		t.Fatalf("%v %v", err, res.Err())
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	arts, err := bundle.Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var sums []bundle.Sum
	for _, a := range arts {
		data := []byte("fake " + a.Path + "\n")
		full := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(data)
		sums = append(sums, bundle.Sum{SHA256: hex.EncodeToString(s[:]), Path: a.Path})
	}
	if err := bundle.WriteSums(context.Background(), filepath.Join(dir, bundle.SumsFile), sums); err != nil {
		t.Fatal(err)
	}
	return dir
}

// publicSite matches the public registries and download sites an
// air-gapped site cannot reach.
var publicSite = regexp.MustCompile(`pkgs\.k8s\.io|dl\.k8s\.io|github\.com|raw\.githubusercontent\.com|registry\.k8s\.io|docker\.io|quay\.io|mcr\.microsoft\.com`)

// TestApplyBundleFlag: packages.source bundle needs --bundle and an upstream
// spec refuses it (usage, 2); a corrupted bundle stops apply before any
// host (1); a good one runs the dry run with bundle-upload on every node.
func TestApplyBundleFlag(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s.json")
	r := run(t, "", "apply", "-f", labLinux, "--dry-run", "--offline", "--state", state)
	if r.code != 2 || !strings.Contains(r.stderr, "spec.packages.source is bundle: apply needs --bundle DIR") {
		t.Errorf("without --bundle: %d %s", r.code, r.stderr)
	}
	dir := fakeBundle(t, labLinux)
	r = run(t, "", "apply", "-f", lab, "--dry-run", "--offline", "--bundle", dir, "--state", state)
	if r.code != 2 || !strings.Contains(r.stderr, "--bundle is for spec.packages.source: bundle") {
		t.Errorf("--bundle with an upstream spec: %d %s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64", "kubelet"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "apply", "-f", labLinux, "--dry-run", "--offline", "--bundle", dir, "--state", state)
	if r.code != 1 || !strings.Contains(r.stderr, "linux-amd64/kubelet: corrupted") || strings.Contains(r.stdout, "preflight") {
		t.Errorf("a corrupted bundle: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestOfflineDryRunNamesNoPublicSite: apply --dry-run --offline --bundle of a spec with a private
// registry and a bundle names no public registry or download site; the
// same dry run of the guide's lab (upstream) does, so the grep can fail.
func TestOfflineDryRunNamesNoPublicSite(t *testing.T) {
	dir := fakeBundle(t, labLinux)
	r := run(t, "", "apply", "-f", labLinux, "--dry-run", "--offline", "--bundle", dir, "--state", filepath.Join(t.TempDir(), "s.json"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, host := range []string{"k8s-lab-master-1", "k8s-lab-node-1", "k8s-lab-node-2"} {
		if !regexp.MustCompile(`bundle-upload +` + host + ` +would:`).MatchString(r.stdout) {
			t.Errorf("no bundle-upload step on %s", host)
		}
	}
	for _, want := range []string{"/var/cache/hybridctl/bundle/linux-amd64/kubelet unless it is there with sha256 ",
		filepath.Join(dir, "manifests", "v3_projectcalico_org.yaml")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run lacks %q", want)
		}
	}
	var hits []string
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		if publicSite.MatchString(line) {
			hits = append(hits, line)
		}
	}
	if len(hits) > 0 {
		t.Errorf("the offline dry run names public sites:\n%s", strings.Join(hits, "\n"))
	}
	up := run(t, "", "apply", "-f", lab, "--dry-run", "--offline", "--state", filepath.Join(t.TempDir(), "s.json"))
	if up.code != 0 || len(publicSite.FindAllString(up.stdout, -1)) < 2 {
		t.Errorf("the upstream dry run (exit %d) names too few public sites: the grep is broken", up.code)
	}
}

// TestOfflineHybridDryRunNamesNoPublicSite: the same public-site grep for the
// guide's lab with a Windows node and both add-ons, given a private
// registry and a bundle: the Windows node gets its bundle files and its
// SHA256SUMS, the add-ons come from the bundle, and nothing in the dry run
// names a public site.
func TestOfflineHybridDryRunNamesNoPublicSite(t *testing.T) {
	src, err := os.ReadFile(lab)
	if err != nil {
		t.Fatal(err)
	}
	const commented = "  # packages: {source: bundle}"
	if !strings.Contains(string(src), commented) {
		t.Fatalf("%s no longer has the line %q this test uncomments", lab, commented)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, commented) {
			line = "  packages: {source: bundle}\n  images: {registry: registry.example.internal:5000}"
		}
		b.WriteString(line + "\n")
	}
	specFile := filepath.Join(t.TempDir(), "lab-offline.yaml")
	if err := os.WriteFile(specFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := fakeBundle(t, specFile)
	r := run(t, "", "apply", "-f", specFile, "--dry-run", "--offline", "--bundle", dir, "--state", filepath.Join(t.TempDir(), "s.json"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`C:\k\bundle\windows-amd64\kubelet.exe unless it is there with sha256 `,
		`C:\k\bundle\windows-amd64\nssm-2.24.zip unless it is there with sha256 `,
		`write C:\k\bundle\SHA256SUMS with the 6 lines of these files (prepare.ps1 checks them with Get-FileHash)`,
		"write /var/cache/hybridctl/bundle/SHA256SUMS with the 7 lines of these files (prepare.sh checks them with sha256sum -c)",
		"metrics-server v0.9.0 from " + filepath.Join(dir, "manifests", "components.yaml"),
		"cert-manager v1.21.2 from " + filepath.Join(dir, "manifests", "cert-manager.yaml"),
		`C:\k\hybridctl\prepare.ps1`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run lacks %q", want)
		}
	}
	var hits []string
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		if publicSite.MatchString(line) {
			hits = append(hits, line)
		}
	}
	if len(hits) > 0 {
		t.Errorf("the offline dry run names public sites:\n%s", strings.Join(hits, "\n"))
	}
}
