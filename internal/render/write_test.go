package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteDir(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	out := filepath.Join(base, "out")
	v1 := []File{{Path: "a/b.yaml", Data: []byte("one"), Mode: 0o644}, {Path: "secret/join.yaml", Data: []byte("token"), Mode: 0o600}}
	if err := WriteDir(ctx, out, v1, false); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, out)
	if got["a/b.yaml"] != "one" || got["secret/join.yaml"] != "token" || got[Marker] == "" || len(got) != 3 {
		t.Fatalf("tree %v", got)
	}
	fi, err := os.Stat(filepath.Join(out, "secret/join.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("join.yaml mode %v, %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("out mode %v, %v", fi.Mode(), err)
	}

	// Non-empty without force: refused, untouched.
	v2 := []File{{Path: "c.yaml", Data: []byte("two")}}
	if err := WriteDir(ctx, out, v2, false); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("non-empty without force: %v", err)
	}
	if got := readTree(t, out); got["a/b.yaml"] != "one" {
		t.Fatal("refused write changed the directory")
	}
	// With force: replaced completely (old files gone).
	if err := WriteDir(ctx, out, v2, true); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, out); got["c.yaml"] != "two" || len(got) != 2 {
		t.Fatalf("after --force: %v", got)
	}
	// No temporary directories left beside it.
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 {
		t.Fatalf("left beside the output: %v", entries)
	}
}

func TestWriteDirRefusesForeignDirEvenWithForce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteDir(context.Background(), dir, []File{{Path: "x", Data: []byte("x")}}, true)
	if err == nil {
		t.Fatal("--force replaced a directory render did not write")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cluster.yaml")); string(b) != "mine" {
		t.Fatal("the user's file is gone")
	}
}

func TestWriteDirEmptyExisting(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(context.Background(), dir, []File{{Path: "x", Data: []byte("x")}}, false); err != nil {
		t.Fatalf("empty existing dir: %v", err)
	}
	if got := readTree(t, dir); got["x"] != "x" {
		t.Fatalf("%v", got)
	}
}

// A failure part-way (a path escaping the directory, a cancelled context)
// leaves nothing behind.
func TestWriteDirAllOrNothing(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "out")
	err := WriteDir(context.Background(), out, []File{{Path: "ok", Data: []byte("x")}, {Path: "../escape", Data: []byte("x")}}, false)
	if err == nil {
		t.Fatal("a path outside the directory was written")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteDir(ctx, out, []File{{Path: "ok", Data: []byte("x")}}, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	// A file where the directory should be.
	f := filepath.Join(base, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(context.Background(), f, nil, true); err == nil {
		t.Fatal("wrote over a file")
	}
}

func TestRenderedModesOnDisk(t *testing.T) {
	files, err := Render(labPlan(t), Options{Token: guideToken, CACertHash: guideHash})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteDir(context.Background(), out, files, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(out, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.Mode {
			t.Errorf("%s: mode %o on disk, want %o", f.Path, fi.Mode().Perm(), f.Mode)
		}
	}
}

// A relative output directory ("out/", "./out", "out"): os.MkdirTemp(".")
// names the temporary directory "./.out.tmp-N", which the nested paths lose
// when they are cleaned; every nested directory must still be made.
func TestWriteDirRelative(t *testing.T) {
	for _, dir := range []string{"out/", "./out", "out", "x/../out"} {
		t.Run(dir, func(t *testing.T) {
			t.Chdir(t.TempDir())
			files := []File{{Path: "cluster/windows/kube-proxy.yaml", Data: []byte("k"), Mode: 0o644}, {Path: "top.md", Data: []byte("t"), Mode: 0o644}}
			if err := os.MkdirAll("x", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteDir(context.Background(), dir, files, false); err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, "out"); got["cluster/windows/kube-proxy.yaml"] != "k" || got["top.md"] != "t" {
				t.Fatalf("tree %v", got)
			}
		})
	}
}

// TestWriteDirFollowsTheUsersLink: -o DIR where DIR is a symbolic link the
// user made to a directory renders where it points, first time and with
// --force; the link stays a link. What is inside it is not followed: a
// link in the previous render is foreign (TestForceKeepsForeignFiles).
func TestWriteDirFollowsTheUsersLink(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	real := filepath.Join(base, "renders", "lab")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "out")
	if err := os.Symlink("renders/lab", out); err != nil {
		t.Fatal(err)
	}
	for i, force := range []bool{false, true} {
		data := []byte{byte('a' + i)}
		if err := WriteDir(ctx, out, []File{{Path: "nodes/n1/prepare.sh", Data: data, Mode: 0o755}}, force); err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if st, err := os.Lstat(out); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("render %d replaced the user's link: %v %v", i, st, err)
		}
		if got := readTree(t, real)["nodes/n1/prepare.sh"]; got != string(data) {
			t.Errorf("render %d: %q in the link's directory", i, got)
		}
	}
	ents, _ := os.ReadDir(base)
	if len(ents) != 2 {
		t.Errorf("left beside the output: %v", ents)
	}
}
