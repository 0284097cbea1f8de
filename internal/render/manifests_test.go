package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadManifests(t *testing.T) {
	ctx := context.Background()
	p := labPlan(t)
	calico := calicoDir(t)
	dir := t.TempDir()
	copyFile(t, filepath.Join(calico, "v3_projectcalico_org.yaml"), filepath.Join(dir, "v3_projectcalico_org.yaml"))

	if _, err := ReadManifests(ctx, dir, p); err == nil || !strings.Contains(err.Error(), "tigera-operator.yaml") {
		t.Fatalf("missing operator manifest: %v", err)
	}
	copyFile(t, filepath.Join(calico, "tigera-operator.yaml"), filepath.Join(dir, "tigera-operator.yaml"))
	m, err := ReadManifests(ctx, dir, p)
	if err != nil {
		t.Fatal(err)
	}
	files := mustRender(t, p, Options{Manifests: m})
	if f := files["cluster/calico/manifests/v3_projectcalico_org.yaml"]; len(f.Data) != len(m.CRDs) {
		t.Error("CRD manifest not copied")
	}
	if _, ok := files["cluster/calico/manifests/tigera-operator.yaml"]; !ok {
		t.Error("operator manifest not copied")
	}
	rb := string(files["runbook.md"].Data)
	if !strings.Contains(rb, "kubectl create -f cluster/calico/manifests/v3_projectcalico_org.yaml") || strings.Contains(rb, "raw.githubusercontent.com/projectcalico") {
		t.Error("the runbook does not use the local manifests")
	}

	// Swapped files: the operator manifest where the CRDs should be.
	bad := t.TempDir()
	copyFile(t, filepath.Join(calico, "tigera-operator.yaml"), filepath.Join(bad, "v3_projectcalico_org.yaml"))
	copyFile(t, filepath.Join(calico, "tigera-operator.yaml"), filepath.Join(bad, "tigera-operator.yaml"))
	if _, err := ReadManifests(ctx, bad, p); err == nil || !strings.Contains(err.Error(), "CRD manifest") {
		t.Fatalf("wrong CRD file accepted: %v", err)
	}
	// Empty file.
	if err := os.WriteFile(filepath.Join(bad, "v3_projectcalico_org.yaml"), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifests(ctx, bad, p); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file accepted: %v", err)
	}
}

func TestManifestsByURL(t *testing.T) {
	files := mustRender(t, labPlan(t), Options{})
	rb := string(files["runbook.md"].Data)
	for _, u := range []string{
		"https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/v3_projectcalico_org.yaml",
		"https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/tigera-operator.yaml",
	} {
		if !strings.Contains(rb, "kubectl create -f "+u) {
			t.Errorf("runbook lacks kubectl create -f %s", u)
		}
		if !strings.Contains(string(files["cluster/calico/README.md"].Data), u) {
			t.Errorf("calico README lacks %s", u)
		}
	}
}
