package kubeclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeconfigFileErrors: an empty kubeconfig "has no contexts" (it is
// there), a missing one is not found, and a cluster spec given as the
// kubeconfig is named as such.
func TestKubeconfigFileErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	spec := filepath.Join(dir, "cluster.yaml")
	kubeconfigLike := filepath.Join(dir, "other.yaml")
	for path, data := range map[string]string{
		empty:          "",
		spec:           "apiVersion: hybridctl.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\n",
		kubeconfigLike: "apiVersion: example.dev/v9\nkind: Other\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restConfig := func(path string) error {
		f := NewFlags()
		f.Config.KubeConfig = &path
		_, err := f.RESTConfig(nil)
		return err
	}
	var nk *NoKubeconfigError
	if err := restConfig(empty); !errors.As(err, &nk) || !strings.HasPrefix(err.Error(), empty+" has no contexts (an empty kubeconfig)") {
		t.Errorf("empty: %v", err)
	}
	if err := restConfig(filepath.Join(dir, "missing")); err == nil || strings.Contains(err.Error(), "has no contexts") {
		t.Errorf("missing: %v", err)
	}
	if err := restConfig(spec); err == nil || !strings.HasPrefix(err.Error(), spec+" is a hybridctl cluster spec, not a kubeconfig: pass it with -f") {
		t.Errorf("spec: %v", err)
	}
	if err := restConfig(kubeconfigLike); err == nil || strings.Contains(err.Error(), "cluster spec") {
		t.Errorf("another kind: %v", err)
	}
}
