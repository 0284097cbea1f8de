package artifacts

import (
	"io"
	"strings"
	"testing"
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
	todo, err := selectImages(planned, &log)
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
	_, err = selectImages([]PlanImage{{"metrics-server", "192.168.10.1:5000/metrics-server/metrics-server:v0.8.0", "linux"}}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics-server:v0.8.0") {
		t.Errorf("an unknown image: %v", err)
	}
	_, err = selectImages([]PlanImage{{"x", "192.168.10.1:5000", "linux"}}, io.Discard)
	if err == nil {
		t.Error("a reference with no repository was accepted")
	}
	if _, err := selectImages(nil, io.Discard); err == nil {
		t.Error("an empty plan was accepted")
	}
}
