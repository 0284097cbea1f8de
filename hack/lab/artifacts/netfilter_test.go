package artifacts

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// extract unpacks a layer's tar into dir.
func extract(t *testing.T, raw []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestNetfilterToolsRunInTheirLayer runs iptables (nft backend) and nft
// from kube-proxy's netfilter layer alone, in a chroot: a missing library
// or loader fails here, not in the cluster.
func TestNetfilterToolsRunInTheirLayer(t *testing.T) {
	b := testBuilder(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (chroot), as the lab does")
	}
	ents, err := b.netfilterEntries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tarLayer(ents)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	extract(t, raw, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/sbin/iptables", "--version"}, "nf_tables"},
		{[]string{"/usr/sbin/ip6tables-restore", "--version"}, "nf_tables"},
		{[]string{"/usr/sbin/nft", "--version"}, "nftables v"},
	} {
		out, err := exec.Command("chroot", append([]string{dir}, tc.args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("chroot %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
	}
	// The layer has the loader and libc, and no shell: nothing else leaks in.
	for _, p := range []string{"lib64/ld-linux-x86-64.so.2", "usr/lib/x86_64-linux-gnu/xtables/libxt_comment.so"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("layer lacks %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "bin/sh")); err == nil {
		t.Error("the netfilter layer has a shell")
	}
}
