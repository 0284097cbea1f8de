package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Marker is the file WriteDir puts at the top of every output directory:
// the manifest of the files render wrote there, one path a line. --force
// replaces only a directory that has it (or an empty one) and holds
// nothing else, so that it never deletes a file render did not write.
const Marker = ".hybridctl-render"

// manifestHeader is the first line of Marker.
const manifestHeader = "# hybridctl render manifest v1: the files render wrote here; render --force replaces them and refuses to touch anything else"

// ErrNotEmpty is returned by WriteDir for a non-empty directory without
// force.
var ErrNotEmpty = errors.New("directory is not empty (use --force to replace a previous render)")

// ErrForeign is returned by WriteDir with force when the directory holds
// files render did not write: they are named, and nothing is deleted.
var ErrForeign = errors.New("holds files render did not write")

// maxNamed bounds how many foreign files an error names.
const maxNamed = 20

// WriteDir writes files into dir completely or not at all: WriteEach with
// the files given.
func WriteDir(ctx context.Context, dir string, files []File, force bool) error {
	_, err := WriteEach(ctx, dir, force, func(emit func(File) error) error {
		for _, f := range files {
			if err := emit(f); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// WriteEach writes into dir, completely or not at all, the files gen
// passes to emit, each as soon as it is emitted: into a temporary
// directory beside dir (each file and directory fsynced), which then takes
// dir's place with one rename. A bounded number of files is held at once
// (those queued for the writers and being written), never all of them, so
// memory does not grow with the number of files. An existing dir must be
// empty, or, with force, a previous render (it has Marker); it is replaced
// atomically where the OS can exchange two directories (Linux), else with
// two renames. An error of gen, of a write or of ctx leaves dir as it was.
// It returns the number of files written, Marker included.
func WriteEach(ctx context.Context, dir string, force bool, gen func(emit func(File) error) error) (n int, err error) {
	dir = filepath.Clean(dir)
	fi, statErr := os.Lstat(dir)
	exists := statErr == nil
	switch {
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return 0, fmt.Errorf("output directory %s: %w", dir, statErr)
	case exists && !fi.IsDir():
		return 0, fmt.Errorf("output directory %s: exists and is not a directory", dir)
	}
	if exists {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("output directory %s: %w", dir, err)
		}
		if len(entries) > 0 {
			if !force {
				return 0, fmt.Errorf("output directory %s: %w", dir, ErrNotEmpty)
			}
			if _, err := os.Lstat(filepath.Join(dir, Marker)); err != nil {
				return 0, fmt.Errorf("output directory %s: not a hybridctl render output (no %s); refusing to replace it even with --force", dir, Marker)
			}
			foreign, err := foreignEntries(dir)
			if err != nil {
				return 0, fmt.Errorf("output directory %s: %w", dir, err)
			}
			if len(foreign) > 0 {
				named := foreign
				if len(named) > maxNamed {
					named = append(named[:maxNamed:maxNamed], fmt.Sprintf("and %d more", len(foreign)-maxNamed))
				}
				return 0, fmt.Errorf("output directory %s: %w, so --force refuses to replace it (nothing was changed): %s; move them out, or render into another directory", dir, ErrForeign, strings.Join(named, ", "))
			}
			// A previous render made read-only (chmod -R a-w) could not
			// be removed after the swap: make its directories writable
			// first, which fails here, before any change, for a tree
			// owned by someone else.
			if err := makeWritable(dir); err != nil {
				return 0, fmt.Errorf("output directory %s: cannot replace the previous render: %w", dir, err)
			}
		}
	}
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return 0, fmt.Errorf("output directory %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	if n, err = writeStream(ctx, tmp, gen); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := syncDir(tmp); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return 0, fmt.Errorf("output directory %s: %w", dir, err)
		}
		return n, syncDir(parent)
	}
	if err := replaceDir(tmp, dir); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", dir, err)
	}
	return n, syncDir(parent)
}

// writeWorkers is how many files are written and fsynced at once: an
// fsync mostly waits for the disk, and the file system commits concurrent
// ones together.
const writeWorkers = 128

// writeStream writes the files gen emits under root: each file's missing
// directories are made when it is emitted (in the emitting goroutine, so
// in order), then writeWorkers workers write, chmod and fsync the files
// from a queue of writeWorkers; emit blocks while the queue is full, which
// bounds the files held at once. After gen returns, Marker is written with
// every path and each directory is fsynced once, deepest first, also
// concurrently. Nothing outside root is touched; on error the caller
// removes root. A write error is returned before gen's (gen then fails
// because emit does).
func writeStream(ctx context.Context, root string, gen func(emit func(File) error) error) (int, error) {
	// os.MkdirTemp(".", ...) gives "./.out.tmp-N", which filepath.Join
	// cleans away: compare cleaned paths, or no directory is made.
	root = filepath.Clean(root)
	type job struct {
		path string
		file File
	}
	jobs := make(chan job, writeWorkers)
	var (
		mu       sync.Mutex
		writeErr error
		failed   atomic.Bool
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if writeErr == nil {
			writeErr = err
		}
		mu.Unlock()
		failed.Store(true)
	}
	for range writeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if failed.Load() {
					continue
				}
				if err := writeOne(j.path, j.file); err != nil {
					fail(err)
				}
			}
		}()
	}
	made := map[string]bool{}
	var dirs, paths []string
	emit := func(f File) error {
		if failed.Load() {
			mu.Lock()
			defer mu.Unlock()
			return writeErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%s: not a relative path inside the output directory", f.Path)
		}
		p := filepath.Join(root, rel)
		var missing []string
		for x := filepath.Dir(p); x != root && strings.HasPrefix(x, root) && !made[x]; x = filepath.Dir(x) {
			missing = append(missing, x)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			made[missing[i]] = true
			dirs = append(dirs, missing[i])
		}
		paths = append(paths, path.Clean(f.Path))
		jobs <- job{p, f}
		return nil
	}
	genErr := gen(emit)
	close(jobs)
	wg.Wait()
	switch {
	case writeErr != nil:
		return 0, writeErr
	case genErr != nil:
		return 0, genErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := writeOne(filepath.Join(root, Marker), File{Path: Marker, Data: manifest(paths), Mode: 0o644}); err != nil {
		return 0, err
	}
	// Children before parents: a path sorts after its parent.
	sort.Strings(dirs)
	slices.Reverse(dirs)
	if err := parallel(ctx, len(dirs), func(i int) error { return syncDir(dirs[i]) }); err != nil {
		return 0, err
	}
	return len(paths) + 1, nil
}

