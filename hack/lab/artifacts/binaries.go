package artifacts

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Versions the lab builds of what does not depend on the Kubernetes
// version. Kubernetes' own binaries come from hack/testenv, one set per
// release (Releases).
const (
	ContainerdVersion = "2.2.2"
	RuncVersion       = "1.5.3"
	CNIPluginsVersion = "1.10.0"
	CrictlVersion     = "1.37.0"
	RegistryVersion   = "v3.1.2"
)

// KubernetesVersion is the default release: the one hack/testenv's test
// control plane runs, and what `lab path` and `lab build kubernetes` mean.
const KubernetesVersion = "v1.37.2"

// Release is one Kubernetes version the lab builds: kubelet, kubeadm,
// kubectl and the control-plane and kube-proxy images from `hack/testenv
// build --static --version`, with the etcd and CoreDNS that version's
// kubeadm deploys (cmd/kubeadm/app/constants/constants.go:
// DefaultEtcdVersion and CoreDNSVersion; internal/plan lists the same tags,
// and PushImages refuses an image whose tag is not the release's).
type Release struct {
	Kubernetes string // "v1.37.2"
	Etcd       string // "3.7.0", the image tag without its revision (-0)
	CoreDNS    string // "v1.14.6"
}

// Releases are the Kubernetes versions the lab builds, the default first.
// v1.36 is there for upgrade tests: a cluster applied at v1.36.3 is
// upgraded to v1.37.2.
func Releases() []Release {
	return []Release{
		{Kubernetes: KubernetesVersion, Etcd: "3.7.0", CoreDNS: "v1.14.6"},
		{Kubernetes: "v1.36.3", Etcd: "3.6.8", CoreDNS: "v1.14.2"},
	}
}

// LookupRelease finds the release of a Kubernetes version.
func LookupRelease(version string) (Release, error) {
	var known []string
	for _, r := range Releases() {
		if r.Kubernetes == version {
			return r, nil
		}
		known = append(known, r.Kubernetes)
	}
	return Release{}, fmt.Errorf("the lab builds Kubernetes %s, not %q", strings.Join(known, " and "), version)
}

// KubernetesVersions are the releases' versions, the default first.
func KubernetesVersions() []string {
	var out []string
	for _, r := range Releases() {
		out = append(out, r.Kubernetes)
	}
	return out
}

type source int

const (
	fromProxy   source = iota // go install MODULE/PKG@VERSION
	fromTestenv               // hack/testenv build --static (its own cache)
	fromLab                   // a program of this module (artifacts/progs)
	fromRepo                  // a command of the main module
)

// Artifact is one thing the lab builds: one or more binaries.
type Artifact struct {
	Name    string // the cache directory bin/<Name>, and how the CLI names it
	Version string
	Purpose string
	// Files are the binaries it produces.
	Files []string

	src     source
	module  string   // fromProxy: module path; fromLab/fromRepo: unused
	pkgs    []string // package paths (fromProxy: full; fromLab: under artifacts/progs; fromRepo: ./cmd/...)
	tags    []string
	ldflags string
	cgo     bool // runc: cgo, linked statically against Debian's libseccomp

	// kubernetes is the release the artifact belongs to (its binaries are
	// that version's or its kubeadm's); empty when it serves every release.
	kubernetes string
}

// Kubernetes is the Kubernetes version an artifact belongs to, empty when
// it serves every version.
func (a Artifact) Kubernetes() string { return a.kubernetes }

// releaseName names an artifact of a release: the default release's
// artifacts keep their plain names (their cache directories predate the
// second release), the others' carry the version.
func releaseName(name string, r Release, version string) string {
	if r.Kubernetes == KubernetesVersion {
		return name
	}
	return name + "-" + version
}

