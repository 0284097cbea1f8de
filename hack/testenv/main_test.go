package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVersionMatchesGoMod(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*(require\s+)?k8s\.io/kubernetes (v\S+)`)
	m := re.FindSubmatch(gomod)
	if m == nil || string(m[2]) != version {
		t.Fatalf("go.mod requires k8s.io/kubernetes %q, the builder says %q", m, version)
	}
	// Every staging module is replaced at the matching v0 version.
	staging := "v0." + strings.TrimPrefix(version, "v1.")
	for _, line := range regexp.MustCompile(`(?m)^\s*k8s\.io/(\S+) => k8s\.io/\S+ (\S+)$`).FindAllSubmatch(gomod, -1) {
		if string(line[2]) != staging {
			t.Errorf("replace k8s.io/%s => %s, want %s", line[1], line[2], staging)
		}
	}
}

func TestLdflagsSetVersion(t *testing.T) {
	got := ldflags()
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v1.37.2",
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=37",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ldflags %q lack %q", got, want)
		}
	}
}

func TestBuildReusesStampedBinary(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HYBRIDCTL_TESTENV_BIN", dir)
	bin := filepath.Join(dir, "kubeadm")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+".stamp", []byte(stamp("k8s.io/kubernetes/cmd/kubeadm", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	// PATH without go: a rebuild would fail, so success means reuse.
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"build", "kubeadm"}, &stdout, &stderr); err != nil {
		t.Fatalf("build with a current stamp: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cached") {
		t.Errorf("build did not report the cache: %q", stderr.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"path", "kubeadm"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(stdout.String()) != bin {
		t.Errorf("path kubeadm = %q, want %q", stdout.String(), bin)
	}

	// A stale stamp (another version or Go) means a rebuild, which fails
	// here without go on PATH — and leaves the old binary in place.
	if err := os.WriteFile(bin+".stamp", []byte("version=v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"build", "kubeadm"}, &stdout, &stderr); err == nil {
		t.Fatal("build with a stale stamp and no go: want an error")
	}
	if b, err := os.ReadFile(bin); err != nil || string(b) != "#!/bin/sh\n" {
		t.Errorf("failed rebuild touched the binary: %q %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".kubeadm.build-*"))
	if len(left) > 0 {
		t.Errorf("failed rebuild left temporary files: %v", left)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"path"}, {"path", "etcdd"}, {"build", "etcdd"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("run %q: err = %v, want a usage error", args, err)
		}
	}
}

func TestStaticBuildsAreSeparate(t *testing.T) {
	t.Setenv("HYBRIDCTL_TESTENV_BIN", "")
	root := t.TempDir()
	t.Setenv("HYBRIDCTL_TESTENV_CACHE", root)
	dyn, err := binDir(false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := binDir(true)
	if err != nil {
		t.Fatal(err)
	}
	if dyn != filepath.Join(root, version) || st != filepath.Join(root, version, "static") {
		t.Fatalf("binDir: %s and %s under %s", dyn, st, root)
	}
	// A dynamic build's stamp must not satisfy a static build, or the
	// lab would put a cgo binary into a distroless image.
	if stamp("k8s.io/kubernetes/cmd/kubelet", false) == stamp("k8s.io/kubernetes/cmd/kubelet", true) {
		t.Fatal("static and dynamic stamps are equal")
	}
	// A dynamic kubelet with a current stamp in the static directory's
	// place is rebuilt; with PATH lacking go, that rebuild fails.
	if err := os.MkdirAll(st, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(st, "kubelet")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+".stamp", []byte(stamp("k8s.io/kubernetes/cmd/kubelet", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"build", "--static", "kubelet"}, &stdout, &stderr); err == nil {
		t.Fatalf("a dynamic stamp was accepted for a static build:\n%s", stderr.String())
	}
	if err := os.WriteFile(bin+".stamp", []byte(stamp("k8s.io/kubernetes/cmd/kubelet", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if err := run(context.Background(), []string{"build", "--static", "kubelet"}, &stdout, &stderr); err != nil {
		t.Fatalf("a static stamp was not reused: %v\n%s", err, stderr.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"path", "--static", "kubelet"}, &stdout, &stderr); err != nil || strings.TrimSpace(stdout.String()) != bin {
		t.Fatalf("path --static kubelet = %q, %v", stdout.String(), err)
	}
	if err := run(context.Background(), []string{"path", "kubelet"}, &stdout, &stderr); err == nil {
		t.Fatal("path kubelet found the static build in the dynamic directory")
	}
}

// TestEtcdVersion: the etcd built is the one kubeadm v1.37.2 deploys. It
// reads kubeadm's constants.DefaultEtcdVersion from the k8s.io/kubernetes
// module this module requires, and the etcd module's requirement.
func TestEtcdVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "cmd", "kubeadm", "app", "constants", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*DefaultEtcdVersion\s*=\s*"([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("DefaultEtcdVersion not found in kubeadm's constants.go")
	}
	kubeadm, _, _ := strings.Cut(string(m[1]), "-") // "3.7.0-0": the image revision
	if "v"+kubeadm != etcdVersion {
		t.Errorf("kubeadm %s deploys etcd %s, hack/testenv builds %s", version, m[1], etcdVersion)
	}
	mod, err := os.ReadFile(filepath.Join("etcd", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{"go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/api/v3", "go.etcd.io/etcd/client/pkg/v3", "go.etcd.io/etcd/client/v3", "go.etcd.io/etcd/pkg/v3"} {
		re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(dep) + `(\s+=>\s+\S+)?\s+(v\S+)`)
		found := false
		for _, mm := range re.FindAllStringSubmatch(string(mod), -1) {
			found = true
			if mm[2] != etcdVersion {
				t.Errorf("etcd/go.mod: %s at %s, want %s", dep, mm[2], etcdVersion)
			}
		}
		if !found {
			t.Errorf("etcd/go.mod does not pin %s", dep)
		}
	}
}
