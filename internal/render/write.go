package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Marker is the file WriteDir puts at the top of every output directory.
// --force replaces only a directory that has it (or an empty one), so that
// `-o .` with --force cannot wipe a directory render did not write.
const Marker = ".hybridctl-render"

// ErrNotEmpty is returned by WriteDir for a non-empty directory without
// force.
var ErrNotEmpty = errors.New("directory is not empty (use --force to replace a previous render)")

// WriteDir writes files into dir completely or not at all: into a temporary
// directory beside dir (each file and directory fsynced), which then takes
// dir's place with one rename. An existing dir must be empty, or, with
// force, a previous render (it has Marker); it is replaced atomically where
// the OS can exchange two directories (Linux), else with two renames.
func WriteDir(ctx context.Context, dir string, files []File, force bool) (err error) {
	dir = filepath.Clean(dir)
	fi, statErr := os.Lstat(dir)
	exists := statErr == nil
	switch {
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return fmt.Errorf("output directory %s: %w", dir, statErr)
	case exists && !fi.IsDir():
		return fmt.Errorf("output directory %s: exists and is not a directory", dir)
	}
	if exists {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		if len(entries) > 0 {
			if !force {
				return fmt.Errorf("output directory %s: %w", dir, ErrNotEmpty)
			}
			if _, err := os.Lstat(filepath.Join(dir, Marker)); err != nil {
				return fmt.Errorf("output directory %s: not a hybridctl render output (no %s); refusing to replace it even with --force", dir, Marker)
			}
		}
	}
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	all := append([]File{{Path: Marker, Data: []byte("written by hybridctl render; --force replaces this directory\n"), Mode: 0o644}}, files...)
	dirs := map[string]bool{}
	for _, f := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeOne(tmp, f, dirs); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		return syncDir(parent)
	}
	if err := replaceDir(tmp, dir); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	return syncDir(parent)
}

// writeOne writes f under root, creating its directories (recorded in dirs
// for the final fsync).
func writeOne(root string, f File, dirs map[string]bool) error {
	rel := filepath.FromSlash(f.Path)
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("%s: not a relative path inside the output directory", f.Path)
	}
	p := filepath.Join(root, rel)
	d := filepath.Dir(p)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	for x := d; x != root && strings.HasPrefix(x, root); x = filepath.Dir(x) {
		dirs[x] = true
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := fh.Write(f.Data); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	// The umask may have narrowed the mode; set it exactly (0600 stays 0600).
	if err := fh.Chmod(mode); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return fh.Close()
}

func syncDir(d string) error {
	fh, err := os.Open(d)
	if err != nil {
		return err
	}
	defer fh.Close()
	if err := fh.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync %s: %w", d, err)
	}
	return nil
}

// replaceDir puts the directory tmp in dir's place and removes the old one.
func replaceDir(tmp, dir string) error {
	if err := exchange(tmp, dir); err == nil {
		// tmp now holds the old contents.
		return os.RemoveAll(tmp)
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
}