// parallel runs do(0..n-1) on up to writeWorkers goroutines and returns
// the first error (by index); after an error or a cancel no new call
// starts.
func parallel(ctx context.Context, n int, do func(int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for range min(writeWorkers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if failed.Load() {
					continue
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
				} else {
					errs[i] = do(i)
				}
				if errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeOne writes f at p (its directory exists), sets its mode exactly and
// fsyncs it.
func writeOne(p string, f File) error {
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

// manifest is Marker's content: the header and every path written, sorted.
func manifest(paths []string) []byte {
	paths = slices.Clone(paths)
	sort.Strings(paths)
	return []byte(manifestHeader + "\n" + strings.Join(paths, "\n") + "\n")
}

// foreignEntries lists, sorted, what dir holds beyond the files its
// manifest names and their directories: a directory render did not create
// is named once ("x/"), a symbolic link or a directory where render wrote
// a file is foreign too. Links are never followed.
func foreignEntries(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, Marker))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	if lines[0] != manifestHeader {
		return nil, fmt.Errorf("%w: its %s comes from an older hybridctl and does not list what render wrote; move out what you want to keep and remove the directory, or render into another one", ErrForeign, Marker)
	}
	files := map[string]bool{Marker: true}
	dirs := map[string]bool{".": true}
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(l)) {
			return nil, fmt.Errorf("%s: %q is not a path inside the directory", Marker, l)
		}
		files[l] = true
		for d := path.Dir(l); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var foreign []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && dirs[rel]:
			return nil
		case d.IsDir():
			foreign = append(foreign, rel+"/")
			return filepath.SkipDir
		case files[rel] && d.Type().IsRegular():
			return nil
		case files[rel] && d.Type()&fs.ModeSymlink != 0:
			foreign = append(foreign, rel+" (a symbolic link where render wrote a file)")
		default:
			foreign = append(foreign, rel)
		}
		return nil
	})
	sort.Strings(foreign)
	return foreign, err
}

// makeWritable gives the owner write and search permission on every
// directory of the tree at dir (a previous render, checked to hold only
// render's files), so that it can be removed after the swap.
func makeWritable(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if m := fi.Mode().Perm(); m&0o300 != 0o300 {
			if err := os.Chmod(p, m|0o300); err != nil {
				return fmt.Errorf("%s is read-only and cannot be made writable (owned by another user?): %w", p, err)
			}
		}
		return nil
	})
}
