package render

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestCheckWorkloadsImageAndPullSecret: both check workloads run
// spec.checkWorkloads.image with agnhost's server arguments and, when set,
// the pull Secret; the runbook creates that Secret from a file (never a
// password in argv) in both namespaces. Without it nothing names a Secret.
func TestCheckWorkloadsImageAndPullSecret(t *testing.T) {
	deployment := func(t *testing.T, files map[string]File, path string) appsv1.Deployment {
		t.Helper()
		f, ok := files[path]
		if !ok {
			t.Fatalf("%s not rendered", path)
		}
		for _, doc := range strings.Split(string(f.Data), "\n---\n") {
			var d appsv1.Deployment
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if d.Kind == "Deployment" {
				return d
			}
		}
		t.Fatalf("%s has no Deployment", path)
		return appsv1.Deployment{}
	}
	for _, secret := range []string{"", "regcred"} {
		c := labCluster(t)
		c.Spec.CheckWorkloads.Image = "registry.example.internal/tools/agnhost:2.66.1"
		c.Spec.CheckWorkloads.ImagePullSecret = secret
		files := mustRender(t, planOf(t, c), Options{})
		for _, path := range []string{"workloads/hello.yaml", "workloads/aspnetapp.yaml"} {
			d := deployment(t, files, path)
			ps := d.Spec.Template.Spec
			if got := ps.Containers[0].Image; got != "registry.example.internal/tools/agnhost:2.66.1" {
				t.Errorf("%s: image %s", path, got)
			}
			if got := strings.Join(ps.Containers[0].Args, " "); got != "netexec --http-port=8080" {
				t.Errorf("%s: args %q", path, got)
			}
			switch {
			case secret == "" && len(ps.ImagePullSecrets) != 0:
				t.Errorf("%s: imagePullSecrets %v without a Secret in the spec", path, ps.ImagePullSecrets)
			case secret != "" && (len(ps.ImagePullSecrets) != 1 || ps.ImagePullSecrets[0].Name != secret):
				t.Errorf("%s: imagePullSecrets %v, want %s", path, ps.ImagePullSecrets, secret)
			}
		}
		rb := string(files["runbook.md"].Data)
		for _, ns := range []string{"demo", "win-demo"} {
			line := "kubectl -n " + ns + " create secret generic regcred"
			if got := strings.Contains(rb, line); got != (secret != "") {
				t.Errorf("secret %q: runbook has %q: %v", secret, line, got)
			}
		}
		if strings.Contains(rb, "--docker-password") || strings.Contains(rb, "ghcr") {
			t.Errorf("the runbook still asks for a registry password in argv or names ghcr.io")
		}
	}
}
