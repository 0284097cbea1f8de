package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

type kcRun struct {
	code        int
	out, errOut string
}

func kcRunCLI(t *testing.T, stdin string, args ...string) kcRun {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return kcRun{code, out.String(), errOut.String()}
}

// noSecrets fails when any output holds key material in raw, base64 or PEM-line form.
func noSecrets(t *testing.T, r kcRun, keys ...[]byte) {
	t.Helper()
	all := r.out + r.errOut
	for _, k := range keys {
		forms := []string{string(k), base64.StdEncoding.EncodeToString(k), strings.Trim(fmt.Sprint(k[:16]), "[]")}
		for _, line := range strings.Split(string(k), "\n") {
			if len(line) > 20 && !strings.HasPrefix(line, "-----") {
				forms = append(forms, line)
			}
		}
		for _, f := range forms {
			if strings.Contains(all, f) {
				t.Fatalf("output contains key material:\n%s", all)
			}
		}
	}
}

func TestKubeconfigCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("KUBECONFIG", "")
	prod, lab, other := kt.StartFakeCluster(t, "prod"), kt.StartFakeCluster(t, "lab"), kt.StartFakeCluster(t, "other")
	keys := [][]byte{prod.Admin.Key, lab.Admin.Key, other.Admin.Key}
	target := filepath.Join(dir, "home", ".kube", "config")
	kt.WriteFile(t, target, prod.AdminConf(), 0o600)
	labConf := kt.WriteFile(t, filepath.Join(dir, "lab.conf"), lab.AdminConf(), 0o600)
	otherConf := kt.WriteFile(t, filepath.Join(dir, "other.conf"), other.AdminConf(), 0o600)
	wrongCA := kt.WriteFile(t, filepath.Join(dir, "wrong-ca.conf"), kt.AdminConf(lab.URL(), other.CA.CertPEM, lab.Admin.Cert, lab.Admin.Key), 0o600)
	// Nothing listens on port 9 of loopback.
	gone := kt.WriteFile(t, filepath.Join(dir, "gone.conf"), kt.AdminConf("https://127.0.0.1:9", lab.CA.CertPEM, lab.Admin.Cert, lab.Admin.Key), 0o600)
	garbage := kt.WriteFile(t, filepath.Join(dir, "garbage.conf"), []byte("users: [{name: u}, {name: u, user: {client-key-data: "+base64.StdEncoding.EncodeToString(lab.Admin.Key)+"}}]\n"), 0o600)

	tests := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		out, err string
	}{
		{"import with verify", "", []string{"kubeconfig", "import", labConf, "--name", "lab", "--verify"}, 0, "Verified: server v1.37.2-lab", ""},
		{"import again", "", []string{"kubeconfig", "import", labConf, "--name", "lab"}, 0, "nothing changed", ""},
		{"same name, other cluster", "", []string{"kubeconfig", "import", otherConf, "--name", "lab"}, 1, "", "refusing to import"},
		{"verify with a foreign CA", "", []string{"kubeconfig", "import", wrongCA, "--name", "wrong", "--verify"}, 1, "", "not signed by the imported CA"},
		{"verify an unreachable server", "", []string{"kubeconfig", "import", gone, "--name", "gone", "--verify"}, 3, "", "GET https://127.0.0.1:9/version"},
		{"invalid source", "", []string{"kubeconfig", "import", garbage, "--name", "g"}, 1, "", garbage + ": not a valid kubeconfig"},
		{"missing source", "", []string{"kubeconfig", "import", filepath.Join(dir, "nope"), "--name", "n"}, 3, "", "nope"},
		{"no --name", "", []string{"kubeconfig", "import", labConf}, 2, "", "--name is required"},
		{"bad --name", "", []string{"kubeconfig", "import", labConf, "--name", "a b"}, 2, "", "--name"},
		{"no file", "", []string{"kubeconfig", "import", "--name", "x"}, 2, "", "exactly one FILE"},
		{"bad -o", "", []string{"kubeconfig", "list", "-o", "yaml"}, 2, "", "is not an output format: want table, json"},
		{"stdin", string(other.AdminConf()), []string{"kubeconfig", "import", "-", "--name", "other", "--set-current"}, 0, "Current context: other", ""},
		{"list", "", []string{"kubeconfig", "list"}, 0, "* ", ""},
		{"remove unknown", "", []string{"kubeconfig", "remove", "nope"}, 2, "", `no context "nope"`},
		{"remove", "", []string{"kubeconfig", "remove", "other"}, 0, "removed context other, cluster other, user other-admin", ""},
		{"help teaches the trap", "", []string{"kubeconfig", "import", "--help"}, 0, "the first file to define a name wins", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := kcRunCLI(t, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.out, r.errOut)
			}
			if !strings.Contains(r.out, tc.out) || !strings.Contains(r.errOut, tc.err) {
				t.Errorf("want stdout ∋ %q, stderr ∋ %q\nstdout:\n%s\nstderr:\n%s", tc.out, tc.err, r.out, r.errOut)
			}
			noSecrets(t, r, keys...)
		})
	}

	r := kcRunCLI(t, "", "kubeconfig", "list", "-o", "json")
	var lr struct {
		CurrentContext string `json:"currentContext"`
		Contexts       []struct {
			Name     string          `json:"name"`
			Server   string          `json:"server"`
			Imported json.RawMessage `json:"imported"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(r.out), &lr); err != nil || r.code != 0 {
		t.Fatalf("list -o json: exit %d, %v\n%s", r.code, err, r.out)
	}
	got := map[string]string{}
	for _, c := range lr.Contexts {
		got[c.Name] = c.Server
		if (c.Name == "lab") != (len(c.Imported) > 0) {
			t.Errorf("context %s: imported %s", c.Name, c.Imported)
		}
	}
	if len(got) != 2 || got["lab"] != lab.URL() || got["kubernetes-admin@kubernetes"] != prod.URL() {
		t.Errorf("list: %v", got)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("target mode: %v %v", fi.Mode(), err)
	}
}

// TestKubeconfigListWarnsAboutTheTrap: with two admin.conf files in
// KUBECONFIG, list says which entries client-go ignores.
func TestKubeconfigListWarnsAboutTheTrap(t *testing.T) {
	dir := t.TempDir()
	a, b := kt.StartFakeCluster(t, "a"), kt.StartFakeCluster(t, "b")
	fa := kt.WriteFile(t, filepath.Join(dir, "a.conf"), a.AdminConf(), 0o600)
	fb := kt.WriteFile(t, filepath.Join(dir, "b.conf"), b.AdminConf(), 0o600)
	t.Setenv("KUBECONFIG", fa+string(filepath.ListSeparator)+fb)
	r := kcRunCLI(t, "", "kubeconfig", "list")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	want := fmt.Sprintf(`cluster "kubernetes" in %s is ignored: %s defines the same name differently`, fb, fa)
	if !strings.Contains(r.errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
	}
	noSecrets(t, r, a.Admin.Key, b.Admin.Key)
}

// TestKubeconfigImportWarnsWhatItHides: importing into the first file of
// $KUBECONFIG hides a later file's entries of the same names; say so.
func TestKubeconfigImportWarnsWhatItHides(t *testing.T) {
	dir := t.TempDir()
	a, b := kt.StartFakeCluster(t, "a"), kt.StartFakeCluster(t, "b")
	first := filepath.Join(dir, "config")
	later := kt.WriteFile(t, filepath.Join(dir, "later"), a.AdminConf(), 0o600)
	t.Setenv("KUBECONFIG", first+string(filepath.ListSeparator)+later)
	src := kt.WriteFile(t, filepath.Join(dir, "b.conf"), b.AdminConf(), 0o600)
	r := kcRunCLI(t, "", "kubeconfig", "import", src, "--name", "kubernetes")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	want := fmt.Sprintf(`cluster "kubernetes" in %s is hidden by the imported one`, later)
	if !strings.Contains(r.errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
	}
	noSecrets(t, r, a.Admin.Key, b.Admin.Key)
}

// TestKubeconfigImportRefusesPlugins: through the CLI, a source from
// standard input whose user runs an exec plugin is refused with exit 1 and
// the plugin never runs; --allow-exec stores it (exit 0) with a warning.
func TestKubeconfigImportRefusesPlugins(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", "")
	c := kt.StartFakeCluster(t, "exec")
	marker := filepath.Join(dir, "plugin-ran")
	script := kt.WriteFile(t, filepath.Join(dir, "plugin.sh"), []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o700)
	conf := strings.Replace(string(c.AdminConf()), "    client-certificate-data:", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: "+script+", interactiveMode: Never}\n    client-certificate-data:", 1)
	target := filepath.Join(dir, "config")
	r := kcRunCLI(t, conf, "kubeconfig", "import", "-", "--name", "lab", "--verify", "--kubeconfig", target)
	if r.code != 1 || !strings.Contains(r.errOut, script) || !strings.Contains(r.errOut, "--allow-exec") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.errOut)
	}
	r = kcRunCLI(t, conf, "kubeconfig", "import", "-", "--name", "lab", "--allow-exec", "--kubeconfig", target)
	if r.code != 0 || !strings.Contains(r.errOut, "Warning:") || !strings.Contains(r.errOut, script) {
		t.Fatalf("--allow-exec: exit %d, stderr:\n%s", r.code, r.errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the CLI ran the plugin")
	}
}
