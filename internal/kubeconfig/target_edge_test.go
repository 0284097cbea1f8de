package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestTargetPathLinkChains: a chain of as many symbolic links as the kernel
// follows (40) resolves to the file, one more is refused as the kernel
// refuses it; an absolute link target is taken as it is; a link to a file
// that does not exist yet resolves to that file's path. The error names
// the path given, not where the chain stopped.
func TestTargetPathLinkChains(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	prev := "config"
	for i := 1; i <= maxSymlinks+1; i++ {
		name := fmt.Sprintf("l%02d", i)
		if err := os.Symlink(prev, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		prev = name
	}
	l40, l41 := filepath.Join(dir, "l40"), filepath.Join(dir, "l41")
	// The kernel agrees: 40 links open, 41 do not.
	if _, err := os.ReadFile(l40); err != nil {
		t.Fatalf("the kernel does not open 40 links: %v", err)
	}
	if _, err := os.ReadFile(l41); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("the kernel opens 41 links: %v", err)
	}
	if got, err := TargetPath(l40, ""); err != nil || got != file {
		t.Errorf("40 links: %q %v, want %s", got, err, file)
	}
	got, err := TargetPath(l41, "")
	if KindOf(err) != KindIO || err.Error() != "kubeconfig "+l41+": too many levels of symbolic links" || got != "" {
		t.Errorf("41 links: %q %v", got, err)
	}

	abs := filepath.Join(dir, "abs")
	if err := os.Symlink(file, abs); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	// A relative target is relative to the link's own directory, not the
	// current one.
	if err := os.Symlink("../l05", filepath.Join(sub, "rel")); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("new/config", dangling); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	for link, want := range map[string]string{abs: file, "rel": file, dangling: filepath.Join(dir, "new", "config"), "plain": filepath.Join(sub, "plain")} {
		if got, err := TargetPath("", link); err != nil || got != want {
			t.Errorf("%s: %q %v, want %s", link, got, err, want)
		}
	}
}
