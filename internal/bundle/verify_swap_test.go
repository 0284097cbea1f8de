//go:build unix

package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layoutVersion is a complete, self-consistent bundle in a new directory
// whose files differ from layout's (another build of the same versions).
func layoutVersion(t *testing.T, arts []Artifact, tag string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	sums := map[string]string{}
	var list []Sum
	for _, a := range arts {
		p := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(strings.Repeat(tag+" "+a.Path+"\n", 300))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sums[a.Path] = sha(data)
		list = append(list, Sum{SHA256: sha(data), Path: a.Path})
	}
	if err := WriteSums(context.Background(), filepath.Join(dir, SumsFile), list); err != nil {
		t.Fatal(err)
	}
	return dir, sums
}

// replaceWith puts a copy of src in dir's place the way a tool that
// re-lays a bundle does (hack/lab's LayoutBundle, a new download): the new
// directory is renamed in, the old one removed.
func replaceWith(t *testing.T, dir, src string) {
	t.Helper()
	next := dir + ".next"
	if err := os.CopyFS(next, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir + ".old"); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyOneStateOfTheDirectory: a self-consistent bundle replaced by
// another self-consistent one while it is checked (the long hashing of a
// loaded machine is where that happens) is reported as one of the two,
// whole, never as a mix: a replacement after the files were opened
// checks the old state; one between SHA256SUMS and the files checks again
// and gets the new one. Checking by path, as before, read the old
// SHA256SUMS and the new files: "corrupted", exit 1, and a rerun passed.
// A directory that never stops changing is reported as such.
func TestVerifyOneStateOfTheDirectory(t *testing.T) {
	arts := mustArtifacts(t)
	one, sumsOne := layoutVersion(t, arts, "one")
	two, sumsTwo := layoutVersion(t, arts, "two")
	for _, tc := range []struct {
		name string
		hook func(h *verifyHooks, swap func())
		want map[string]string
	}{
		{"replaced after the files were opened", func(h *verifyHooks, swap func()) { h.afterOpen = swap }, sumsOne},
		{"replaced between SHA256SUMS and the files", func(h *verifyHooks, swap func()) { h.afterSums = swap }, sumsTwo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bundle")
			if err := os.CopyFS(dir, os.DirFS(one)); err != nil {
				t.Fatal(err)
			}
			swaps := 0
			var h verifyHooks
			tc.hook(&h, func() {
				if swaps == 0 {
					replaceWith(t, dir, two)
				}
				swaps++
			})
			r, err := verifyArtifacts(context.Background(), dir, arts, h)
			if err != nil {
				t.Fatal(err)
			}
			if r.Err() != nil || len(r.OK) != len(arts) {
				t.Fatalf("a self-consistent bundle replaced by another: %v", r.Err())
			}
			for _, a := range arts {
				if c := r.Checked[a.Path]; c.SHA256 != tc.want[a.Path] || c.Size != 300*int64(len("one "+a.Path+"\n")) {
					t.Errorf("%s: checked %+v, want sha256 %s", a.Path, c, tc.want[a.Path])
				}
			}
		})
	}
	t.Run("never stops changing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "bundle")
		if err := os.CopyFS(dir, os.DirFS(one)); err != nil {
			t.Fatal(err)
		}
		n := 0
		r, err := verifyArtifacts(context.Background(), dir, arts, verifyHooks{afterSums: func() {
			n++
			replaceWith(t, dir, map[bool]string{true: two, false: one}[n%2 == 1])
		}})
		if err != nil {
			t.Fatal(err)
		}
		if n != verifyAttempts || r.Err() == nil || !strings.Contains(r.Err().Error(), ".: the directory changed while it was being checked, 3 times") {
			t.Errorf("%d checks: %v", n, r.Err())
		}
	})
}
