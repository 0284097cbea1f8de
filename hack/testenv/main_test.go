package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleDir is where the module cache holds k8s.io/kubernetes at the
// version the module in dir requires (downloaded by a build in that module:
// hack/test.sh builds kubeadm of every release first).
func moduleDir(t *testing.T, dir, module string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s in %s: %v", module, dir, err)
	}
	d := strings.TrimSpace(string(out))
	if d == "" {
		t.Fatalf("%s (required in %s) is not in the module cache: run go -C hack/testenv/%s mod download %s", module, dir, dir, module)
	}
	return d
}

// TestReleaseModules: each release's module requires k8s.io/kubernetes at
// the release's version and replaces exactly the staging modules
// k8s.io/kubernetes itself replaces, each at the matching v0 version; the
// default release is this module, and the versions are distinct.
func TestReleaseModules(t *testing.T) {
	rs := releases()
	if rs[0].version != defaultVersion || rs[0].dir != "." {
		t.Fatalf("the first release is %+v, want the default %s in this module", rs[0], defaultVersion)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.version] || seen[r.dir] {
			t.Errorf("release %s: version or module %s used twice", r.version, r.dir)
		}
		seen[r.version], seen[r.dir] = true, true
		gomod, err := os.ReadFile(filepath.Join(r.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*(require\s+)?k8s\.io/kubernetes (v\S+)`).FindSubmatch(gomod)
		if m == nil || string(m[2]) != r.version {
			t.Errorf("%s/go.mod requires k8s.io/kubernetes %q, the release is %s", r.dir, m, r.version)
			continue
		}
		staging := "v0." + strings.TrimPrefix(r.version, "v1.")
		var ours []string
		for _, line := range regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) => k8s\.io/\S+ (\S+)$`).FindAllSubmatch(gomod, -1) {
			ours = append(ours, string(line[1]))
			if string(line[2]) != staging {
				t.Errorf("%s/go.mod: replace %s => %s, want %s", r.dir, line[1], line[2], staging)
			}
		}
		upstream, err := os.ReadFile(filepath.Join(moduleDir(t, r.dir, "k8s.io/kubernetes"), "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		var theirs []string
		for _, line := range regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) => \./staging/`).FindAllSubmatch(upstream, -1) {
			theirs = append(theirs, string(line[1]))
		}
		slices.Sort(ours)
		slices.Sort(theirs)
		if len(theirs) == 0 || !slices.Equal(ours, theirs) {
			t.Errorf("%s/go.mod replaces %v; k8s.io/kubernetes %s has the staging modules %v", r.dir, ours, r.version, theirs)
		}
	}
}

func TestLdflagsSetVersion(t *testing.T) {
	for v, want := range map[string][]string{
		"v1.37.2": {"version.gitVersion=v1.37.2 ", "version.gitMajor=1 ", "version.gitMinor=37 "},
		"v1.36.3": {"version.gitVersion=v1.36.3 ", "version.gitMajor=1 ", "version.gitMinor=36 "},
	} {
		got := ldflags(v) + " "
		for _, w := range want {
			if !strings.Contains(got, "-X k8s.io/component-base/"+w) {
				t.Errorf("ldflags(%s) = %q lacks %q", v, got, w)
			}
		}
	}
}

func mustRelease(t *testing.T, v string) release {
	t.Helper()
	r, err := releaseOf(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildReusesStampedBinary(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HYBRIDCTL_TESTENV_BIN", dir)
	bin := filepath.Join(dir, "kubeadm")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := mustRelease(t, defaultVersion)
	if err := os.WriteFile(bin+".stamp", []byte(stamp(def, "k8s.io/kubernetes/cmd/kubeadm", false)), 0o644); err != nil {
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
	for _, args := range [][]string{nil, {"frobnicate"}, {"path"}, {"path", "etcdd"}, {"build", "etcdd"},
		{"build", "--version", "v1.35.0", "kubeadm"}, {"path", "--version", "1.36.3", "kubeadm"}, {"build", "--version"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("run %q: err = %v, want a usage error", args, err)
		}
	}
	// The message names the versions that are built.
	err := run(context.Background(), []string{"build", "--version", "v1.35.0"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "v1.37.2, v1.36.3") {
		t.Errorf("an unknown version: %v, want the built versions named", err)
	}
}

// TestBuildsAreSeparate: static and dynamic builds, and the releases, each
// have their own directory and stamps; a binary of one is never reused for
// another.
func TestBuildsAreSeparate(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HYBRIDCTL_TESTENV_CACHE", root)
	binOverride := t.TempDir()
	t.Setenv("HYBRIDCTL_TESTENV_BIN", binOverride)
	def, old := mustRelease(t, defaultVersion), mustRelease(t, "v1.36.3")
	dirs := map[string]bool{}
	for _, c := range []struct {
		rel    release
		static bool
		want   string
	}{
		{def, false, binOverride},
		{def, true, filepath.Join(binOverride, "static")},
		// $HYBRIDCTL_TESTENV_BIN holds the test control plane's binaries
		// only: another release stays in the cache.
		{old, false, filepath.Join(root, "v1.36.3")},
		{old, true, filepath.Join(root, "v1.36.3", "static")},
	} {
		d, err := binDir(c.rel, c.static)
		if err != nil {
			t.Fatal(err)
		}
		if d != c.want {
			t.Errorf("binDir(%s, static %t) = %s, want %s", c.rel.version, c.static, d, c.want)
		}
		dirs[d] = true
	}
	if len(dirs) != 4 {
		t.Fatalf("the four builds share directories: %v", dirs)
	}
	t.Setenv("HYBRIDCTL_TESTENV_BIN", "")
	if d, _ := binDir(def, false); d != filepath.Join(root, "v1.37.2") {
		t.Errorf("binDir(default) without HYBRIDCTL_TESTENV_BIN = %s", d)
	}
	// Every stamp differs from every other.
	stamps := map[string]bool{}
	for _, r := range releases() {
		for _, pkg := range []string{"k8s.io/kubernetes/cmd/kubelet", etcdPkg} {
			for _, static := range []bool{false, true} {
				stamps[stamp(r, pkg, static)] = true
			}
		}
	}
	if want := len(releases()) * 4; len(stamps) != want {
		t.Fatalf("%d distinct stamps, want %d", len(stamps), want)
	}

	// A kubelet with another build's current stamp in v1.36.3's static
	// place is rebuilt; with PATH lacking go, that rebuild fails.
	st, _ := binDir(old, true)
	if err := os.MkdirAll(st, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(st, "kubelet")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	for _, wrong := range []string{stamp(old, "k8s.io/kubernetes/cmd/kubelet", false), stamp(def, "k8s.io/kubernetes/cmd/kubelet", true)} {
		if err := os.WriteFile(bin+".stamp", []byte(wrong), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"build", "--version", "v1.36.3", "--static", "kubelet"}, &stdout, &stderr); err == nil {
			t.Fatalf("another build's stamp was accepted:\n%s", wrong)
		}
	}
	if err := os.WriteFile(bin+".stamp", []byte(stamp(old, "k8s.io/kubernetes/cmd/kubelet", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"build", "--version", "v1.36.3", "--static", "kubelet"}, &stdout, &stderr); err != nil {
		t.Fatalf("a current stamp was not reused: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "kubelet v1.36.3: cached") {
		t.Errorf("build did not report the cached v1.36.3 kubelet: %q", stderr.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"path", "--version", "v1.36.3", "--static", "kubelet"}, &stdout, &stderr); err != nil || strings.TrimSpace(stdout.String()) != bin {
		t.Fatalf("path --version v1.36.3 --static kubelet = %q, %v", stdout.String(), err)
	}
	for _, args := range [][]string{{"path", "--version", "v1.36.3", "kubelet"}, {"path", "--static", "kubelet"}} {
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil {
			t.Fatalf("path %q found the v1.36.3 static build", args)
		}
		if args[1] == "--version" && !strings.Contains(err.Error(), "testenv build --version v1.36.3 kubelet") {
			t.Errorf("path %q: %v, want the build command to run", args, err)
		}
	}
}

// TestEtcdVersion: the etcd each release builds is the one its kubeadm
// deploys. It reads kubeadm's constants.DefaultEtcdVersion from the
// k8s.io/kubernetes module the release's module requires, and the etcd
// module's requirements.
func TestEtcdVersion(t *testing.T) {
	for _, r := range releases() {
		src, err := os.ReadFile(filepath.Join(moduleDir(t, r.dir, "k8s.io/kubernetes"), "cmd", "kubeadm", "app", "constants", "constants.go"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*DefaultEtcdVersion\s*=\s*"([^"]+)"`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("DefaultEtcdVersion not found in kubeadm %s's constants.go", r.version)
		}
		kubeadm, _, _ := strings.Cut(string(m[1]), "-") // "3.7.0-0": the image revision
		if "v"+kubeadm != r.etcd {
			t.Errorf("kubeadm %s deploys etcd %s, hack/testenv builds %s", r.version, m[1], r.etcd)
		}
		mod, err := os.ReadFile(filepath.Join(r.etcdDir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for _, dep := range []string{"go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/api/v3", "go.etcd.io/etcd/client/pkg/v3", "go.etcd.io/etcd/client/v3", "go.etcd.io/etcd/pkg/v3"} {
			re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(dep) + `(\s+=>\s+\S+)?\s+(v\S+)`)
			found := false
			for _, mm := range re.FindAllStringSubmatch(string(mod), -1) {
				found = true
				if mm[2] != r.etcd {
					t.Errorf("%s/go.mod: %s at %s, want %s", r.etcdDir, dep, mm[2], r.etcd)
				}
			}
			if !found {
				t.Errorf("%s/go.mod does not pin %s", r.etcdDir, dep)
			}
		}
	}
}
