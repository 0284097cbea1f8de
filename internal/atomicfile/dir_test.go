//go:build unix

package atomicfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkFixture is a directory the user named (root) beside a directory
// that must never change (outside), with a file in it.
type linkFixture struct {
	root, outside, secret string
}

func newLinkFixture(t *testing.T) linkFixture {
	t.Helper()
	base := t.TempDir()
	f := linkFixture{root: filepath.Join(base, "collect"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.secret = filepath.Join(f.outside, "node.log")
	if err := os.WriteFile(f.secret, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// unchanged fails unless outside is exactly as newLinkFixture left it.
func (f linkFixture) unchanged(t *testing.T) {
	t.Helper()
	st, err := os.Stat(f.outside)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("outside's mode changed: %v %v", st.Mode(), err)
	}
	ents, _ := os.ReadDir(f.outside)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("outside holds %v, want only node.log", names)
	}
	if b, err := os.ReadFile(f.secret); err != nil || string(b) != "outside\n" {
		t.Errorf("outside/node.log is %q %v", b, err)
	}
}

// openBoth runs body with the directory opened twice: through openat2 (the
// Linux fast path) and with the walk alone (every other Unix, and what
// names the link).
func openBoth(t *testing.T, root string, body func(t *testing.T, d *Dir)) {
	for _, walkOnly := range []bool{false, true} {
		name := "openat2"
		if walkOnly {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			d, err := OpenDir(root, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			d.sys.walkOnly = walkOnly
			body(t, d)
		})
	}
}

// wantLink fails unless err is a LinkError naming path.
func wantLink(t *testing.T, err error, path string) {
	t.Helper()
	var le *LinkError
	if !errors.As(err, &le) || !errors.Is(err, ErrLink) || le.Path != path {
		t.Fatalf("err = %v, want a LinkError for %s", err, path)
	}
	if !strings.Contains(err.Error(), "refusing to write through "+path) {
		t.Errorf("the message does not name the link: %v", err)
	}
}

// TestDirRefusesLinks: a link below the directory, at any depth and
// wherever it points (outside, inside, nowhere), is refused where a
// directory would be made or a file written, and nothing outside changes.
func TestDirRefusesLinks(t *testing.T) {
	f := newLinkFixture(t)
	if err := os.Mkdir(filepath.Join(f.root, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"node-1":          "../outside", // the attack: DIR/<node> -> ../outside
		"node-2":          f.outside,    // absolute
		"node-3":          "inside",     // a link that stays inside is still not ours
		"node-4":          "nowhere",    // dangling: mkdir would create its target
		"inside/deep":     "../../outside",
		"findings.json":   "../outside/node.log",
		"inside/file.txt": "../../outside/new.txt",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(f.root, l)); err != nil {
			t.Fatal(err)
		}
	}
	openBoth(t, f.root, func(t *testing.T, d *Dir) {
		ctx := context.Background()
		for _, dir := range []string{"node-1", "node-2", "node-3", "node-4"} {
			_, err := d.MkdirAll(dir, 0o700)
			wantLink(t, err, filepath.Join(f.root, dir))
			_, err = d.MkdirAll(filepath.Join(dir, "sub"), 0o700)
			wantLink(t, err, filepath.Join(f.root, dir))
			_, err = d.OpenSub(dir)
			wantLink(t, err, filepath.Join(f.root, dir))
			err = d.WriteFile(ctx, filepath.Join(dir, "kubelet.log"), []byte("x"), 0o600, Options{})
			wantLink(t, err, filepath.Join(f.root, dir))
		}
		_, err := d.MkdirAll("inside/deep/x", 0o700)
		wantLink(t, err, filepath.Join(f.root, "inside", "deep"))
		for _, file := range []string{"findings.json", "inside/file.txt"} {
			err := d.WriteFile(ctx, file, []byte("replaced"), 0o600, Options{})
			wantLink(t, err, filepath.Join(f.root, file))
			_, err = d.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			wantLink(t, err, filepath.Join(f.root, file))
			_, err = d.OpenFile(file, os.O_RDONLY, 0)
			wantLink(t, err, filepath.Join(f.root, file))
			_, err = d.CreateTemp(filepath.Join("node-1", "x"), 0o600)
			wantLink(t, err, filepath.Join(f.root, "node-1"))
		}
		// The links are still links, the dangling one still dangles.
		for l := range links {
			if st, err := os.Lstat(filepath.Join(f.root, l)); err != nil || st.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("%s is no longer a link: %v", l, err)
			}
		}
		if _, err := os.Stat(filepath.Join(f.root, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the dangling link's target was created: %v", err)
		}
		f.unchanged(t)
		// A path that leaves the directory is refused before anything.
		for _, bad := range []string{"../outside/x", "/etc/passwd"} {
			if err := d.WriteFile(ctx, bad, []byte("x"), 0o600, Options{}); err == nil || !strings.Contains(err.Error(), "is not a path inside") {
				t.Errorf("%s: %v", bad, err)
			}
		}
	})
}

// TestDirWritesBelow: the same calls without links make the directories and
// write the files, atomically, with their modes; the user's own directory
// may itself be a link (followed: the user named it).
func TestDirWritesBelow(t *testing.T) {
	f := newLinkFixture(t)
	named := filepath.Join(filepath.Dir(f.root), "named")
	if err := os.Symlink("collect", named); err != nil {
		t.Fatal(err)
	}
	openBoth(t, named, func(t *testing.T, d *Dir) {
		ctx := context.Background()
		sub, err := d.MkdirAll(filepath.Join("node-1", "cni"), 0o700)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if sub.Name() != filepath.Join(named, "node-1", "cni") {
			t.Errorf("name %s", sub.Name())
		}
		if err := sub.WriteFile(ctx, "10-calico.conflist", []byte("{}"), 0o600, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteFile(ctx, "findings.json", []byte("[]"), 0o644, Options{}); err != nil {
			t.Fatal(err)
		}
		// Again: existing directories are reused, files replaced.
		if _, err := d.MkdirAll(filepath.Join("node-1", "cni"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteFile(ctx, "findings.json", []byte("[1]"), 0o644, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteFile(ctx, "findings.json", []byte("[2]"), 0o644, Options{NoClobber: true}); !errors.Is(err, ErrExists) {
			t.Errorf("NoClobber: %v", err)
		}
		for p, want := range map[string]struct {
			data string
			mode fs.FileMode
		}{"node-1/cni/10-calico.conflist": {"{}", 0o600}, "findings.json": {"[1]", 0o644}} {
			full := filepath.Join(f.root, p)
			b, err := os.ReadFile(full)
			st, _ := os.Stat(full)
			if err != nil || string(b) != want.data || st.Mode().Perm() != want.mode {
				t.Errorf("%s: %q %v %v", p, b, st.Mode(), err)
			}
		}
		st, err := d.Lstat("node-1")
		if err != nil || !st.IsDir() || st.Name() != "node-1" {
			t.Errorf("Lstat: %v %v", st, err)
		}
		assertNoTemps(t, f.root)
		assertNoTemps(t, filepath.Join(f.root, "node-1", "cni"))
		f.unchanged(t)
		_ = os.RemoveAll(filepath.Join(f.root, "node-1"))
		_ = os.Remove(filepath.Join(f.root, "findings.json"))
	})
}

// TestDirTempAbortAndHook: a failure after the temporary file is complete
// (BeforeRename) or an Abort leaves the target untouched and no temporary
// file.
func TestDirTempAbortAndHook(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDir(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if err := d.WriteFile(ctx, "f", []byte("old"), 0o644, Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var seen string
	err = d.WriteFile(ctx, "f", []byte("new"), 0o644, Options{BeforeRename: func(tmp string) error {
		seen = tmp
		if st, err := os.Stat(tmp); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("the temporary file before the rename: %v %v", st, err)
		}
		return boom
	}})
	if !errors.Is(err, boom) || !strings.HasPrefix(filepath.Base(seen), ".f.tmp-") {
		t.Fatalf("err %v, tmp %q", err, seen)
	}
	tmp, err := d.CreateTemp("f", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(tmp.Path()); st.Mode().Perm() != 0o600 {
		t.Errorf("a temporary file is %v while written, want 0600", st.Mode())
	}
	_, _ = tmp.Write([]byte("partial"))
	tmp.Abort()
	if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != "old" {
		t.Errorf("f is %q", b)
	}
	assertNoTemps(t, root)
}

// TestOpenDirCreate: a missing directory the user named is made with its
// parents; a dangling link on the way is refused, not followed.
func TestOpenDirCreate(t *testing.T) {
	f := newLinkFixture(t)
	d, err := OpenDir(filepath.Join(f.root, "a", "b"), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if st, err := os.Stat(filepath.Join(f.root, "a", "b")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("made %v %v", st, err)
	}
	if err := os.Symlink("../outside/made", filepath.Join(f.root, "dangling")); err != nil {
		t.Fatal(err)
	}
	_, err = OpenDir(filepath.Join(f.root, "dangling", "x"), 0o700)
	wantLink(t, err, filepath.Join(f.root, "dangling"))
	f.unchanged(t)
}

// TestWriteFollowsTheUsersLink: a file the user named that is a link is
// written through (the link kept), as kubectl and ssh do; in a sticky,
// world-writable directory a link owned by another user is refused, as
// the kernel refuses it.
func TestWriteFollowsTheUsersLink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "known_hosts")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "known_hosts")
	if err := os.Symlink("dotfiles/known_hosts", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, link, []byte("line\n"), 0o600, Options{}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the user's link was replaced: %v %v", st, err)
	}
	if b, err := os.ReadFile(real); err != nil || string(b) != "line\n" {
		t.Errorf("the link's file: %q %v", b, err)
	}

	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(shared, "cluster.yaml")
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	// The user's own link in the shared directory is followed.
	if err := Write(ctx, planted, []byte("mine\n"), 0o600, Options{}); err != nil {
		t.Fatalf("the user's own link in a sticky directory: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("another user's link needs root to make (lchown); CI runs as root")
	}
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := Write(ctx, planted, []byte("replaced\n"), 0o600, Options{})
	wantLink(t, err, planted)
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("written through another user's link: %q", b)
	}
	// Outside a sticky directory the same link is the user's to follow.
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, planted, []byte("now\n"), 0o600, Options{}); err != nil {
		t.Errorf("a link in a private directory: %v", err)
	}
}

// TestResolveUserPathChain: 40 links resolve, 41 do not, as the kernel
// counts.
func TestResolveUserPathChain(t *testing.T) {
	dir := t.TempDir()
	prev := "file"
	for i := 1; i <= MaxSymlinks+1; i++ {
		name := "l" + strings.Repeat("x", i)
		if err := os.Symlink(prev, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		prev = name
	}
	if got, err := ResolveUserPath(filepath.Join(dir, "l"+strings.Repeat("x", MaxSymlinks))); err != nil || got != filepath.Join(dir, "file") {
		t.Errorf("40 links: %q %v", got, err)
	}
	if _, err := ResolveUserPath(filepath.Join(dir, prev)); !errors.Is(err, ErrTooManyLinks) {
		t.Errorf("41 links: %v", err)
	}
}
