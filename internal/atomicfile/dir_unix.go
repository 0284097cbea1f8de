//go:build unix

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
	"time"

	"golang.org/x/sys/unix"
)

// dirSys is the open directory: a descriptor every name below it is
// resolved from.
type dirSys struct {
	fd int
	// walkOnly skips openat2 (tests: the walk is the portable path and
	// the one that names the link).
	walkOnly bool
}

func openDir(path string) (*Dir, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{name: path, sys: dirSys{fd: fd}}, nil
}

// retry repeats a system call interrupted by a signal.
func retry(call func() (int, error)) (int, error) {
	for {
		fd, err := call()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// Close closes the directory.
func (d *Dir) Close() error {
	if d == nil || d.sys.fd < 0 {
		return nil
	}
	err := unix.Close(d.sys.fd)
	d.sys.fd = -1
	return err
}

func (d *Dir) dup() (int, error) {
	return unix.FcntlInt(uintptr(d.sys.fd), unix.F_DUPFD_CLOEXEC, 0)
}

// walk opens the directory c (cleaned, relative) below d one name at a time
// with O_NOFOLLOW; with create, a missing name is made first (perm). On
// Linux, without create, one openat2 call that refuses any link does it
// when it can; its failures are left to the walk, which names the link.
func (d *Dir) walk(c string, create bool, perm fs.FileMode) (int, error) {
	if !create && !d.sys.walkOnly && c != "." {
		if fd, ok := openBeneath(d.sys.fd, c); ok {
			return fd, nil
		}
	}
	cur, err := d.dup()
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: d.name, Err: err}
	}
	done := ""
	for _, name := range components(c) {
		done = filepath.Join(done, name)
		if create {
			if err := unix.Mkdirat(cur, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				err = d.classify(cur, name, done, "mkdir", err)
				_ = unix.Close(cur)
				return -1, err
			}
		}
		fd, err := retry(func() (int, error) {
			return unix.Openat(cur, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			err = d.classify(cur, name, done, "open", err)
			_ = unix.Close(cur)
			return -1, err
		}
		_ = unix.Close(cur)
		cur = fd
	}
	return cur, nil
}

// classify turns a failure on name (in the directory parent) into a
// LinkError when name is a symbolic link, else a *fs.PathError.
func (d *Dir) classify(parent int, name, rel, op string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		target := ""
		if n, err := unix.Readlinkat(parent, name, buf); err == nil {
			target = string(buf[:n])
		}
		return &LinkError{Path: d.Path(rel), Target: target}
	}
	return &fs.PathError{Op: op, Path: d.Path(rel), Err: err}
}

// MkdirAll makes the directory rel below d (and its missing parents) with
// permission perm, without following links, and opens it. Existing
// directories are kept as they are.
func (d *Dir) MkdirAll(rel string, perm fs.FileMode) (*Dir, error) {
	c, err := d.checkRel(rel)
	if err != nil {
		return nil, err
	}
	fd, err := d.walk(c, true, perm)
	if err != nil {
		return nil, err
	}
	return &Dir{name: d.Path(c), sys: dirSys{fd: fd, walkOnly: d.sys.walkOnly}}, nil
}

// OpenSub opens the existing directory rel below d without following
// links.
func (d *Dir) OpenSub(rel string) (*Dir, error) {
	c, err := d.checkRel(rel)
	if err != nil {
		return nil, err
	}
	fd, err := d.walk(c, false, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{name: d.Path(c), sys: dirSys{fd: fd, walkOnly: d.sys.walkOnly}}, nil
}

// Chmod sets the directory's own permission.
func (d *Dir) Chmod(perm fs.FileMode) error {
	if err := unix.Fchmod(d.sys.fd, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: d.name, Err: err}
	}
	return nil
}

// Sync fsyncs the directory (so that a rename in it is durable).
func (d *Dir) Sync() error {
	if err := unix.Fsync(d.sys.fd); err != nil && !errors.Is(err, unix.EINVAL) {
		return &fs.PathError{Op: "fsync", Path: d.name, Err: err}
	}
	return nil
}

// parent opens the directory of rel and returns it with rel's last name.
func (d *Dir) parent(rel string) (fd int, base, c string, err error) {
	dir, base, err := d.split(rel)
	if err != nil {
		return -1, "", "", err
	}
	fd, err = d.walk(dir, false, 0)
	return fd, base, filepath.Join(dir, base), err
}

// Lstat describes rel without following a link there (or on the way).
func (d *Dir) Lstat(rel string) (fs.FileInfo, error) {
	pfd, base, c, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.Path(c), Err: err}
	}
	return statInfo(base, &st), nil
}

// OpenFile opens rel with flag and perm as os.OpenFile does, never through
// a link (O_NOFOLLOW on the name, no link on the way): a link there is a
// LinkError.
func (d *Dir) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	pfd, base, c, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := retry(func() (int, error) {
		return unix.Openat(pfd, base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return nil, d.classify(pfd, base, c, "open", err)
	}
	return os.NewFile(uintptr(fd), d.Path(c)), nil
}

// Remove removes the file (or empty directory) rel; a link there is
// removed itself, never its target.
func (d *Dir) Remove(rel string) error {
	pfd, base, c, err := d.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	err = unix.Unlinkat(pfd, base, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if err2 := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR); err2 == nil {
			return nil
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: d.Path(c), Err: err}
	}
	return nil
}