// Artifacts is the ordered list of everything the lab builds.
func Artifacts() []Artifact {
	cni := []string{"bandwidth", "bridge", "dhcp", "dummy", "firewall", "host-device", "host-local", "ipvlan",
		"loopback", "macvlan", "portmap", "ptp", "sbr", "static", "tap", "tuning", "vlan", "vrf"}
	var cniPkgs []string
	for _, p := range cni {
		dir := "main"
		switch p {
		case "dhcp", "host-local", "static":
			dir = "ipam"
		case "bandwidth", "firewall", "portmap", "sbr", "tuning", "vrf":
			dir = "meta"
		}
		cniPkgs = append(cniPkgs, "github.com/containernetworking/plugins/plugins/"+dir+"/"+p)
	}
	out := []Artifact{
		{Name: "containerd", Version: ContainerdVersion, Purpose: "the nodes' container runtime (bundle)",
			Files: []string{"containerd", "containerd-shim-runc-v2", "ctr"}, src: fromProxy,
			module: "github.com/containerd/containerd/v2",
			pkgs: []string{"github.com/containerd/containerd/v2/cmd/containerd", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
				"github.com/containerd/containerd/v2/cmd/ctr"},
			tags:    []string{"no_btrfs", "urfave_cli_no_docs"},
			ldflags: "-X github.com/containerd/containerd/v2/version.Version=v" + ContainerdVersion + " -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"},
		{Name: "runc", Version: RuncVersion, Purpose: "the OCI runtime (bundle); cgo for nsenter and seccomp, linked statically",
			Files: []string{"runc"}, src: fromProxy, module: "github.com/opencontainers/runc",
			pkgs: []string{"github.com/opencontainers/runc"}, tags: []string{"seccomp", "urfave_cli_no_docs", "netgo", "osusergo"},
			ldflags: "-X main.version=" + RuncVersion + " -extldflags -static", cgo: true},
		{Name: "cni-plugins", Version: CNIPluginsVersion, Purpose: "the CNI plugins (bundle); bridge and host-local carry the lab's pod network",
			Files: cni, src: fromProxy, module: "github.com/containernetworking/plugins", pkgs: cniPkgs,
			ldflags: "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=v" + CNIPluginsVersion},
		{Name: "crictl", Version: CrictlVersion, Purpose: "the CRI client (bundle)",
			Files: []string{"crictl"}, src: fromProxy, module: "sigs.k8s.io/cri-tools",
			pkgs: []string{"sigs.k8s.io/cri-tools/cmd/crictl"}, ldflags: "-X sigs.k8s.io/cri-tools/pkg/version.Version=v" + CrictlVersion},
	}
	for _, r := range Releases() {
		out = append(out, Artifact{Name: releaseName("coredns", r, r.CoreDNS), Version: r.CoreDNS,
			Purpose: "the CoreDNS image (kubeadm " + r.Kubernetes + "'s version)",
			Files:   []string{"coredns"}, src: fromProxy, module: "github.com/coredns/coredns", pkgs: []string{"github.com/coredns/coredns"},
			kubernetes: r.Kubernetes})
	}
	out = append(out, Artifact{Name: "registry", Version: RegistryVersion, Purpose: "the lab's image registry (distribution), served on the bridge",
		Files: []string{"registry"}, src: fromProxy, module: "github.com/distribution/distribution/v3",
		pkgs:    []string{"github.com/distribution/distribution/v3/cmd/registry"},
		ldflags: "-X github.com/distribution/distribution/v3/version.version=" + RegistryVersion})
	for _, r := range Releases() {
		out = append(out,
			Artifact{Name: releaseName("kubernetes", r, r.Kubernetes), Version: r.Kubernetes,
				Purpose: "kubelet, kubeadm, kubectl (bundle) and the control-plane and kube-proxy images, by hack/testenv build --static --version " + r.Kubernetes,
				Files:   []string{"kubelet", "kubeadm", "kubectl", "kube-proxy", "kube-apiserver", "kube-controller-manager", "kube-scheduler"},
				src:     fromTestenv, kubernetes: r.Kubernetes},
			Artifact{Name: releaseName("etcd", r, r.Kubernetes), Version: r.Etcd,
				Purpose: "the etcd image (kubeadm " + r.Kubernetes + "'s version): hack/testenv build --static --version " + r.Kubernetes + " etcd",
				Files:   []string{"etcd"}, src: fromTestenv, kubernetes: r.Kubernetes})
	}
	return append(out,
		Artifact{Name: "lab-programs", Version: "repo", Purpose: "the lab's own pause, hello (check workload and client) and podnet (pod network agent)",
			Files: []string{"pause", "hello", "podnet"}, src: fromLab, pkgs: []string{"pause", "hello", "podnet"}},
		Artifact{Name: "hybridctl", Version: "repo", Purpose: "hybridctl itself: plan's image list, and its image (the in-cluster CSR approver)",
			Files: []string{"hybridctl"}, src: fromRepo, pkgs: []string{"./cmd/hybridctl"}},
	)
}

