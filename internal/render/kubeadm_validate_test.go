package render

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// kubeadmBinary returns kubeadm v1.37.2 built by hack/testenv. It skips
// under -short and fails when it is not built.
func kubeadmBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: needs the real kubeadm (hack/testenv)")
	}
	p, err := testenv.Binary("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeadmReleaseBinary returns kubeadm of another Kubernetes release built
// by hack/testenv (`hack/testenv/testenv build --version VERSION kubeadm`,
// which hack/test.sh runs). It skips under -short and fails when it is not
// built.
func kubeadmReleaseBinary(t *testing.T, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: needs the real kubeadm " + version + " (hack/testenv)")
	}
	p, err := testenv.ReleaseBinary(version, "kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeadmValidate runs the real `kubeadm config validate --config FILE`.
func kubeadmValidate(t *testing.T, kubeadm, name string, data []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubeadm, "config", "validate", "--config", path).CombinedOutput()
	if err != nil {
		t.Errorf("kubeadm config validate %s: %v\n%s\n--- file ---\n%s", name, err, out, data)
		return
	}
	if !bytes.Contains(out, []byte("ok")) {
		t.Errorf("kubeadm config validate %s printed no ok:\n%s", name, out)
	}
	// The only warning accepted is the npipe one (notes/testenv-facts.md):
	// kubeadm on Linux prepends unix:// to a Windows CRI socket.
	for _, line := range strings.Split(string(out), "\n") {
		isWarning := len(line) > 1 && line[0] == 'W' && line[1] >= '0' && line[1] <= '9' // klog: W1129 12:00:00 ...
		if isWarning && !strings.Contains(line, "npipe") {
			t.Errorf("kubeadm config validate %s warns: %s", name, line)
		}
	}
}

// testCertificateKey is a well-formed control-plane certificate key.
const testCertificateKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// fillSecrets does what apply does on the node: replace the placeholders.
func fillSecrets(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte(TokenPlaceholder), []byte(guideToken))
	b = bytes.ReplaceAll(b, []byte(CertificateKeyPlaceholder), []byte(testCertificateKey))
	return bytes.ReplaceAll(b, []byte(CACertHashPlaceholder), []byte(guideHash))
}

// Every rendered kubeadm file passes the real kubeadm's validation: the init
// configuration, and every join file both as rendered with --token and
// --ca-cert-hash and with its placeholders filled in.
func TestKubeadmValidate(t *testing.T) {
	kubeadm := kubeadmBinary(t)
	specs := map[string][]File{}
	for name, o := range map[string]Options{"placeholders": {}, "secrets": {Token: guideToken, CACertHash: guideHash, CertificateKey: testCertificateKey}} {
		for cluster, p := range map[string]*plan.Plan{"lab": labPlan(t), "ha": haPlan(t)} {
			files, err := Render(p, o)
			if err != nil {
				t.Fatal(err)
			}
			specs[cluster+"/"+name] = files
		}
	}
	n := 0
	for set, files := range specs {
		for _, f := range files {
			switch {
			case f.Path == "cluster/kubeadm-config.yaml":
			case strings.HasSuffix(f.Path, "/join.yaml"):
				if strings.HasSuffix(set, "placeholders") {
					if !bytes.Contains(f.Data, []byte(TokenPlaceholder)) {
						t.Errorf("%s: no placeholder", f.Path)
					}
					f.Data = fillSecrets(f.Data)
				} else if bytes.Contains(f.Data, []byte("__HYBRIDCTL_")) {
					t.Errorf("%s: a placeholder left although every secret was passed", f.Path)
				}
			default:
				continue
			}
			t.Run(set+"/"+f.Path, func(t *testing.T) { kubeadmValidate(t, kubeadm, f.Path, f.Data) })
			n++
		}
	}
	if n != 8+12 {
		t.Errorf("validated %d files, want 20 (lab: init + 3 joins; ha: init + 2 control-plane and 3 worker joins; twice)", n)
	}
}

// kubeadm rejects what it should: the test can fail.
func TestKubeadmValidateRejects(t *testing.T) {
	kubeadm := kubeadmBinary(t)
	files := mustRender(t, labPlan(t), Options{})
	join := files["nodes/k8s-lab-win-1/join.yaml"].Data
	path := filepath.Join(t.TempDir(), "join.yaml")
	if err := os.WriteFile(path, join, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubeadm, "config", "validate", "--config", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "token") {
		t.Errorf("kubeadm accepted a join file with placeholders: %v\n%s", err, out)
	}
}
