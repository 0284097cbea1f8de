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
	// kube-proxy's nftables mode reads its maps back with "nft --json list
	// map" and matches each key as text with the one it writes: the
	// protocol must come back by name, which needs /etc/protocols in the
	// layer (with a number instead, kube-proxy deletes every Service's
	// element at its next full resync). A network namespace of its own
	// keeps the table off the host.
	script := "add table ip t\n" +
		"add chain ip t c\n" +
		"add map ip t m { type ipv4_addr . inet_proto . inet_service : verdict; }\n" +
		"add element ip t m { 10.96.0.1 . tcp . 443 : goto c }\n"
	if err := os.WriteFile(filepath.Join(dir, "map.nft"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("unshare", "--net", "sh", "-c",
		`chroot "$1" /usr/sbin/nft -f /map.nft && chroot "$1" /usr/sbin/nft --json list map ip t m`, "sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("nft -f map.nft, then nft --json list map, in a new network namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `{"concat": ["10.96.0.1", "tcp", 443]}`) {
		t.Errorf("nft --json lists the map's key without the protocol's name (kube-proxy would delete the element at its next full resync):\n%s", out)
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