// Builder builds artifacts into the cache.
type Builder struct {
	Cache string    // CacheDir()
	Root  string    // the repository root (for hack/testenv and cmd/hybridctl)
	Log   io.Writer // progress lines

	// pathOf replaces PathFor in tests (LayoutBundle's inputs).
	pathOf func(ctx context.Context, kubernetes, file string) (string, error)
}

// NewBuilder finds the cache and the repository root (the directory above
// this module, found from the working directory).
func NewBuilder(log io.Writer) (*Builder, error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return &Builder{Cache: cache, Root: root, Log: log}, nil
}

// RepoRoot finds the repository root: $HYBRIDCTL_ROOT, else the nearest
// directory above the working directory that has hack/lab/go.mod.
func RepoRoot() (string, error) {
	if d := os.Getenv("HYBRIDCTL_ROOT"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "lab", "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no hack/lab/go.mod above %s: run from the repository or set HYBRIDCTL_ROOT", wd)
		}
	}
}

// Lookup finds an artifact by name.
func Lookup(name string) (Artifact, error) {
	all := Artifacts()
	if i := slices.IndexFunc(all, func(a Artifact) bool { return a.Name == name }); i >= 0 {
		return all[i], nil
	}
	var names []string
	for _, a := range all {
		names = append(names, a.Name)
	}
	return Artifact{}, fmt.Errorf("unknown artifact %q (known: %s)", name, strings.Join(names, ", "))
}

func (a Artifact) stamp() string {
	return fmt.Sprintf("artifact=%s\nversion=%s\nmodule=%s\npkgs=%s\ntags=%s\nldflags=%s\ncgo=%t\ngo=%s\n",
		a.Name, a.Version, a.module, strings.Join(a.pkgs, " "), strings.Join(a.tags, ","), a.ldflags, a.cgo, runtime.Version())
}

// Dir is where an artifact's files are.
func (b *Builder) Dir(a Artifact) string { return filepath.Join(b.Cache, "bin", a.Name) }

// Path is the path of one built binary of the default release (or of no
// release: containerd, the registry, ...), whichever artifact makes it.
func (b *Builder) Path(ctx context.Context, file string) (string, error) {
	return b.PathFor(ctx, KubernetesVersion, file)
}

// PathFor is the path of one built binary for a Kubernetes release:
// kubelet v1.36.3, the etcd kubeadm v1.36.3 deploys, or a file that serves
// every release.
func (b *Builder) PathFor(ctx context.Context, kubernetes, file string) (string, error) {
	a, err := ArtifactFor(kubernetes, file)
	if err != nil {
		return "", err
	}
	if a.src == fromTestenv {
		return b.testenvPath(ctx, a.kubernetes, file)
	}
	p := filepath.Join(b.Dir(a), file)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not built (%w): run hack/lab/lab build %s", file, err, a.Name)
	}
	return p, nil
}

// ArtifactFor is the artifact that makes a file for a Kubernetes release.
func ArtifactFor(kubernetes, file string) (Artifact, error) {
	if _, err := LookupRelease(kubernetes); err != nil {
		return Artifact{}, err
	}
	for _, a := range Artifacts() {
		if slices.Contains(a.Files, file) && (a.kubernetes == "" || a.kubernetes == kubernetes) {
			return a, nil
		}
	}
	return Artifact{}, fmt.Errorf("no artifact builds %q", file)
}

