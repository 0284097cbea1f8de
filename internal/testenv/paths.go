package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	// EnvEtcd names the etcd executable (default: etcd on PATH).
	EnvEtcd = "HYBRIDCTL_TESTENV_ETCD"
	// EnvShared names the shared reference directory (default: the "shared"
	// directory beside the repository's root, found by walking up).
	EnvShared = "HYBRIDCTL_SHARED"
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
	root := os.Getenv(EnvCacheDir)
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("locate the testenv cache (set %s or %s): %w", EnvBinDir, EnvCacheDir, err)
		}
		root = filepath.Join(c, "hybridctl", "testenv")
	}
	return filepath.Join(root, KubernetesVersion), nil
}

// Binary returns the path of a built control-plane binary ("kube-apiserver",
// "kubeadm", "kube-controller-manager", "kube-scheduler"), or an error that
// says how to build it.
func Binary(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s %s not found at %s: %s", name, KubernetesVersion, p, buildHint)
		}
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s at %s is not an executable file: %s", name, p, buildHint)
	}
	return p, nil
}

// etcdBinary finds etcd: $HYBRIDCTL_TESTENV_ETCD, else etcd on PATH.
func etcdBinary() (string, error) {
	if p := os.Getenv(EnvEtcd); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd not found on PATH (Debian/Ubuntu: apt-get install etcd-server; or set %s): %w", EnvEtcd, err)
	}
	return p, nil
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

// SharedDir returns the shared reference directory (design.md, reference/,
// calico/, charts/): $HYBRIDCTL_SHARED, else the first directory named
// "shared" holding design.md found beside the repository root or any
// directory above it.
func SharedDir() (string, error) {
	if d := os.Getenv(EnvShared); d != "" {
		if _, err := os.Stat(filepath.Join(d, "design.md")); err != nil {
			return "", fmt.Errorf("%s=%s: not the shared directory: %w", EnvShared, d, err)
		}
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	for d := root; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, "shared")
		if _, err := os.Stat(filepath.Join(cand, "design.md")); err == nil {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no shared/design.md beside %s or above it; set %s", root, EnvShared)
		}
	}
}

// CalicoCRDs returns the path of the Calico CRD manifest the environment
// installs with Options.Calico: <shared>/calico/v3_projectcalico_org.yaml.
func CalicoCRDs() (string, error) {
	d, err := SharedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "calico", "v3_projectcalico_org.yaml"), nil
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
