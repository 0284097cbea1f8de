package hosts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Debian tree every node is copied from, made once by debootstrap from
// the Debian mirror apt already uses, and cached.
const (
	TreeSuite = "bookworm"
	// TreeMirror is the Debian archive; the host reaches it through its apt
	// configuration (the only outside source the lab uses, at build time).
	TreeMirror = "http://deb.debian.org/debian"
)

// TreePackages are installed on top of minbase: systemd and sshd for the
// node itself, and what prepare.sh runs when it installs from a bundle
// (modprobe, sysctl, iptables/nftables for kube-proxy, conntrack, socat,
// ethtool, chrony).
var TreePackages = []string{
	"systemd", "systemd-sysv", "dbus", "openssh-server", "iproute2", "ca-certificates",
	"kmod", "procps", "iptables", "nftables", "conntrack", "ethtool", "socat", "chrony",
	"curl", "gnupg", "less", "sudo",
}

// TreeStamp is written into a finished tree; a tree with another stamp (or
// none: an interrupted debootstrap) is made again.
func TreeStamp() string {
	return fmt.Sprintf("suite=%s variant=minbase include=%s\n", TreeSuite, strings.Join(TreePackages, ","))
}

const treeStampFile = ".hybridctl-lab-tree"

// TreeDir is the cached tree's directory.
func TreeDir(cache string) string { return filepath.Join(cache, "debian-"+TreeSuite) }

// EnsureTree returns the cached Debian tree, making it first when missing or
// stale. log receives progress lines.
func EnsureTree(ctx context.Context, cache string, log func(string, ...any)) (string, error) {
	dir := TreeDir(cache)
	if got, err := os.ReadFile(filepath.Join(dir, treeStampFile)); err == nil && string(got) == TreeStamp() {
		return dir, nil
	}
	if _, err := lookPath("debootstrap"); err != nil {
		return "", err
	}
	tmp := dir + ".tmp"
	for _, d := range []string{tmp, dir} {
		if err := os.RemoveAll(d); err != nil {
			return "", fmt.Errorf("debian tree: %w", err)
		}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	log("debootstrap %s into %s (once; a few minutes)", TreeSuite, dir)
	start := time.Now()
	out, err := run(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(TreePackages, ","),
		TreeSuite, tmp, TreeMirror)
	if err != nil {
		return "", fmt.Errorf("debootstrap %s: %w\n%s", TreeSuite, err, tail(out, 20))
	}
	// The nodes get their own machine-id, host keys, hostname and network.
	for _, f := range []string{"etc/machine-id", "var/lib/dbus/machine-id", "etc/hostname"} {
		_ = os.Remove(filepath.Join(tmp, f))
	}
	keys, _ := filepath.Glob(filepath.Join(tmp, "etc/ssh/ssh_host_*"))
	for _, k := range keys {
		_ = os.Remove(k)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		_ = os.Remove(d)
	}
	if err := os.WriteFile(filepath.Join(tmp, treeStampFile), []byte(TreeStamp()), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("debian tree: %w", err)
	}
	log("debian tree ready in %s", time.Since(start).Round(time.Second))
	return dir, nil
}