// Build builds the named artifacts (all when names is empty), reusing those
// whose stamp matches. Programs of this repository are rebuilt every time
// (Go's build cache makes that quick); they have no version to stamp.
func (b *Builder) Build(ctx context.Context, names ...string) error {
	todo := Artifacts()
	if len(names) > 0 {
		todo = nil
		for _, n := range names {
			a, err := Lookup(n)
			if err != nil {
				return err
			}
			todo = append(todo, a)
		}
	}
	for _, a := range todo {
		if err := b.build(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

func (b *Builder) build(ctx context.Context, a Artifact) error {
	if a.src == fromTestenv {
		return b.buildTestenv(ctx, a.kubernetes, a.Files)
	}
	dir := b.Dir(a)
	stampPath := filepath.Join(dir, ".stamp")
	if a.src == fromProxy {
		if got, err := os.ReadFile(stampPath); err == nil && string(got) == a.stamp() && b.complete(a) {
			fmt.Fprintf(b.Log, "lab: %s %s: cached in %s\n", a.Name, a.Version, dir)
			return nil
		}
	}
	work := filepath.Join(b.Cache, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	tmp, err := os.MkdirTemp(work, a.Name+"-")
	if err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	defer os.RemoveAll(tmp)                      // gone after the rename
	if err := os.Chmod(tmp, 0o755); err != nil { // the lab serves these files
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	if a.src == fromProxy {
		fmt.Fprintf(b.Log, "lab: building %s %s from %s ...\n", a.Name, a.Version, a.module)
	}
	began := time.Now()
	if err := b.goBuild(ctx, a, tmp); err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	for _, f := range a.Files {
		if _, err := os.Stat(filepath.Join(tmp, f)); err != nil {
			return fmt.Errorf("build %s: %s was not produced: %w", a.Name, f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".stamp"), []byte(a.stamp()), 0o644); err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	if err := replaceDir(tmp, dir); err != nil {
		return fmt.Errorf("build %s: %w", a.Name, err)
	}
	if a.src == fromProxy {
		fmt.Fprintf(b.Log, "lab: built %s %s in %s\n", a.Name, a.Version, time.Since(began).Round(time.Second))
	}
	return nil
}

func (b *Builder) complete(a Artifact) bool {
	for _, f := range a.Files {
		if fi, err := os.Stat(filepath.Join(b.Dir(a), f)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func (b *Builder) goBuild(ctx context.Context, a Artifact, out string) error {
	goflags := "-buildvcs=false -trimpath"
	env := append(os.Environ(), "GOFLAGS="+goflags, "CGO_ENABLED=0")
	var cmd *exec.Cmd
	switch a.src {
	case fromProxy:
		args := []string{"install"}
		if len(a.tags) > 0 {
			args = append(args, "-tags", strings.Join(a.tags, ","))
		}
		if a.ldflags != "" {
			args = append(args, "-ldflags", a.ldflags)
		}
		for _, p := range a.pkgs {
			args = append(args, p+"@v"+strings.TrimPrefix(a.Version, "v"))
		}
		cmd = exec.CommandContext(ctx, "go", args...)
		cmd.Dir = out // outside any module
		env = append(env, "GOBIN="+out)
		if a.cgo {
			root, err := b.debs(ctx, "build-seccomp", []string{"libseccomp-dev"})
			if err != nil {
				return err
			}
			env = append(env, "CGO_ENABLED=1",
				"PKG_CONFIG_PATH="+filepath.Join(root, "usr/lib/x86_64-linux-gnu/pkgconfig"),
				"PKG_CONFIG_SYSROOT_DIR="+root)
		}
	case fromLab:
		args := []string{"build", "-o", out + "/"}
		for _, p := range a.pkgs {
			args = append(args, "./artifacts/progs/"+p)
		}
		cmd = exec.CommandContext(ctx, "go", args...)
		cmd.Dir = filepath.Join(b.Root, "hack", "lab")
	case fromRepo:
		cmd = exec.CommandContext(ctx, "go", append([]string{"build", "-o", out + "/"}, a.pkgs...)...)
		cmd.Dir = b.Root
	default:
		return fmt.Errorf("artifact %s: no Go build", a.Name)
	}
	cmd.Env = env
	cmd.Stdout = b.Log
	cmd.Stderr = b.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return nil
}

func (b *Builder) testenv(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"-C", filepath.Join(b.Root, "hack", "testenv"), "run", "."}, args...)...)
	cmd.Stdout = stdout
	cmd.Stderr = b.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/testenv/testenv %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func (b *Builder) buildTestenv(ctx context.Context, kubernetes string, names []string) error {
	return b.testenv(ctx, b.Log, append([]string{"build", "--static", "--version", kubernetes}, names...)...)
}

func (b *Builder) testenvPath(ctx context.Context, kubernetes, name string) (string, error) {
	var out strings.Builder
	if err := b.testenv(ctx, &out, "path", "--static", "--version", kubernetes, name); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}
