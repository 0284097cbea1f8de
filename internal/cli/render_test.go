package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderCommand(t *testing.T) {
	const offline = "../spec/testdata/valid/offline.yaml"
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	token := "6w1r8t.p3k9m2x7c5v0b4n1"
	hash := "sha256:7b2e9d4a1c6f8b3e0d5a2c7f9e4b1d6a8c3f0e5b2d7a9c4e1f6b8d3a0c5e2f7b"

	r := run(t, "", "render", "-f", lab, "-o", out)
	if r.code != 0 || !strings.Contains(r.stdout, "runbook.md") {
		t.Fatalf("render lab: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "cluster", "kubeadm-config.yaml")); err != nil {
		t.Fatal(err)
	}
	// The runbook's command that renders again names this directory.
	if rb, err := os.ReadFile(filepath.Join(out, "runbook.md")); err != nil || !strings.Contains(string(rb), "--output-dir "+out+" --force --token-file -") || strings.Contains(string(rb), "THIS_DIR") {
		t.Errorf("runbook.md does not name %s (%v)", out, err)
	}
	// Again without --force: usage error, nothing changed.
	if r := run(t, "", "render", "-f", lab, "-o", out); r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("non-empty DIR: exit %d\n%s", r.code, r.stderr)
	}
	// With --force and the secrets: join files 0600, secrets never printed.
	r = run(t, "", "render", "-f", lab, "-o", out, "--force", "--token", token, "--ca-cert-hash", hash)
	if r.code != 0 {
		t.Fatalf("--force: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Error("the token was printed")
	}
	fi, err := os.Stat(filepath.Join(out, "nodes", "k8s-lab-win-1", "join.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("join.yaml: %v %v", fi.Mode(), err)
	}
	// Spec from standard input.
	b, err := os.ReadFile(lab)
	if err != nil {
		t.Fatal(err)
	}
	// A directory name with a space is quoted in the runbook.
	spaced := filepath.Join(dir, "from stdin")
	if r := run(t, string(b), "render", "-f", "-", "-o", spaced); r.code != 0 {
		t.Fatalf("stdin: exit %d\n%s", r.code, r.stderr)
	}
	if rb, err := os.ReadFile(filepath.Join(spaced, "runbook.md")); err != nil || !strings.Contains(string(rb), "--output-dir '"+spaced+"' --force") {
		t.Errorf("runbook.md does not name %q quoted (%v)", spaced, err)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		in   string
	}{
		{"no --output-dir", []string{"render", "-f", lab}, 2, "--output-dir is required"},
		{"no -f", []string{"render", "-o", filepath.Join(dir, "x")}, 2, "there is no ./cluster.yaml"},
		{"bad token", []string{"render", "-f", lab, "-o", filepath.Join(dir, "x"), "--token", "nope"}, 2, "--token"},
		{"bad hash", []string{"render", "-f", lab, "-o", filepath.Join(dir, "x"), "--ca-cert-hash", "md5:00"}, 2, "--ca-cert-hash"},
		{"sha without url", []string{"render", "-f", lab, "-o", filepath.Join(dir, "x"), "--prepare-node-sha256", "AB"}, 2, "needs its --*-url"},
		{"missing spec", []string{"render", "-f", filepath.Join(dir, "nope.yaml"), "-o", filepath.Join(dir, "x")}, 3, "no such file"},
		{"missing manifests", []string{"render", "-f", lab, "-o", filepath.Join(dir, "x"), "--manifests-dir", dir}, 1, "v3_projectcalico_org.yaml"},
		// offline.yaml installs from a bundle: a script URL would be ignored.
		{"script url with a bundle", []string{"render", "-f", offline, "-o", filepath.Join(dir, "x"), "--install-containerd-url", "https://mirror.example.com/Install-Containerd.ps1"}, 2, offline + ": --install-containerd-url has no effect with packages.source: bundle"},
		{"prepare url with a bundle", []string{"render", "-f", offline, "-o", filepath.Join(dir, "x"), "--prepare-node-url", "https://mirror.example.com/PrepareNode.ps1"}, 2, "--prepare-node-url has no effect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, "", c.args...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.in) {
				t.Errorf("exit %d (want %d), output lacks %q?\n%s%s", r.code, c.code, c.in, r.stdout, r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed render left its output directory")
	}
	// From the internet, the mirror is what prepare.ps1 downloads.
	mirror := "https://mirror.example.com/Install-Containerd.ps1"
	up := filepath.Join(dir, "upstream")
	if r := run(t, "", "render", "-f", lab, "-o", up, "--install-containerd-url", mirror); r.code != 0 {
		t.Fatalf("upstream with a mirror: exit %d\n%s", r.code, r.stderr)
	}
	ps1, err := os.ReadFile(filepath.Join(up, "nodes", "k8s-lab-win-1", "prepare.ps1"))
	if err != nil || !strings.Contains(string(ps1), mirror) {
		t.Errorf("prepare.ps1 does not download %s (%v)", mirror, err)
	}
}
