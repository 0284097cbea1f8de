// Package atomicfile writes files so that readers see the old content or
// the new content, never a part: a temporary file in the same directory,
// fsync, rename, fsync of the directory.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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

// Write writes data to path with permission perm (the temp file is created
// with perm, so a secret is never readable by others, not even briefly).
func Write(ctx context.Context, path string, data []byte, perm fs.FileMode, opts Options) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if opts.BeforeRename != nil {
		if err := opts.BeforeRename(tmpName); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if opts.NoClobber {
		if err := os.Link(tmpName, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s already exists: %w", path, ErrExists)
			}
			return fmt.Errorf("writing %s: %w", path, err)
		}
		_ = os.Remove(tmpName)
	} else if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that a rename in it is durable. On Windows
// it does nothing: there is no directory fsync, and os.Rename's
// MoveFileEx(MOVEFILE_REPLACE_EXISTING) is what makes the replace atomic.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
