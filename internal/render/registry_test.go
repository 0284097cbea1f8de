package render

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// registryPlan is the guide's lab with every image from reg.test:5000/mirror
// and a registry CA.
func registryPlan(t testing.TB, registry string) *plan.Plan {
	t.Helper()
	c := labCluster(t)
	c.Spec.Images.Registry = registry
	p := planOf(t, c)
	p.Registry.CA, p.Registry.HasCA = testCA, true // the CA file is read by the loader, not kept in YAML
	return p
}

// publicRegistry matches the public registries an air-gapped node cannot reach.
var publicRegistry = regexp.MustCompile(`registry\.k8s\.io|docker\.io|quay\.io|ghcr\.io|mcr\.microsoft\.com|(^|[\s'"=])sigwindowstools/`)

// certsDirMention is the only way a public registry may appear with a
// private registry: as the name of its containerd mirror directory.
var certsDirMention = regexp.MustCompile(`certs\.d/(registry\.k8s\.io|docker\.io|quay\.io|ghcr\.io|mcr\.microsoft\.com)\b|'(registry\.k8s\.io|docker\.io|quay\.io|ghcr\.io|mcr\.microsoft\.com)'`)

// publicImageLines returns every line of the files that names a public
// registry other than as a mirror directory.
func publicImageLines(files map[string]File) []string {
	var out []string
	for path, f := range files {
		for i, line := range strings.Split(string(f.Data), "\n") {
			if publicRegistry.MatchString(certsDirMention.ReplaceAllString(line, "")) {
				out = append(out, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestRegistryEveryImage: with images.registry, every image a rendered file
// names comes from it (kubeadm, the sandbox, Calico, kube-proxy for
// Windows, the check workloads), containerd on Linux and Windows mirrors the
// five public registries through it with the CA; without it the same grep
// finds the public registries (the test can fail).
func TestRegistryEveryImage(t *testing.T) {
	up := mustRender(t, labPlan(t), Options{})
	if got := publicImageLines(up); len(got) < 5 {
		t.Fatalf("the upstream render names only %d public images; the grep is broken:\n%s", len(got), strings.Join(got, "\n"))
	}
	p := registryPlan(t, "reg.test:5000/mirror")
	files := mustRender(t, p, Options{})
	if got := publicImageLines(files); len(got) > 0 {
		t.Errorf("with a private registry, files still name public registries:\n%s", strings.Join(got, "\n"))
	}
	wants := map[string][]string{
		"cluster/kubeadm-config.yaml":             {"imageRepository: reg.test:5000/mirror\n", "imageRepository: reg.test:5000/mirror/coredns\n"},
		"cluster/calico/calico-installation.yaml": {"registry: reg.test:5000/mirror/\n", "imagePath: calico\n"},
		"cluster/windows/kube-proxy-windows.yaml": {"image: reg.test:5000/mirror/sigwindowstools/kube-proxy:v1.37.2-calico-hostprocess"},
		"workloads/hello.yaml":                    {"image: reg.test:5000/mirror/e2e-test-images/agnhost:2.66.1"},
		"workloads/aspnetapp.yaml":                {"image: reg.test:5000/mirror/e2e-test-images/agnhost:2.66.1"},
		"nodes/k8s-lab-node-1/prepare.sh": {"SANDBOX_IMAGE='reg.test:5000/mirror/pause:3.10.2'", "/etc/containerd/certs.d/quay.io/hosts.toml",
			"/etc/containerd/certs.d/reg.test_5000_/ca.crt", "https://reg.test:5000/v2/mirror", "override_path = true",
			"capabilities = ['\\''pull'\\'', '\\''resolve'\\'']", "config_path = '${CERTS_DIR}'", "MIIB"},
		"nodes/k8s-lab-win-1/prepare.ps1": {`'mcr.microsoft.com'`, `'reg.test_5000_'`, `ca = ''C:\Program Files\containerd\certs.d\reg.test_5000_\ca.crt''`,
			"'reg.test:5000/mirror/pause:3.10.2'", "MIIB"},
	}
	for path, subs := range wants {
		f, ok := files[path]
		if !ok {
			t.Errorf("%s not rendered", path)
			continue
		}
		for _, s := range subs {
			if !strings.Contains(string(f.Data), s) {
				t.Errorf("%s lacks %q", path, s)
			}
		}
	}
	for _, up := range plan.MirroredRegistries() {
		if !strings.Contains(string(files["nodes/k8s-lab-node-1/prepare.sh"].Data), "/etc/containerd/certs.d/"+up+"/hosts.toml") {
			t.Errorf("prepare.sh does not mirror %s", up)
		}
	}
	// Without a path: no override_path; with a plain host: the directory
	// has no port form.
	q := mustRender(t, registryPlan(t, "registry.example.internal"), Options{})
	sh := string(q["nodes/k8s-lab-node-1/prepare.sh"].Data)
	if strings.Contains(sh, "override_path") || !strings.Contains(sh, "https://registry.example.internal'\\''") ||
		!strings.Contains(sh, "certs.d/registry.example.internal/ca.crt") {
		t.Errorf("a registry without a port or path renders wrongly:\n%s", sh)
	}
}

// TestKubeadmImagesMatchPlan compares the images the real kubeadm pulls for
// the rendered configuration (kubeadm config images list --config) with the
// plan's list, with and without a private registry.
func TestKubeadmImagesMatchPlan(t *testing.T) {
	kubeadm := kubeadmBinary(t)
	for _, p := range []*plan.Plan{labPlan(t), registryPlan(t, "reg.test:5000/mirror"), registryPlan(t, "192.168.10.1:5000")} {
		files := mustRender(t, p, Options{})
		path := filepath.Join(t.TempDir(), "kubeadm-config.yaml")
		if err := os.WriteFile(path, files["cluster/kubeadm-config.yaml"].Data, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubeadm, "config", "images", "list", "--config", path).Output()
		if err != nil {
			t.Fatalf("kubeadm config images list: %v", err)
		}
		got := strings.Fields(string(out))
		var want []string
		for _, im := range p.Images {
			if im.OS == "linux" && (strings.HasPrefix(im.Name, "kube-") || im.Name == "etcd" || im.Name == "coredns" || im.Name == "pause") {
				want = append(want, im.Image)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) != 7 {
			t.Errorf("kubeadm pulls:\n%s\nthe plan lists:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestKubeadmValidateOffline: the real kubeadm accepts the rendered files of
// examples/lab-linux.yaml (a registry, cgroup v1 allowed: failCgroupV1 false
// and SystemVerification ignored on init and join).
func TestKubeadmValidateOffline(t *testing.T) {
	kubeadm := kubeadmBinary(t)
	b, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Parse("lab-linux.yaml", b)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, r.Cluster)
	files := mustRender(t, p, Options{})
	cfg := files["cluster/kubeadm-config.yaml"].Data
	for _, s := range []string{"failCgroupV1: false", "- SystemVerification", "imageRepository: 192.168.10.1:5000\n"} {
		if !strings.Contains(string(cfg), s) {
			t.Errorf("kubeadm-config.yaml lacks %q", s)
		}
	}
	kubeadmValidate(t, kubeadm, "kubeadm-config.yaml", cfg)
	join := fillSecrets(files["nodes/k8s-lab-node-1/join.yaml"].Data)
	if !strings.Contains(string(join), "- SystemVerification") {
		t.Errorf("join.yaml lacks the SystemVerification exception")
	}
	kubeadmValidate(t, kubeadm, "join.yaml", join)
}

// TestKubeadm136 renders examples/lab-linux-v1.36.yaml and checks it with
// the real kubeadm v1.36.3: the images kubeadm pulls for the rendered
// configuration are the plan's (kubeadm 1.36's etcd 3.6.8-0 and CoreDNS
// v1.14.2, not 1.37's), its version is the spec's, and it accepts the init
// and join files.
func TestKubeadm136(t *testing.T) {
	kubeadm := kubeadmReleaseBinary(t, "v1.36.3")
	out, err := exec.Command(kubeadm, "version", "-o", "short").Output()
	if err != nil || strings.TrimSpace(string(out)) != "v1.36.3" {
		t.Fatalf("kubeadm version: %q, %v", out, err)
	}
	b, err := os.ReadFile("../../examples/lab-linux-v1.36.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Parse("lab-linux-v1.36.yaml", b)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, r.Cluster)
	files := mustRender(t, p, Options{})
	cfg := files["cluster/kubeadm-config.yaml"].Data
	if !strings.Contains(string(cfg), "kubernetesVersion: v1.36.3\n") {
		t.Errorf("kubeadm-config.yaml is not for v1.36.3:\n%s", cfg)
	}
	path := filepath.Join(t.TempDir(), "kubeadm-config.yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(kubeadm, "config", "images", "list", "--config", path).Output()
	if err != nil {
		t.Fatalf("kubeadm config images list: %v", err)
	}
	got := strings.Fields(string(out))
	var want []string
	for _, im := range p.Images {
		if im.OS == "linux" && (strings.HasPrefix(im.Name, "kube-") || im.Name == "etcd" || im.Name == "coredns" || im.Name == "pause") {
			want = append(want, im.Image)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) != 7 {
		t.Errorf("kubeadm v1.36.3 pulls:\n%s\nthe plan lists:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"192.168.36.1:5000/etcd:3.6.8-0", "192.168.36.1:5000/coredns/coredns:v1.14.2", "192.168.36.1:5000/pause:3.10.2"} {
		if !slices.Contains(got, w) {
			t.Errorf("kubeadm v1.36.3 does not pull %s: %v", w, got)
		}
	}
	if !strings.Contains(string(files["nodes/k8s-v136-node-1/prepare.sh"].Data), "192.168.36.1:5000/pause:3.10.2") {
		t.Error("prepare.sh does not set containerd's sandbox image to kubeadm 1.36's pause")
	}
	kubeadmValidate(t, kubeadm, "kubeadm-config.yaml", cfg)
	kubeadmValidate(t, kubeadm, "join.yaml", fillSecrets(files["nodes/k8s-v136-node-1/join.yaml"].Data))
}
