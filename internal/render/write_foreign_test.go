package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/testutil/unpriv"
)

// TestForceKeepsForeignFiles: --force replaces only what render wrote. A
// NOTES.md, a .git/ directory or a symbolic link where render wrote a file
// make it refuse, naming them, and nothing is deleted. A previous render
// with nothing added (the near miss) is replaced, including its files the
// new render no longer writes.
func TestForceKeepsForeignFiles(t *testing.T) {
	ctx := context.Background()
	v1 := []File{{Path: "a/b.yaml", Data: []byte("one")}, {Path: "a/old.yaml", Data: []byte("old")}, {Path: "c.yaml", Data: []byte("c")}}
	v2 := []File{{Path: "a/b.yaml", Data: []byte("two")}, {Path: "c.yaml", Data: []byte("c2")}}
	for _, tc := range []struct {
		name    string
		add     func(t *testing.T, out string)
		foreign []string
	}{
		{"notes", func(t *testing.T, out string) { write(t, filepath.Join(out, "NOTES.md"), "mine") }, []string{"NOTES.md"}},
		{"git", func(t *testing.T, out string) { write(t, filepath.Join(out, ".git", "HEAD"), "ref: main") }, []string{".git/"}},
		{"in a rendered directory", func(t *testing.T, out string) { write(t, filepath.Join(out, "a", "mine.txt"), "mine") }, []string{"a/mine.txt"}},
		{"symlink for a rendered file", func(t *testing.T, out string) {
			p := filepath.Join(out, "c.yaml")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/hostname", p); err != nil {
				t.Fatal(err)
			}
		}, []string{"c.yaml"}},
		{"several", func(t *testing.T, out string) {
			write(t, filepath.Join(out, "NOTES.md"), "mine")
			write(t, filepath.Join(out, "z", "deep", "x"), "mine")
		}, []string{"NOTES.md", "z/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			out := filepath.Join(base, "out")
			if err := WriteDir(ctx, out, v1, false); err != nil {
				t.Fatal(err)
			}
			tc.add(t, out)
			before := readTree(t, out)
			err := WriteDir(ctx, out, v2, true)
			if !errors.Is(err, ErrForeign) {
				t.Fatalf("want ErrForeign, got %v", err)
			}
			for _, f := range tc.foreign {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("the error does not name %s: %v", f, err)
				}
			}
			after := readTree(t, out)
			if len(after) != len(before) {
				t.Fatalf("files changed: %v -> %v", before, after)
			}
			for k, v := range before {
				if after[k] != v {
					t.Errorf("%s changed", k)
				}
			}
			if entries, _ := os.ReadDir(base); len(entries) != 1 {
				t.Errorf("left beside the output: %v", entries)
			}
		})
	}
	t.Run("near miss: a clean previous render", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		if err := WriteDir(ctx, out, v1, false); err != nil {
			t.Fatal(err)
		}
		if err := WriteDir(ctx, out, v2, true); err != nil {
			t.Fatal(err)
		}
		got := readTree(t, out)
		if got["a/b.yaml"] != "two" || got["a/old.yaml"] != "" || len(got) != 3 {
			t.Fatalf("after --force: %v", got)
		}
		if m := got[Marker]; !strings.Contains(m, "\na/b.yaml\n") || !strings.Contains(m, "\nc.yaml\n") || strings.Contains(m, "old.yaml") {
			t.Errorf("the manifest does not list exactly what render wrote:\n%s", m)
		}
	})
}

// TestForceReplacesReadOnlyRender: a previous render made read-only (chmod
// -R a-w, as some people protect generated files) is replaced; the render
// reports success and leaves no .out.tmp-* directory. Root ignores
// directory permissions, so the test re-runs itself as nobody.
func TestForceReplacesReadOnlyRender(t *testing.T) {
	if !unpriv.Run(t) {
		return
	}
	ctx := context.Background()
	base := t.TempDir()
	out := filepath.Join(base, "out")
	if err := WriteDir(ctx, out, []File{{Path: "a/b.yaml", Data: []byte("one")}, {Path: "c.yaml", Data: []byte("c")}}, false); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(out, "a"), out} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteDir(ctx, out, []File{{Path: "a/b.yaml", Data: []byte("two")}}, true); err != nil {
		t.Fatalf("a successful render reported: %v", err)
	}
	if got := readTree(t, out); got["a/b.yaml"] != "two" || len(got) != 2 {
		t.Fatalf("after --force: %v", got)
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("left beside the output: %v", names)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