// Rename renames oldrel to newrel, both below d (a link at newrel is
// replaced, not followed).
func (d *Dir) Rename(oldrel, newrel string) error {
	ofd, obase, oc, err := d.parent(oldrel)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nbase, nc, err := d.parent(newrel)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Renameat(ofd, obase, nfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Path(oc), New: d.Path(nc), Err: err}
	}
	return nil
}

// Exchange swaps the names a and b (both directly in d) atomically where
// the OS can (Linux renameat2 RENAME_EXCHANGE); elsewhere it fails and
// the caller renames twice.
func (d *Dir) Exchange(a, b string) error {
	return exchangeAt(d.sys.fd, a, b)
}

// MkdirTemp makes a new directory directly in d named prefix followed by a
// random string, with permission perm, and returns its name.
func (d *Dir) MkdirTemp(prefix string, perm fs.FileMode) (string, error) {
	for range 100 {
		name := prefix + randomSuffix()
		err := unix.Mkdirat(d.sys.fd, name, uint32(perm.Perm()))
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", &fs.PathError{Op: "mkdir", Path: d.Path(name), Err: err}
		}
	}
	return "", fmt.Errorf("%s: no unused temporary directory name", d.name)
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateTemp creates a new temporary file beside rel (".NAME.tmp-RANDOM",
// 0600, never an existing file, never through a link) that Commit puts in
// rel's place with permission perm. The directory of rel must exist.
func (d *Dir) CreateTemp(rel string, perm fs.FileMode) (*Temp, error) {
	pfd, base, c, err := d.parent(rel)
	if err != nil {
		return nil, err
	}
	for range 100 {
		name := "." + base + ".tmp-" + randomSuffix()
		fd, err := retry(func() (int, error) {
			return unix.Openat(pfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			_ = unix.Close(pfd)
			return nil, &fs.PathError{Op: "create", Path: d.Path(filepath.Join(filepath.Dir(c), name)), Err: err}
		}
		f := os.NewFile(uintptr(fd), d.Path(filepath.Join(filepath.Dir(c), name)))
		return &Temp{File: f, d: d, rel: c, perm: perm, tmp: tempSys{parent: pfd, name: name, base: base, d: d, rel: c}}, nil
	}
	_ = unix.Close(pfd)
	return nil, fmt.Errorf("%s: no unused temporary file name", d.Path(c))
}

// tempSys is the temporary file's directory and names.
type tempSys struct {
	parent     int
	name, base string
	d          *Dir
	rel        string
	done       bool
}

func (t *tempSys) commit(noClobber bool) error {
	// linkat never follows a link at its new name (EEXIST): only a
	// rename needs the check.
	var st unix.Stat_t
	if err := unix.Fstatat(t.parent, t.base, &st, unix.AT_SYMLINK_NOFOLLOW); !noClobber && err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return t.d.classify(t.parent, t.base, t.rel, "rename", unix.ELOOP)
	}
	if noClobber {
		if err := unix.Linkat(t.parent, t.name, t.parent, t.base, 0); err != nil {
			return &fs.PathError{Op: "link", Path: t.d.Path(t.rel), Err: err}
		}
		_ = unix.Unlinkat(t.parent, t.name, 0)
	} else if err := unix.Renameat(t.parent, t.name, t.parent, t.base); err != nil {
		return &fs.PathError{Op: "rename", Path: t.d.Path(t.rel), Err: err}
	}
	t.done = true
	err := unix.Fsync(t.parent)
	_ = unix.Close(t.parent)
	t.parent = -1
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return &fs.PathError{Op: "fsync", Path: filepath.Dir(t.d.Path(t.rel)), Err: err}
	}
	return nil
}

func (t *tempSys) abort() {
	if t.parent < 0 {
		return
	}
	if !t.done {
		_ = unix.Unlinkat(t.parent, t.name, 0)
	}
	_ = unix.Close(t.parent)
	t.parent = -1
}

// unixInfo is an fs.FileInfo of a stat result.
type unixInfo struct {
	name string
	st   unix.Stat_t
}

func statInfo(name string, st *unix.Stat_t) fs.FileInfo { return &unixInfo{name: name, st: *st} }

func (s *unixInfo) Name() string       { return s.name }
func (s *unixInfo) Size() int64        { return s.st.Size }
func (s *unixInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *unixInfo) Sys() any           { return &s.st }
func (s *unixInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *unixInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// ReadDir lists the directory's entries (names and types, not followed),
// sorted by name.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(d.sys.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Stat describes the directory itself.
func (d *Dir) Stat() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.sys.fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: d.name, Err: err}
	}
	return statInfo(filepath.Base(d.name), &st), nil
}
