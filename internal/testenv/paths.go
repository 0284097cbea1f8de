package testenv

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// KubernetesVersion is the version of the control-plane binaries the
// environment runs; hack/testenv builds exactly this version.
const KubernetesVersion = "v1.37.2"

// Environment variables that change where the environment finds things.
const (
	// EnvBinDir names a directory holding kube-apiserver (and kubeadm, ...)
	// to use instead of the cache.
	EnvBinDir = "HYBRIDCTL_TESTENV_BIN"
	// EnvCacheDir replaces the cache root (default: the user cache directory
	// + hybridctl/testenv); binaries live in <root>/<KubernetesVersion>/.
	EnvCacheDir = "HYBRIDCTL_TESTENV_CACHE"
	// EnvEtcd names the etcd executable (default: the one built by
	// hack/testenv into BinDir).
	EnvEtcd = "HYBRIDCTL_TESTENV_ETCD"
	// EnvKeep keeps the environment's temporary directory (logs,
	// certificates, kubeconfig) after Stop when set to a non-empty value.
	EnvKeep = "HYBRIDCTL_TESTENV_KEEP"
)

const buildHint = "run hack/testenv/testenv build from the repository root"

// BinDir returns the directory the environment takes kube-apiserver, kubeadm,
// kube-controller-manager and kube-scheduler from: $HYBRIDCTL_TESTENV_BIN,
// else <cache>/v1.37.2 where <cache> is $HYBRIDCTL_TESTENV_CACHE or
// <user cache dir>/hybridctl/testenv. hack/testenv builds into the same place.
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	return releaseDir(KubernetesVersion)
}

// releaseDir is <cache>/<version>, where hack/testenv builds a release.
func releaseDir(version string) (string, error) {
	root := os.Getenv(EnvCacheDir)
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("locate the testenv cache (set %s or %s): %w", EnvBinDir, EnvCacheDir, err)
		}
		root = filepath.Join(c, "hybridctl", "testenv")
	}
	return filepath.Join(root, version), nil
}

// Binary returns the path of a built control-plane binary ("kube-apiserver",
// "kubeadm", "kube-controller-manager", "kube-scheduler"), or an error that
// says how to build it.
func Binary(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	return executable(dir, name, KubernetesVersion, buildHint)
}

// ReleaseBinary returns the path of a binary hack/testenv built for a
// Kubernetes release, for tests that check against a version other than
// the control plane's (kubeadm v1.36.3: `hack/testenv/testenv build
// --version v1.36.3 kubeadm`). For KubernetesVersion it is Binary; another
// version's binaries are in <cache>/<version>, never in
// $HYBRIDCTL_TESTENV_BIN, which holds the control plane's.
func ReleaseBinary(version, name string) (string, error) {
	if version == KubernetesVersion {
		return Binary(name)
	}
	dir, err := releaseDir(version)
	if err != nil {
		return "", err
	}
	return executable(dir, name, version, fmt.Sprintf("run hack/testenv/testenv build --version %s %s from the repository root", version, name))
}

func executable(dir, name, version, hint string) (string, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s %s not found at %s: %s", name, version, p, hint)
		}
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s at %s is not an executable file: %s", name, p, hint)
	}
	return p, nil
}

// etcdBinary finds etcd: $HYBRIDCTL_TESTENV_ETCD, else the etcd that
// hack/testenv builds from the Go modules (kubeadm v1.37.2's version) into
// the binaries' directory. An etcd on PATH is never used: Debian's 3.4
// lacks the progress notifications watch-list streaming needs.
func etcdBinary() (string, error) {
	if p := os.Getenv(EnvEtcd); p != "" {
		return p, nil
	}
	return Binary("etcd")
}

// RepoRoot returns the root of the hybridctl repository (the directory whose
// go.mod declares module github.com/hybridctl/hybridctl), found by walking up
// from the working directory; go test runs tests in their package directory.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && isMainModule(b) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod for module github.com/hybridctl/hybridctl in %s or above", wd)
		}
	}
}

func isMainModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "github.com/hybridctl/hybridctl"
		}
	}
	return false
}

// ThirdPartyDir returns a directory holding the files of the vendored
// upstream data set testdata/third_party/<name> (see its SOURCE file), each
// under its upstream name: files stored gzipped (NAME.gz, for anything over
// 1 MB) are decompressed. The decompressed copy lives in the user cache
// directory, keyed by the sha256 of the stored files, and is written
// atomically, so concurrent test processes and stale copies are harmless.
// Everything it holds comes from the repository.
func ThirdPartyDir(ctx context.Context, name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "testdata", "third_party", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	h := sha256.New()
	var files []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", fmt.Errorf("vendored data %s: %w", name, err)
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
		files = append(files, e.Name())
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".gz") }) {
		return src, nil // nothing to decompress: read it in place
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("vendored data %s: locate the user cache: %w", name, err)
	}
	dst := filepath.Join(cache, "hybridctl", "third_party", fmt.Sprintf("%s-%x", name, h.Sum(nil)[:8]))
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+name+".tmp-")
	if err != nil {
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	for _, f := range files {
		if err := copyPlain(filepath.Join(src, f), tmp); err != nil {
			return "", fmt.Errorf("vendored data %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another process won the race: its copy is identical.
		if _, serr := os.Stat(filepath.Join(dst, ".complete")); serr == nil {
			return dst, nil
		}
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	return dst, nil
}

// ThirdParty returns the path of one vendored upstream file by its upstream
// name (without .gz), decompressed if it is stored gzipped.
func ThirdParty(ctx context.Context, name, file string) (string, error) {
	d, err := ThirdPartyDir(ctx, name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(d, file)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("vendored data %s: %w", name, err)
	}
	return p, nil
}

// copyPlain copies src into dir, gunzipping a NAME.gz into NAME.
func copyPlain(src, dir string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	name := filepath.Base(src)
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		defer zr.Close()
		r, name = zr, strings.TrimSuffix(name, ".gz")
	}
	out, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", src, err)
	}
	return out.Close()
}

// CalicoVendored names the vendored Calico manifests (CRDs, operator,
// upstream's custom resources) under testdata/third_party.
const CalicoVendored = "calico-v3.33"

// CalicoCRDs returns the path of the Calico CRD manifest the environment
// installs with Options.Calico (vendored, decompressed).
func CalicoCRDs(ctx context.Context) (string, error) {
	return ThirdParty(ctx, CalicoVendored, "v3_projectcalico_org.yaml")
}

// LabDir returns testdata/clusters/lab at the repository root: the guide's
// lab cluster at the end of the guide, as API objects.
func LabDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", "clusters", "lab"), nil
}
