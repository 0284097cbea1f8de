// Command testenv-build builds the Kubernetes binaries that internal/testenv
// runs, and those the lab's nodes and images use (hack/lab), from the
// k8s.io/kubernetes module at each version it knows, into a cache directory
// keyed by version. It is run by hack/testenv/testenv (build, path); see
// docs/testenv.md.
//
//	go -C hack/testenv run . build [--version V] [--all] [--static] [NAME...]
//	go -C hack/testenv run . path [--version V] [--static] NAME
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A release is one Kubernetes version this module builds: its module (the
// directory whose go.mod requires k8s.io/kubernetes at that version, with
// every staging module replaced at the matching v0 version) and the etcd
// kubeadm of that version deploys (constants.DefaultEtcdVersion), built in
// a module of its own so that etcd's dependencies never mix with
// Kubernetes'. TestReleaseModules and TestEtcdVersion check each against
// its go.mod files and kubeadm's source.
type release struct {
	version string // "v1.37.2"
	dir     string // the Kubernetes module, relative to this one
	etcd    string // "v3.7.0"
	etcdDir string // the etcd module, relative to this one
}

// defaultVersion is the test control plane's: it must match the
// k8s.io/kubernetes requirement in go.mod and testenv.KubernetesVersion in
// the main module (TestReleaseModules and the main module's
// TestVersionsAgree check both).
const defaultVersion = "v1.37.2"

// releases are the versions built, the default first. The others are for
// the lab (hack/lab): v1.36 for upgrade tests from the previous minor.
func releases() []release {
	return []release{
		{version: defaultVersion, dir: ".", etcd: "v3.7.0", etcdDir: "etcd"},
		{version: "v1.36.3", dir: "kubernetes-1.36", etcd: "v3.6.8", etcdDir: "etcd-3.6"},
	}
}

// releaseOf finds a release by its version ("v1.36.3").
func releaseOf(v string) (release, error) {
	var known []string
	for _, r := range releases() {
		if r.version == v {
			return r, nil
		}
		known = append(known, r.version)
	}
	return release{}, usageError{fmt.Sprintf("unknown version %q (built: %s)", v, strings.Join(known, ", "))}
}

// etcdPkg is the etcd server's main package, built in a release's etcdDir.
const etcdPkg = "go.etcd.io/etcd/server/v3"

// binary is one buildable command.
type binary struct {
	name    string
	pkg     string
	deflt   bool
	purpose string
}

// binaries are the buildable commands, in build order. The default set is
// what internal/testenv needs; --all adds the rest.
func binaries() []binary {
	return []binary{
		{"etcd", etcdPkg, true, "etcd, the version kubeadm of the release deploys, from its own module (etcd/, etcd-3.6/)"},
		{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", true, "the API server every testenv runs"},
		{"kubeadm", "k8s.io/kubernetes/cmd/kubeadm", true, "validates rendered kubeadm configuration"},
		{"kubectl", "k8s.io/kubernetes/cmd/kubectl", true, "for hack/testenv/testenv run -- kubectl ..., version-matched"},
		{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", false, "controllers, on request"},
		{"kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", false, "scheduling, on request"},
		{"kubelet", "k8s.io/kubernetes/cmd/kubelet", false, "the lab's nodes (hack/lab)"},
		{"kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", false, "the lab's kube-proxy image (hack/lab)"},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usageText() string {
	var vs []string
	for _, r := range releases() {
		vs = append(vs, r.version)
	}
	return `usage:
  testenv build [--version V] [--all] [--static] [NAME...]
                                    build (or reuse from the cache) etcd, kube-apiserver, kubeadm and kubectl,
                                    --all: also kube-controller-manager, kube-scheduler, kubelet and kube-proxy;
                                    --static: with CGO_ENABLED=0, into the cache's static/ directory
                                    (the lab's nodes and images, hack/lab);
                                    --version: the Kubernetes release (` + strings.Join(vs, ", ") + `; default ` + defaultVersion + `,
                                    the test control plane's; the others are for the lab)
  testenv path [--version V] [--static] NAME
                                    print the path of a built binary
  testenv run [--calico] [--load DIR]... -- CMD ARGS...
                                    run CMD against a fresh etcd + kube-apiserver (` + defaultVersion + `)
cache: ${HYBRIDCTL_TESTENV_CACHE:-<user cache dir>/hybridctl/testenv}/VERSION[/static];
       $HYBRIDCTL_TESTENV_BIN replaces the directory of ` + defaultVersion + `
`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command\n" + usageText()}
	}
	switch args[0] {
	case "build":
		fs := flag.NewFlagSet("build", flag.ContinueOnError)
		fs.SetOutput(stderr)
		all := fs.Bool("all", false, "also build kube-controller-manager, kube-scheduler, kubelet and kube-proxy")
		static := fs.Bool("static", false, "build with CGO_ENABLED=0 into the static/ directory")
		v := fs.String("version", defaultVersion, "the Kubernetes release")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		rel, err := releaseOf(*v)
		if err != nil {
			return err
		}
		names, err := selectBinaries(*all, fs.Args())
		if err != nil {
			return err
		}
		dir, err := binDir(rel, *static)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := build(ctx, rel, dir, n, *static, stderr); err != nil {
				return err
			}
		}
		return nil
	case "path":
		fs := flag.NewFlagSet("path", flag.ContinueOnError)
		fs.SetOutput(stderr)
		static := fs.Bool("static", false, "the CGO_ENABLED=0 build")
		v := fs.String("version", defaultVersion, "the Kubernetes release")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if fs.NArg() != 1 {
			return usageError{"path takes one binary name\n" + usageText()}
		}
		rel, err := releaseOf(*v)
		if err != nil {
			return err
		}
		name := fs.Arg(0)
		if _, err := pkgOf(name); err != nil {
			return err
		}
		dir, err := binDir(rel, *static)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			flags := ""
			if rel.version != defaultVersion {
				flags = "--version " + rel.version + " "
			}
			if *static {
				flags += "--static "
			}
			return fmt.Errorf("%s %s is not built (%w): run hack/testenv/testenv build %s%s", name, rel.version, err, flags, name)
		}
		_, err = fmt.Fprintln(stdout, p)
		return err
	case "-h", "--help", "help":
		_, err := io.WriteString(stdout, usageText())
		return err
	default:
		return usageError{fmt.Sprintf("unknown command %q\n%s", args[0], usageText())}
	}
}

func selectBinaries(all bool, names []string) ([]string, error) {
	if len(names) > 0 {
		for _, n := range names {
			if _, err := pkgOf(n); err != nil {
				return nil, err
			}
		}
		return names, nil
	}
	var out []string
	for _, b := range binaries() {
		if all || b.deflt {
			out = append(out, b.name)
		}
	}
	return out, nil
}

func pkgOf(name string) (string, error) {
	var known []string
	for _, b := range binaries() {
		if b.name == name {
			return b.pkg, nil
		}
		known = append(known, b.name)
	}
	return "", usageError{fmt.Sprintf("unknown binary %q (known: %s)", name, strings.Join(known, ", "))}
}

// binDir is where a release's binaries go: <cache root>/<version>, static
// builds in its static/ subdirectory. For the default release it mirrors
// testenv.BinDir in the main module, $HYBRIDCTL_TESTENV_BIN included; that
// variable names a directory of the test control plane's binaries, so it
// never stands for another release's.
func binDir(rel release, static bool) (string, error) {
	d, err := versionDir(rel)
	if err != nil || !static {
		return d, err
	}
	return filepath.Join(d, "static"), nil
}

func versionDir(rel release) (string, error) {
	if d := os.Getenv("HYBRIDCTL_TESTENV_BIN"); d != "" && rel.version == defaultVersion {
		return d, nil
	}
	root := os.Getenv("HYBRIDCTL_TESTENV_CACHE")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("locate the cache (set HYBRIDCTL_TESTENV_CACHE): %w", err)
		}
		root = filepath.Join(c, "hybridctl", "testenv")
	}
	return filepath.Join(root, rel.version), nil
}

