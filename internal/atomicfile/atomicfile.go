// Package atomicfile is how hybridctl writes files: so that readers see
// the old content or the new content, never a part (a temporary file
// beside the target, fsync, rename, fsync of the directory), so that a
// secret is never readable by others (the temporary file is 0600 until it
// is complete), and never through a symbolic link it did not make.
//
// The rule for links: hybridctl follows what the user named, never what
// it finds under it. A path the user gives (a flag, an argument, or a
// documented default such as ~/.kube/config or ~/.ssh/known_hosts) is
// used as the kernel resolves it, links included, as kubectl and ssh do
// (Write, ResolveUserPath), except a link the kernel itself would not
// follow for this user (fs.protected_symlinks: a link in a sticky,
// world-writable directory such as /tmp owned by neither the user nor the
// directory's owner). Below a directory the user names as an output (Dir:
// render -o, node diagnose --collect, a bundle directory) no link is
// followed: a link where a directory or file would be written is refused,
// named, whoever made it.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned by Write with NoClobber when the target exists.
var ErrExists = fs.ErrExist

// Options tune Write.
type Options struct {
	// NoClobber refuses to replace an existing file (the check and the
	// write are one atomic step: a hard link of the finished temp file).
	NoClobber bool
	// BeforeRename, when set, runs after the temporary file is complete and
	// before it replaces path (tests inject failures here); an error
	// aborts the write and leaves path untouched.
	BeforeRename func(tmp string) error
}

// Write writes data to path, a file the user named, atomically with
// permission perm (the temporary file is 0600 until it is complete, so a
// secret is never readable by others, not even briefly). When path is a
// symbolic link, the file it leads to is replaced and the link kept
// (ResolveUserPath); links in its directory are followed as the kernel
// follows them. The directory must exist (MkdirAll).
func Write(ctx context.Context, path string, data []byte, perm fs.FileMode, opts Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := ResolveUserPath(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	d, err := OpenDir(filepath.Dir(p), 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer d.Close()
	return d.WriteFile(ctx, filepath.Base(p), data, perm, opts)
}

// MkdirAll makes the directory path the user named, with its missing
// parents (perm), each without following links; the existing part of path
// is followed as the kernel follows it.
func MkdirAll(path string, perm fs.FileMode) error {
	d, err := OpenDir(path, perm)
	if err != nil {
		return err
	}
	return d.Close()
}

// MaxSymlinks is how many symbolic links ResolveUserPath follows: Linux's
// limit (MAXSYMLINKS), so that a chain the kernel opens resolves here too.
const MaxSymlinks = 40

// ErrTooManyLinks is ResolveUserPath's error for a chain longer than
// MaxSymlinks.
var ErrTooManyLinks = errors.New("too many levels of symbolic links")

// ResolveUserPath follows the chain of symbolic links at path, a file the
// user named (whose target may not exist yet), and returns the file it
// leads to; relative link targets are relative to the link's directory.
// A link the kernel would not follow for this user (FollowLink) is a
// *LinkError.
func ResolveUserPath(path string) (string, error) {
	// One more round than links: the last one finds the file itself.
	for range MaxSymlinks + 1 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if err := FollowLink(path, dest, fi); err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", ErrTooManyLinks
}
