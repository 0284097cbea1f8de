package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	testToken = "6w1r8t.p3k9m2x7c5v0b4n1"
	testHash  = "sha256:7b2e9d4a1c6f8b3e0d5a2c7f9e4b1d6a8c3f0e5b2d7a9c4e1f6b8d3a0c5e2f7b"
	testKey   = "4f0c2a9e1d7b3c5a8e6f0d2b4c9a1e7f3d5b8c0a2e4f6d9b1c3a5e7f0d2b4c6a"
)

// TestRenderJoinSecrets: the token and CA hash go together (one alone is a
// usage error, so no join file holds a real token beside a placeholder); the secrets come from a file, standard input or the
// environment without a warning, and from argv with one.
func TestRenderJoinSecrets(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(testKey), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	outDir := func() string { n++; return filepath.Join(dir, "out-"+string(rune('a'+n))) }
	for _, c := range []struct {
		name  string
		stdin string
		env   map[string]string
		args  []string
		code  int
		want  string // in stderr
		warn  bool   // an argv warning expected
	}{
		{name: "token without hash", args: []string{"--token", testToken}, code: 2, want: "go together", warn: true},
		{name: "hash without token", args: []string{"--ca-cert-hash", testHash}, code: 2, want: "go together"},
		{name: "token file without hash", args: []string{"--token-file", tokenFile}, code: 2, want: "go together"},
		{name: "env token without hash", env: map[string]string{envJoinToken: testToken}, code: 2, want: "go together"},
		{name: "both in argv", args: []string{"--token", testToken, "--ca-cert-hash", testHash}, code: 0, warn: true},
		{name: "token file", args: []string{"--token-file", tokenFile, "--ca-cert-hash", testHash}, code: 0},
		{name: "token on stdin", stdin: testToken + "\n", args: []string{"--token-file", "-", "--ca-cert-hash", testHash}, code: 0},
		{name: "token from env", env: map[string]string{envJoinToken: testToken}, args: []string{"--ca-cert-hash", testHash}, code: 0},
		{name: "key file", args: []string{"--token-file", tokenFile, "--ca-cert-hash", testHash, "--certificate-key-file", keyFile}, code: 0},
		{name: "key from env", env: map[string]string{envCertificateKey: testKey}, args: []string{"--token-file", tokenFile, "--ca-cert-hash", testHash}, code: 0},
		{name: "key in argv", args: []string{"--token-file", tokenFile, "--ca-cert-hash", testHash, "--certificate-key", testKey}, code: 0, warn: true},
		{name: "token twice", args: []string{"--token", testToken, "--token-file", tokenFile, "--ca-cert-hash", testHash}, code: 2, want: "use one"},
		{name: "stdin twice", stdin: testToken, args: []string{"--token-file", "-", "--certificate-key-file", "-", "--ca-cert-hash", testHash}, code: 2, want: "already used"},
		{name: "stdin and -f -", stdin: testToken, args: []string{"-f", "-", "--token-file", "-", "--ca-cert-hash", testHash}, code: 2, want: "already used"},
		{name: "empty token file", args: []string{"--token-file", empty, "--ca-cert-hash", testHash}, code: 2, want: "empty"},
		{name: "missing token file", args: []string{"--token-file", filepath.Join(dir, "nope"), "--ca-cert-hash", testHash}, code: 3, want: "no such file"},
		{name: "bad token in file", stdin: "not-a-token", args: []string{"--token-file", "-", "--ca-cert-hash", testHash}, code: 2, want: "not a bootstrap token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envJoinToken, "")
			t.Setenv(envCertificateKey, "")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			out := outDir()
			args := append([]string{"render", "-o", out}, c.args...)
			if !strings.Contains(strings.Join(c.args, " "), "-f -") {
				args = append(args, "-f", lab)
			}
			r := run(t, c.stdin, args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", r.code, c.code, c.want, r.stderr)
			}
			if got := strings.Contains(r.stderr, "visible to other users"); got != c.warn {
				t.Errorf("argv warning %v, want %v:\n%s", got, c.warn, r.stderr)
			}
			for _, s := range []string{testToken, testKey} {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Error("a secret was printed")
				}
			}
			if c.code != 0 {
				if _, err := os.Stat(out); err == nil {
					t.Error("a refused render wrote its directory")
				}
				return
			}
			join, err := os.ReadFile(filepath.Join(out, "nodes", "k8s-lab-win-1", "join.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(join), testToken) || !strings.Contains(string(join), testHash) || strings.Contains(string(join), "__HYBRIDCTL_") {
				t.Errorf("join.yaml does not hold both secrets:\n%s", join)
			}
		})
	}
}

// TestREADMERenderExample runs the README's render-with-secrets example as
// written: the lines are read from README.md, the ssh part of the pipe is
// replaced by what kubeadm token create prints.
func TestREADMERenderExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, then find the commands.
	text := strings.ReplaceAll(string(readme), "\\\n", " ")
	var initCmd, first, second string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "#"); i > 0 {
			l = strings.TrimSpace(l[:i])
		}
		switch {
		case strings.HasPrefix(l, "hybridctl init "):
			initCmd = l
		case strings.HasPrefix(l, "hybridctl render ") && first == "":
			first = l
		case strings.Contains(l, "| hybridctl render "):
			second = l
		}
	}
	if initCmd == "" || first == "" || second == "" {
		t.Fatalf("README lacks the init/render examples: %q %q %q", initCmd, first, second)
	}
	producer, consumer, _ := strings.Cut(second, "|")
	if !strings.Contains(producer, "kubeadm token create") {
		t.Fatalf("the README's secret no longer comes from kubeadm token create: %q", producer)
	}
	t.Chdir(t.TempDir())
	t.Setenv(envJoinToken, "")
	for _, c := range []struct{ cmd, stdin string }{{initCmd, ""}, {first, ""}, {consumer, testToken + "\n"}} {
		args := strings.Fields(strings.TrimSpace(c.cmd))[1:]
		r := run(t, c.stdin, args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.cmd, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "visible to other users") {
			t.Errorf("%s: the README's example puts a secret in argv", c.cmd)
		}
	}
	join, err := os.ReadFile(filepath.Join("out", "nodes", "k8s-lab-win-1", "join.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(join), testToken) || strings.Contains(string(join), "__HYBRIDCTL_") {
		t.Errorf("join.yaml after the README's example:\n%s", join)
	}
}

// TestRenderForceRefusesForeignFiles: through the CLI, a NOTES.md added to
// a previous render makes --force exit 2 naming it, and the file stays.
func TestRenderForceRefusesForeignFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if r := run(t, "", "render", "-f", lab, "-o", out); r.code != 0 {
		t.Fatalf("render: exit %d\n%s", r.code, r.stderr)
	}
	notes := filepath.Join(out, "NOTES.md")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "render", "-f", lab, "-o", out, "--force")
	if r.code != 2 || !strings.Contains(r.stderr, "NOTES.md") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Fatalf("NOTES.md: %q %v", b, err)
	}
}
