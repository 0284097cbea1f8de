//go:build !unix

package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// dirSys is the open directory as an os.Root: no name below it resolves
// outside it; each name is also checked with Lstat, so a link is refused
// as on Unix (without the guarantee against a link swapped in between).
type dirSys struct {
	root *os.Root
}

func openDir(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{name: path, sys: dirSys{root: r}}, nil
}

// Close closes the directory.
func (d *Dir) Close() error {
	if d == nil || d.sys.root == nil {
		return nil
	}
	err := d.sys.root.Close()
	d.sys.root = nil
	return err
}

// walk opens c below d one name at a time, refusing links; with create, a
// missing name is made first.
func (d *Dir) walk(c string, create bool, perm fs.FileMode) (*os.Root, error) {
	cur, err := d.sys.root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	done := ""
	for _, name := range components(c) {
		done = filepath.Join(done, name)
		fi, err := cur.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err := cur.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
				cur.Close()
				return nil, err
			}
			fi, err = cur.Lstat(name)
		}
		if err != nil {
			cur.Close()
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := cur.Readlink(name)
			cur.Close()
			return nil, &LinkError{Path: d.Path(done), Target: target}
		}
		next, err := cur.OpenRoot(name)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// MkdirAll makes the directory rel below d (and its missing parents)
// without following links, and opens it.
func (d *Dir) MkdirAll(rel string, perm fs.FileMode) (*Dir, error) {
	c, err := d.checkRel(rel)
	if err != nil {
		return nil, err
	}
	r, err := d.walk(c, true, perm)
	if err != nil {
		return nil, err
	}
	return &Dir{name: d.Path(c), sys: dirSys{root: r}}, nil
}

// OpenSub opens the existing directory rel below d without following
// links.
func (d *Dir) OpenSub(rel string) (*Dir, error) {
	c, err := d.checkRel(rel)
	if err != nil {
		return nil, err
	}
	r, err := d.walk(c, false, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{name: d.Path(c), sys: dirSys{root: r}}, nil
}

// Chmod sets the directory's own permission.
func (d *Dir) Chmod(perm fs.FileMode) error { return os.Chmod(d.name, perm) }

// Sync does nothing: there is no directory fsync here.
func (d *Dir) Sync() error { return nil }

func (d *Dir) parent(rel string) (*os.Root, string, string, error) {
	dir, base, err := d.split(rel)
	if err != nil {
		return nil, "", "", err
	}
	r, err := d.walk(dir, false, 0)
	return r, base, filepath.Join(dir, base), err
}

// Lstat describes rel without following a link.
func (d *Dir) Lstat(rel string) (fs.FileInfo, error) {
	r, base, _, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Lstat(base)
}

// OpenFile opens rel as os.OpenFile does, refusing a link there.
func (d *Dir) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	r, base, c, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi, err := r.Lstat(base); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := r.Readlink(base)
		return nil, &LinkError{Path: d.Path(c), Target: target}
	}
	return r.OpenFile(base, flag, perm)
}

// Remove removes rel (a link itself, never its target).
func (d *Dir) Remove(rel string) error {
	r, base, _, err := d.parent(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(base)
}

// Rename renames oldrel to newrel, both below d.
func (d *Dir) Rename(oldrel, newrel string) error {
	for _, rel := range []string{oldrel, newrel} {
		r, _, _, err := d.parent(rel)
		if err != nil {
			return err
		}
		r.Close()
	}
	return d.sys.root.Rename(oldrel, newrel)
}

// Exchange is not available here: the caller renames twice.
func (d *Dir) Exchange(a, b string) error { return errors.New("no atomic exchange on this OS") }

// MkdirTemp makes a new directory directly in d named prefix followed by a
// random string and returns its name.
func (d *Dir) MkdirTemp(prefix string, perm fs.FileMode) (string, error) {
	for range 100 {
		name := prefix + randomSuffix()
		err := d.sys.root.Mkdir(name, perm)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no unused temporary directory name", d.name)
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateTemp creates a new temporary file beside rel that Commit puts in
// rel's place.
func (d *Dir) CreateTemp(rel string, perm fs.FileMode) (*Temp, error) {
	r, base, c, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	for range 100 {
		name := "." + base + ".tmp-" + randomSuffix()
		f, err := r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		return &Temp{File: f, d: d, rel: c, perm: perm, tmp: tempSys{root: r, name: name, base: base, d: d, rel: c}}, nil
	}
	r.Close()
	return nil, fmt.Errorf("%s: no unused temporary file name", d.Path(c))
}

type tempSys struct {
	root       *os.Root
	name, base string
	d          *Dir
	rel        string
	done       bool
}

func (t *tempSys) commit(noClobber bool) error {
	if fi, err := t.root.Lstat(t.base); !noClobber && err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := t.root.Readlink(t.base)
		return &LinkError{Path: t.d.Path(t.rel), Target: target}
	}
	if noClobber {
		if err := renameNoReplace(t.root, filepath.Join(t.d.name, filepath.Dir(t.rel)), t.name, t.base); err != nil {
			return err
		}
	} else if err := t.root.Rename(t.name, t.base); err != nil {
		return err
	}
	t.done = true
	t.root.Close()
	t.root = nil
	return nil
}

func (t *tempSys) abort() {
	if t.root == nil {
		return
	}
	if !t.done {
		if err := t.root.Remove(t.name); err != nil {
			// A Windows without the removal by handle os.Root uses
			// (wine answers "Invalid function"): by its path, a name
			// hybridctl made at random in a directory it opened.
			_ = os.Remove(filepath.Join(t.d.name, filepath.Dir(t.rel), t.name))
		}
	}
	t.root.Close()
	t.root = nil
}

// ReadDir lists the directory's entries, sorted by name.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	f, err := d.sys.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Stat describes the directory itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.sys.root.Stat(".") }