// ldflags sets the version the binaries report, as the Kubernetes release
// build does; without it they report v0.0.0-master.
func ldflags(version string) string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return strings.Join([]string{
		"-X k8s.io/component-base/version.gitVersion=" + version,
		"-X k8s.io/component-base/version.gitMajor=" + major,
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
	}, " ")
}

// stamp identifies a build; a binary whose stamp file matches is reused.
func stamp(rel release, pkg string, static bool) string {
	// Every build is CGO_ENABLED=0 (see build); a static build's stamp still
	// differs, so a binary built for the test control plane is never taken
	// for one built for the lab's images, or the other way round.
	s := fmt.Sprintf("package=%s\nversion=%s\ngo=%s\nldflags=%s\ncgo=0\n", pkg, rel.version, runtime.Version(), ldflags(rel.version))
	if pkg == etcdPkg {
		s += "etcd=" + rel.etcd + "\n"
	}
	if static {
		s += "static=1\n"
	}
	return s
}

// build builds one binary of a release into dir unless its stamp shows it
// is there already. It builds into a temporary name in dir and renames, so
// an interrupted build never leaves a half-written binary under the real
// name.
func build(ctx context.Context, rel release, dir, name string, static bool, log io.Writer) error {
	pkg, err := pkgOf(name)
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, name)
	stampPath := bin + ".stamp"
	want := stamp(rel, pkg, static)
	if got, err := os.ReadFile(stampPath); err == nil && string(got) == want {
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
			fmt.Fprintf(log, "testenv: %s %s: cached at %s\n", name, rel.version, bin)
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".build-")
	if err != nil {
		return fmt.Errorf("build %s %s: %w", name, rel.version, err)
	}
	tmpName := tmp.Name()
	_ = tmp.Close()
	defer os.Remove(tmpName) // no-op after the rename

	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags(rel.version), "-o", tmpName, pkg)
	cmd.Dir = rel.dir
	what := pkg
	if pkg == etcdPkg {
		cmd = exec.CommandContext(ctx, "go", "build", "-o", tmpName, pkg)
		cmd.Dir = rel.etcdDir // its own module
		what = pkg + " " + rel.etcd
	}
	fmt.Fprintf(log, "testenv: building %s %s (%s, CGO_ENABLED=0) ...\n", name, rel.version, what)
	began := time.Now()
	cmd.Stdout = log
	cmd.Stderr = log
	// Always CGO_ENABLED=0: nothing here needs cgo, and one setting for
	// the control plane and the lab's --static builds lets them share the
	// Go build cache (a second cgo setting compiled all of Kubernetes twice).
	cmd.Env = append(os.Environ(), "GOFLAGS="+withoutBuildVCS(os.Getenv("GOFLAGS")), "CGO_ENABLED=0")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s %s: go build %s (in %s): %w", name, rel.version, pkg, cmd.Dir, err)
	}
	if err := os.Chmod(tmpName, 0o755); err != nil {
		return fmt.Errorf("build %s %s: %w", name, rel.version, err)
	}
	if err := os.Rename(tmpName, bin); err != nil {
		return fmt.Errorf("build %s %s: %w", name, rel.version, err)
	}
	if err := os.WriteFile(stampPath, []byte(want), 0o644); err != nil {
		return fmt.Errorf("build %s %s: write stamp: %w", name, rel.version, err)
	}
	fmt.Fprintf(log, "testenv: built %s in %s\n", bin, time.Since(began).Round(time.Second))
	return nil
}

// withoutBuildVCS adds -buildvcs=false: the module is built from the module
// cache, and stamping this repository's VCS state would only make builds
// differ between checkouts.
func withoutBuildVCS(goflags string) string {
	f := strings.Fields(goflags)
	if slices.ContainsFunc(f, func(s string) bool { return strings.HasPrefix(s, "-buildvcs") }) {
		return goflags
	}
	return strings.TrimSpace(goflags + " -buildvcs=false")
}
