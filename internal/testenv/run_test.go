package testenv

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStopsEverything runs a command through Run (the "run" of
// hack/testenv/testenv), checks it saw a working cluster and its exit
// status came back, then checks that no process of the environment is left
// and its directory is gone.
func TestRunStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("testenv: skipped under -short: this test needs a real kube-apiserver and etcd")
	}
	var stdout, stderr bytes.Buffer
	script := `test -s "$KUBECONFIG" || exit 90
grep -q "server: $HYBRIDCTL_TESTENV_HOST" "$KUBECONFIG" || exit 91
echo "$KUBECONFIG"
exit 7`
	code := Run(context.Background(), []string{"--", "sh", "-c", script}, strings.NewReader(""), &stdout, &stderr)
	if code != 7 {
		t.Fatalf("Run exit status = %d, want 7 (the command's); stderr:\n%s", code, stderr.String())
	}
	kubeconfig := strings.TrimSpace(stdout.String())
	dir := filepath.Dir(kubeconfig)
	if !strings.Contains(dir, "hybridctl-testenv-") {
		t.Fatalf("KUBECONFIG %q is not in a testenv directory", kubeconfig)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("environment directory %s still exists after Run: %v", dir, err)
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes still running with %s in their command line: %v", dir, pids)
	}
}

func TestRunUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"--calico"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("Run without a command: status %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "usage: hack/testenv/testenv run") {
		t.Errorf("no usage on stderr: %q", stderr.String())
	}
	if code := Run(context.Background(), []string{"--no-such-flag", "--", "true"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("Run with an unknown flag: status %d, want 2", code)
	}
}

// processesMentioning returns the pids whose command line contains s
// (Linux /proc; elsewhere nothing).
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Logf("cannot list processes: %v", err)
		return nil
	}
	var pids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(s)) {
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return pids
}

// TestRunCache: run --cache keeps the loaded data; a second run with the
// same fixture starts from it (the object is there, nothing is loaded).
func TestRunCache(t *testing.T) {
	if testing.Short() {
		t.Skip("testenv: skipped under -short: this test needs a real kube-apiserver and etcd")
	}
	cache, fixtures := filepath.Join(t.TempDir(), "cache"), t.TempDir()
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: default\n"
	if err := os.WriteFile(filepath.Join(fixtures, "cm.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"(found: false)", "(found: true)"} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"--load", fixtures, "--cache", cache, "-v", "--",
			"sh", "-c", `kubectl get configmap kept -o name`}, strings.NewReader(""), &stdout, &stderr)
		if code != 0 || strings.TrimSpace(stdout.String()) != "configmap/kept" {
			t.Fatalf("run %d: exit %d, stdout %q; stderr:\n%s", i+1, code, stdout.String(), stderr.String())
		}
		loaded := strings.Contains(stderr.String(), "testenv: loaded "+fixtures)
		if !strings.Contains(stderr.String(), want) || loaded != (i == 0) {
			t.Fatalf("run %d: want %s and loaded %t; stderr:\n%s", i+1, want, i == 0, stderr.String())
		}
	}
}
