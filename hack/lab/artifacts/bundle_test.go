package artifacts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// labPlan is the plan of the lab's default spec, with the versions
// changed by mod.
func labPlan(t *testing.T, root string, mod func(*spec.ClusterSpec)) *plan.Plan {
	t.Helper()
	r, err := spec.LoadFile(context.Background(), filepath.Join(root, "examples", "lab-linux.yaml"))
	if err != nil || r.Err() != nil {
		t.Fatalf("examples/lab-linux.yaml: %v %v", err, r.Err())
	}
	if mod != nil {
		mod(&r.Cluster.Spec)
	}
	p, err := plan.Derive(r.Cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// verified checks dir with internal/bundle's Verify against the plan: no
// problem, no extra file.
func verified(t *testing.T, dir string, p *plan.Plan) {
	t.Helper()
	rep, err := bundle.Verify(context.Background(), dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil || len(rep.Extra) > 0 {
		t.Fatalf("bundle.Verify: %v, extra %v", err, rep.Extra)
	}
}

// fakeBuilt writes a small distinct file per artifact file (a stand-in for
// the built binaries, which take an hour to build), under src/<artifact>/,
// and a Builder that finds them there through ArtifactFor, as PathFor
// does. fake(src, artifact, file) is one of them.
func fakeBuilt(t *testing.T) (*Builder, string, *bytes.Buffer) {
	t.Helper()
	src := t.TempDir()
	for _, a := range Artifacts() {
		if err := os.MkdirAll(filepath.Join(src, a.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if err := os.WriteFile(fake(src, a.Name, f), []byte("#!/bin/sh\necho "+a.Name+"/"+f+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	var log bytes.Buffer
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{Cache: t.TempDir(), Root: root, Log: &log, pathOf: func(_ context.Context, kubernetes, f string) (string, error) {
		a, err := ArtifactFor(kubernetes, f)
		if err != nil {
			return "", err
		}
		return fake(src, a.Name, f), nil
	}}
	return b, src, &log
}

func fake(src, artifact, file string) string { return filepath.Join(src, artifact, file) }

func listTar(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("tar", "-tzvf", path).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -tzvf %s: %v\n%s", path, err, out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		// -rwxr-xr-x root/root 20 1970-01-01 00:00 bin/containerd
		if f[1] != "root/root" && f[1] != "0/0" {
			t.Errorf("%s: %s is owned by %s", path, f[len(f)-1], f[1])
		}
		names = append(names, f[0][:1]+" "+f[len(f)-1])
	}
	return names
}

func TestLayoutBundle(t *testing.T) {
	b, src, log := fakeBuilt(t)
	ctx := context.Background()
	p := labPlan(t, b.Root, nil)
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := b.LayoutBundle(ctx, dir, p); err != nil {
		t.Fatal(err)
	}
	verified(t, dir, p)
	// The layout: upstream file names under linux-amd64/, Calico's
	// manifests, SHA256SUMS sorted by path, listing every file.
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		paths = append(paths, l[66:])
	}
	want := []string{
		"linux-amd64/cni-plugins-linux-amd64-v1.10.0.tgz",
		"linux-amd64/containerd-2.2.2-linux-amd64.tar.gz",
		"linux-amd64/crictl-v1.37.0-linux-amd64.tar.gz",
		"linux-amd64/kubeadm", "linux-amd64/kubectl", "linux-amd64/kubelet",
		"linux-amd64/runc.amd64",
		"manifests/tigera-operator.yaml",
		"manifests/v3_projectcalico_org.yaml",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SHA256SUMS lists\n%s\nwant\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	if !sort.StringsAreSorted(paths) {
		t.Errorf("SHA256SUMS is not sorted by path")
	}
	// sha256sum(1) itself accepts it.
	cmd := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	// The CRD manifest is the vendored one, decompressed.
	crds, _ := os.ReadFile(filepath.Join(dir, "manifests/v3_projectcalico_org.yaml"))
	if !bytes.Contains(crds, []byte("kind: CustomResourceDefinition")) {
		t.Errorf("manifests/v3_projectcalico_org.yaml is not Calico's CRDs (%d bytes)", len(crds))
	}
	// The tarballs are shaped like upstream's.
	if got, want := strings.Join(listTar(t, filepath.Join(dir, "linux-amd64/containerd-2.2.2-linux-amd64.tar.gz")), ","),
		"d bin/,- bin/containerd,- bin/containerd-shim-runc-v2,- bin/ctr"; got != want {
		t.Errorf("containerd tarball: %s, want %s", got, want)
	}
	if got := listTar(t, filepath.Join(dir, "linux-amd64/crictl-v1.37.0-linux-amd64.tar.gz")); strings.Join(got, ",") != "- crictl" {
		t.Errorf("crictl tarball: %v", got)
	}
	cni := listTar(t, filepath.Join(dir, "linux-amd64/cni-plugins-linux-amd64-v1.10.0.tgz"))
	for _, p := range []string{"- ./bridge", "- ./host-local", "- ./loopback", "- ./portmap"} {
		if !strings.Contains(strings.Join(cni, ","), p) {
			t.Errorf("cni tarball lacks %s: %v", p, cni)
		}
	}
	// What is extracted is the built file, byte for byte, executable.
	x := t.TempDir()
	if out, err := exec.Command("tar", "-C", x, "-xzf", filepath.Join(dir, "linux-amd64/containerd-2.2.2-linux-amd64.tar.gz")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(x, "bin/ctr"))
	orig, _ := os.ReadFile(fake(src, "containerd", "ctr"))
	if !bytes.Equal(got, orig) {
		t.Errorf("bin/ctr extracted is %q, built %q", got, orig)
	}
	if fi, err := os.Stat(filepath.Join(dir, "linux-amd64/runc.amd64")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("runc.amd64: %v %v", fi, err)
	}

	// Unchanged inputs: kept as it is.
	log.Reset()
	if err := b.LayoutBundle(ctx, dir, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "up to date") {
		t.Errorf("second layout with the same inputs was not a no-op: %s", log)
	}
	// Deterministic: laid out again from scratch, the same sums.
	dir2 := filepath.Join(t.TempDir(), "bundle")
	if err := b.LayoutBundle(ctx, dir2, p); err != nil {
		t.Fatal(err)
	}
	if sums2, _ := os.ReadFile(filepath.Join(dir2, "SHA256SUMS")); !bytes.Equal(sums, sums2) {
		t.Errorf("two layouts of the same binaries differ:\n%s\n%s", sums, sums2)
	}
	// A rebuilt binary makes a new bundle.
	if err := os.WriteFile(fake(src, "containerd", "containerd"), []byte("rebuilt, longer than before\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := b.LayoutBundle(ctx, dir, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "up to date") {
		t.Errorf("a changed containerd kept the old bundle")
	}
	if sums3, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS")); bytes.Equal(sums, sums3) {
		t.Errorf("a changed containerd gave the same sums")
	}
	// A damaged bundle is laid out again even with the same inputs.
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64/kubelet"), []byte("damaged"), 0o755); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := b.LayoutBundle(ctx, dir, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "up to date") {
		t.Errorf("a damaged bundle was kept: %s", log)
	}
	verified(t, dir, p)
	if left, _ := filepath.Glob(dir + ".new-*"); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}

func TestBundleVersions(t *testing.T) {
	b, _, _ := fakeBuilt(t)
	for _, c := range []struct {
		field string
		mod   func(*spec.ClusterSpec)
	}{
		{"spec.kubernetesVersion", func(s *spec.ClusterSpec) { s.KubernetesVersion = "v1.37.1" }},
		{"spec.kubernetesVersion", func(s *spec.ClusterSpec) { s.KubernetesVersion = "v1.36.2" }},
		{"spec.containerd.version", func(s *spec.ClusterSpec) { s.Containerd.Version = "2.2.1" }},
		{"spec.runc.version", func(s *spec.ClusterSpec) { s.Runc.Version = "1.5.2" }},
		{"spec.cniPlugins.version", func(s *spec.ClusterSpec) { s.CNIPlugins.Version = "1.9.0" }},
		{"spec.crictl.version", func(s *spec.ClusterSpec) { s.Crictl.Version = "1.36.0" }},
	} {
		p := labPlan(t, b.Root, c.mod)
		dir := filepath.Join(t.TempDir(), "bundle")
		err := b.LayoutBundle(context.Background(), dir, p)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s changed: %v", c.field, err)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s changed: a bundle was laid out", c.field)
		}
	}
}

// An artifact the lab cannot make (an add-on's manifest) is refused by
// name, and nothing is laid out.
func TestBundleUnknownArtifact(t *testing.T) {
	b, _, _ := fakeBuilt(t)
	p := labPlan(t, b.Root, func(s *spec.ClusterSpec) {
		s.Addons.MetricsServer = &spec.Addon{Version: "v0.8.0"}
	})
	dir := filepath.Join(t.TempDir(), "bundle")
	err := b.LayoutBundle(context.Background(), dir, p)
	if err == nil || !strings.Contains(err.Error(), "addon-metrics-server") {
		t.Errorf("a metrics-server add-on: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a bundle was laid out")
	}
}

// TestLayoutBundleOfEachRelease: a spec at v1.36.3 gets v1.36.3's kubelet,
// kubeadm and kubectl, a spec at v1.37.2 the default release's, and both
// the same containerd, runc, CNI plugins and crictl.
func TestLayoutBundleOfEachRelease(t *testing.T) {
	b, src, _ := fakeBuilt(t)
	ctx := context.Background()
	dirs := map[string]string{}
	for _, r := range Releases() {
		p := labPlan(t, b.Root, func(s *spec.ClusterSpec) { s.KubernetesVersion = r.Kubernetes })
		dir := filepath.Join(t.TempDir(), r.Kubernetes)
		if err := b.LayoutBundle(ctx, dir, p); err != nil {
			t.Fatalf("%s: %v", r.Kubernetes, err)
		}
		verified(t, dir, p)
		dirs[r.Kubernetes] = dir
		for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
			got, _ := os.ReadFile(filepath.Join(dir, "linux-amd64", f))
			want, _ := os.ReadFile(fake(src, releaseName("kubernetes", r, r.Kubernetes), f))
			if !bytes.Equal(got, want) {
				t.Errorf("%s bundle: %s is %q, want %q", r.Kubernetes, f, got, want)
			}
		}
	}
	a, _ := os.ReadFile(filepath.Join(dirs["v1.36.3"], "linux-amd64", "kubelet"))
	c, _ := os.ReadFile(filepath.Join(dirs["v1.37.2"], "linux-amd64", "kubelet"))
	if bytes.Equal(a, c) {
		t.Fatal("the two releases' bundles have the same kubelet")
	}
	for _, f := range []string{"runc.amd64", "containerd-2.2.2-linux-amd64.tar.gz", "crictl-v1.37.0-linux-amd64.tar.gz", "cni-plugins-linux-amd64-v1.10.0.tgz"} {
		a, _ := os.ReadFile(filepath.Join(dirs["v1.36.3"], "linux-amd64", f))
		c, _ := os.ReadFile(filepath.Join(dirs["v1.37.2"], "linux-amd64", f))
		if len(a) == 0 || !bytes.Equal(a, c) {
			t.Errorf("%s differs between the releases' bundles", f)
		}
	}
}

// TestArtifactFor: each release's files come from its own artifacts, the
// rest from the shared ones; every release has every file its images and
// bundle need; names are unique.
func TestArtifactFor(t *testing.T) {
	for _, c := range []struct{ kubernetes, file, artifact string }{
		{"v1.37.2", "kubelet", "kubernetes"},
		{"v1.36.3", "kubelet", "kubernetes-v1.36.3"},
		{"v1.36.3", "kube-apiserver", "kubernetes-v1.36.3"},
		{"v1.37.2", "etcd", "etcd"},
		{"v1.36.3", "etcd", "etcd-v1.36.3"},
		{"v1.37.2", "coredns", "coredns"},
		{"v1.36.3", "coredns", "coredns-v1.14.2"},
		{"v1.36.3", "containerd", "containerd"},
		{"v1.36.3", "pause", "lab-programs"},
		{"v1.36.3", "hybridctl", "hybridctl"},
	} {
		a, err := ArtifactFor(c.kubernetes, c.file)
		if err != nil || a.Name != c.artifact {
			t.Errorf("ArtifactFor(%s, %s) = %s, %v; want %s", c.kubernetes, c.file, a.Name, err, c.artifact)
		}
	}
	for _, bad := range [][2]string{{"v1.35.0", "kubelet"}, {"v1.36.3", "kubelet.exe"}, {"", "containerd"}} {
		if a, err := ArtifactFor(bad[0], bad[1]); err == nil {
			t.Errorf("ArtifactFor(%q, %q) = %s, want an error", bad[0], bad[1], a.Name)
		}
	}
	names := map[string]bool{}
	for _, a := range Artifacts() {
		if names[a.Name] {
			t.Errorf("artifact %s listed twice", a.Name)
		}
		names[a.Name] = true
	}
	for _, r := range Releases() {
		for _, d := range Images() {
			for _, f := range d.Binaries {
				if a, err := ArtifactFor(r.Kubernetes, f); err != nil {
					t.Errorf("%s: image %s: %v", r.Kubernetes, d.Name, err)
				} else if r.tag(d.Name) != "" && a.Kubernetes() != r.Kubernetes {
					t.Errorf("%s: image %s takes %s from %s, of another release", r.Kubernetes, d.Name, f, a.Name)
				}
			}
		}
	}
}
