package bundle

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// TestArtifactsRefuseURLsOutOfTheirRelease: a plan changed by hand whose
// Calico or add-on URL leaves its release, also only once its dot segments
// are removed, gets no artifact list; a version holding "/../" is one.
func TestArtifactsRefuseURLsOutOfTheirRelease(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*plan.Plan)
		want string
	}{
		"operator in another repository": {func(p *plan.Plan) {
			p.Calico.OperatorManifestURL = plan.CalicoURLPrefix + "v3.33.0/manifests/../../../../evil/repo/main/tigera-operator.yaml"
		}, "the Tigera operator manifest"},
		"a calico version with dot segments": {func(p *plan.Plan) {
			p.Calico.Version = "v3.33.0-x/../../../evil/repo/main"
			p.Versions.Calico = p.Calico.Version
		}, "spec.calico.version"},
		"add-on from another release": {func(p *plan.Plan) {
			p.Addons = []plan.Addon{{Name: plan.AddonMetricsServer, Version: "v0.9.0", ManifestURL: plan.MetricsServerURLPrefix + "v0.9.0/../v0.1.0/components.yaml"}}
		}, "add-on metrics-server"},
	} {
		p := labPlan(t)
		c.edit(p)
		if arts, err := Artifacts(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %d artifacts, error %v; want an error saying %s", name, len(arts), err, c.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	arts := mustArtifacts(t)
	for _, a := range arts {
		if err := CheckURL(a.URL); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		if a.ChecksumURL != "" {
			if err := CheckURL(a.ChecksumURL); err != nil {
				t.Errorf("%s checksum: %v", a.Name, err)
			}
		}
	}
	for bad, want := range map[string]string{
		"https://github.com/containerd/containerd/releases/download/v2.2.2/../../../../evil/x/releases/download/v1/x.tgz": "dot segment",
		"https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/%2e%2e/%2e%2e/kubelet":                                         "percent-encoding",
		"https://evil.example/release/kubelet":                                                                            "none of the upstream sites",
		"https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet?x=1":                                                   "query",
		"https://dl.k8s.io/other/kubelet":                                                                                 "leaves /release/",
	} {
		if err := CheckURL(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%q) = %v; want an error saying %s", bad, err, want)
		}
	}
}

// TestMirrorURLStaysUnderTheMirror: the upstream path goes under
// MIRROR/HOST/ and a dot segment in it cannot climb out.
func TestMirrorURLStaysUnderTheMirror(t *testing.T) {
	if _, err := MirrorURL("https://mirror.example.internal/site", "https://dl.k8s.io/release/../../../other-site/x"); err == nil || !strings.Contains(err.Error(), "--mirror") {
		t.Errorf("a dot segment climbed out of the mirror: %v", err)
	}
	if got, err := MirrorURL("https://mirror.example.internal/site", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet"); err != nil || got != "https://mirror.example.internal/site/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet" {
		t.Errorf("MirrorURL = %q, %v", got, err)
	}
}

// TestDownloadRefusesForeignURLs: an artifact list made by hand with a URL
// outside the upstream sites is refused before any request.
func TestDownloadRefusesForeignURLs(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	defer srv.Close()
	arts := mustArtifacts(t)[:1]
	arts[0].URL = "https://github.com/containerd/containerd/releases/download/v2.2.2/../../../../evil/x/releases/download/v1/x.tgz"
	_, err := Download(context.Background(), filepath.Join(t.TempDir(), "b"), arts, DownloadOptions{Mirror: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "dot segment") {
		t.Errorf("err = %v; want a refused URL", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests made", n)
	}
}
