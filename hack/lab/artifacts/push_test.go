package artifacts

import (
	"io"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/spec"
)

func TestSelectImages(t *testing.T) {
	// plan -o json .images[] of examples/lab-linux.yaml, in its shape.
	planned := []PlanImage{
		{"kube-apiserver", "192.168.10.1:5000/kube-apiserver:v1.37.2", "linux"},
		{"kube-proxy", "192.168.10.1:5000/kube-proxy:v1.37.2", "linux"},
		{"coredns", "192.168.10.1:5000/coredns/coredns:v1.14.6", "linux"},
		{"pause", "192.168.10.1:5000/pause:3.10.2", "linux"},
		{"etcd", "192.168.10.1:5000/etcd:3.7.0-0", "linux"},
		{"calico/node", "192.168.10.1:5000/calico/node:v3.33.0", "linux"},
		{"kube-proxy-windows", "192.168.10.1:5000/sig-windows/kube-proxy:v1.37.2-calico-hostprocess", "windows"},
		{"hello", "192.168.10.1:5000/example/hello:1.2", "linux"},
		{"hello", "192.168.10.1:5000/example/hello@sha256:" + strings.Repeat("a", 64), "linux"},
	}
	var log strings.Builder
	todo, err := selectImages(planned, mustRelease(t, "v1.37.2"), &log)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range todo {
		got[w.ref] = w.def.Name
	}
	want := map[string]string{
		"192.168.10.1:5000/kube-apiserver:v1.37.2":                          "kube-apiserver",
		"192.168.10.1:5000/kube-proxy:v1.37.2":                              "kube-proxy",
		"192.168.10.1:5000/coredns/coredns:v1.14.6":                         "coredns",
		"192.168.10.1:5000/pause:3.10.2":                                    "pause",
		"192.168.10.1:5000/etcd:3.7.0-0":                                    "etcd",
		"192.168.10.1:5000/example/hello:1.2":                               "hello",
		"192.168.10.1:5000/example/hello@sha256:" + strings.Repeat("a", 64): "hello",
		"192.168.10.1:5000/hybridctl-lab/hybridctl:lab":                     "hybridctl",
		"192.168.10.1:5000/hybridctl-lab/podnet:lab":                        "podnet",
	}
	if len(got) != len(want) {
		t.Fatalf("selected %v, want %v", got, want)
	}
	for ref, def := range want {
		if got[ref] != def {
			t.Errorf("%s -> %q, want %q", ref, got[ref], def)
		}
	}
	for _, s := range []string{"calico/node", "Windows image"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("the log does not mention the skipped %s:\n%s", s, log.String())
		}
	}
	// An image the lab cannot build is an error naming it; a registry
	// port is not taken for a tag.
	_, err = selectImages([]PlanImage{{"metrics-server", "192.168.10.1:5000/metrics-server/metrics-server:v0.8.0", "linux"}}, mustRelease(t, "v1.37.2"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics-server:v0.8.0") {
		t.Errorf("an unknown image: %v", err)
	}
	_, err = selectImages([]PlanImage{{"x", "192.168.10.1:5000", "linux"}}, mustRelease(t, "v1.37.2"), io.Discard)
	if err == nil {
		t.Error("a reference with no repository was accepted")
	}
	if _, err := selectImages(nil, mustRelease(t, "v1.37.2"), io.Discard); err == nil {
		t.Error("an empty plan was accepted")
	}
}

func mustRelease(t *testing.T, v string) Release {
	t.Helper()
	r, err := LookupRelease(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSelectImagesOfARelease: a v1.36.3 plan's images (kubeadm 1.36's etcd
// and CoreDNS) are built for v1.36.3; with another release's binaries, or
// a tag the release does not build, the image is refused by name.
func TestSelectImagesOfARelease(t *testing.T) {
	v136 := []PlanImage{
		{"kube-apiserver", "192.168.36.1:5000/kube-apiserver:v1.36.3", "linux"},
		{"kube-controller-manager", "192.168.36.1:5000/kube-controller-manager:v1.36.3", "linux"},
		{"kube-scheduler", "192.168.36.1:5000/kube-scheduler:v1.36.3", "linux"},
		{"kube-proxy", "192.168.36.1:5000/kube-proxy:v1.36.3", "linux"},
		{"coredns", "192.168.36.1:5000/coredns/coredns:v1.14.2", "linux"},
		{"pause", "192.168.36.1:5000/pause:3.10.2", "linux"},
		{"etcd", "192.168.36.1:5000/etcd:3.6.8-0", "linux"},
	}
	todo, err := selectImages(v136, mustRelease(t, "v1.36.3"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != len(v136)+len(ExtraImages) {
		t.Fatalf("selected %d images, want %d", len(todo), len(v136)+len(ExtraImages))
	}
	_, err = selectImages(v136, mustRelease(t, "v1.37.2"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver:v1.36.3") || !strings.Contains(err.Error(), "kube-apiserver:v1.37.2") {
		t.Errorf("v1.36.3 images with v1.37.2's binaries: %v", err)
	}
	for _, bad := range []PlanImage{
		{"etcd", "192.168.36.1:5000/etcd:3.7.0-0", "linux"},  // kubeadm 1.37's etcd
		{"etcd", "192.168.36.1:5000/etcd:3.6.80-0", "linux"}, // a near miss
		{"etcd", "192.168.36.1:5000/etcd", "linux"},          // no tag
		{"coredns", "192.168.36.1:5000/coredns/coredns:v1.14.6", "linux"},
		{"kube-proxy", "192.168.36.1:5000/kube-proxy:v1.36.2", "linux"},
	} {
		_, err := selectImages([]PlanImage{bad}, mustRelease(t, "v1.36.3"), io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.Image) {
			t.Errorf("%s for v1.36.3: %v", bad.Image, err)
		}
	}
}

// TestReleasesMatchPlan: for each release the lab builds, hybridctl's plan
// of a spec at that version lists exactly the release's Kubernetes, etcd
// and CoreDNS tags (plan takes them from kubeadm's constants, which the
// render tests check against the real kubeadm of each version), so lab
// push never refuses a plan it should build.
func TestReleasesMatchPlan(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Releases() {
		p := labPlan(t, root, func(s *spec.ClusterSpec) { s.KubernetesVersion = r.Kubernetes })
		var planned []PlanImage
		for _, im := range p.Images {
			planned = append(planned, PlanImage{im.Name, im.Image, im.OS})
		}
		if _, err := selectImages(planned, r, io.Discard); err != nil {
			t.Errorf("%s: %v", r.Kubernetes, err)
		}
		for _, want := range []string{"/etcd:" + r.Etcd + "-0", "/coredns/coredns:" + r.CoreDNS, "/kube-apiserver:" + r.Kubernetes} {
			found := false
			for _, im := range p.Images {
				found = found || strings.HasSuffix(im.Image, want)
			}
			if !found {
				t.Errorf("%s: plan lists no image ending in %s", r.Kubernetes, want)
			}
		}
	}
}
