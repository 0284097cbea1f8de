package plan

import (
	"os"
	"strings"
	"testing"
)

// TestImageRewrite: every upstream form maps to REGISTRY/<repository path>,
// which is also where containerd's mirror of the upstream looks.
func TestImageRewrite(t *testing.T) {
	cases := []struct{ ref, host, rest string }{
		{"registry.k8s.io/pause:3.10.2", "registry.k8s.io", "pause:3.10.2"},
		{"registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io", "coredns/coredns:v1.14.6"},
		{"calico/node:v3.33.0", "docker.io", "calico/node:v3.33.0"},
		{"busybox", "docker.io", "library/busybox"},
		{"docker.io/library/busybox:1", "docker.io", "library/busybox:1"},
		{"localhost/x:1", "localhost", "x:1"},
		{"reg:5000/x:1", "reg:5000", "x:1"},
		{"ghcr.io/example/hello@sha256:abc", "ghcr.io", "example/hello@sha256:abc"},
	}
	for _, c := range cases {
		h, r := SplitImage(c.ref)
		if h != c.host || r != c.rest {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", c.ref, h, r, c.host, c.rest)
		}
	}
	p := &Plan{}
	if got := p.Image("calico/node:v1"); got != "calico/node:v1" {
		t.Errorf("without a registry Image changed the reference: %q", got)
	}
	p.Registry = &Registry{Prefix: "reg.test:5000/mirror"}
	if got := p.Image("registry.k8s.io/pause:3.10.2"); got != "reg.test:5000/mirror/pause:3.10.2" {
		t.Errorf("Image = %q", got)
	}
}

// TestImagesHonourTheRegistry: with a registry, no image of the plan keeps
// a public registry; the list covers kubeadm, Calico, Windows and the
// add-ons.
func TestImagesHonourTheRegistry(t *testing.T) {
	p := deriveFile(t, "../../examples/lab.yaml")
	names := map[string]bool{}
	for _, im := range p.Images {
		names[im.Name+"/"+im.OS] = true
	}
	for _, want := range []string{"kube-apiserver/linux", "etcd/linux", "coredns/linux", "pause/linux", "pause/windows",
		"calico/node/linux", "calico/node-windows/windows", "kube-proxy-windows/windows", "metrics-server/linux",
		"cert-manager-webhook/linux", "check-workload/linux", "check-workload/windows"} {
		if !names[want] {
			t.Errorf("plan images lack %s", want)
		}
	}
	src := strings.Replace(readFile(t, "../../examples/lab.yaml"), "  packages:", "  images: {registry: reg.test:5000}\n  packages:", 1)
	src = strings.Replace(src, "  kubeProxy: {mode: nftables}\n", "  kubeProxy: {mode: nftables}\n  images: {registry: reg.test:5000}\n", 1)
	q := derive(t, "lab.yaml", []byte(src))
	if len(q.Images) != len(p.Images) {
		t.Fatalf("%d images with a registry, %d without", len(q.Images), len(p.Images))
	}
	for _, im := range q.Images {
		if !strings.HasPrefix(im.Image, "reg.test:5000/") {
			t.Errorf("%s: %s is not from the registry", im.Name, im.Image)
		}
	}
	if q.SandboxImage != "reg.test:5000/pause:3.10.2" || !strings.HasPrefix(q.KubeProxy.WindowsImage, "reg.test:5000/sigwindowstools/") {
		t.Errorf("sandbox %q, kube-proxy-windows %q", q.SandboxImage, q.KubeProxy.WindowsImage)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
