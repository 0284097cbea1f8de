package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
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
//
// dir is the user's: when it is a symbolic link, render writes where it
// points (the link stays). Below it nothing is followed: the temporary
// directory and everything in it are made by render, one name at a time
// without following links (internal/atomicfile's Dir), and a link in a
// previous render is foreign (never followed, never replaced by --force).
func WriteEach(ctx context.Context, dir string, force bool, gen func(emit func(File) error) error) (n int, err error) {
	named := filepath.Clean(dir)
	dir, err = atomicfile.ResolveUserPath(named)
	if err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	fi, statErr := os.Lstat(dir)
	exists := statErr == nil
	switch {
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return 0, fmt.Errorf("output directory %s: %w", named, statErr)
	case exists && !fi.IsDir():
		return 0, fmt.Errorf("output directory %s: exists and is not a directory", named)
	}
	if exists {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("output directory %s: %w", named, err)
		}
		if len(entries) > 0 {
			if !force {
				return 0, fmt.Errorf("output directory %s: %w", named, ErrNotEmpty)
			}
			if _, err := os.Lstat(filepath.Join(dir, Marker)); err != nil {
				return 0, fmt.Errorf("output directory %s: not a hybridctl render output (no %s); refusing to replace it even with --force", named, Marker)
			}
			foreign, err := foreignEntries(dir)
			if err != nil {
				return 0, fmt.Errorf("output directory %s: %w", named, err)
			}
			if len(foreign) > 0 {
				shown := foreign
				if len(shown) > maxNamed {
					shown = append(shown[:maxNamed:maxNamed], fmt.Sprintf("and %d more", len(foreign)-maxNamed))
				}
				return 0, fmt.Errorf("output directory %s: %w, so --force refuses to replace it (nothing was changed): %s; move them out, or render into another directory", named, ErrForeign, strings.Join(shown, ", "))
			}
			// A previous render made read-only (chmod -R a-w) could not
			// be removed after the swap: make its directories writable
			// first, which fails here, before any change, for a tree
			// owned by someone else.
			if err := makeWritable(dir); err != nil {
				return 0, fmt.Errorf("output directory %s: cannot replace the previous render: %w", named, err)
			}
		}
	}
	parent, err := atomicfile.OpenDir(filepath.Dir(dir), 0)
	if err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	defer parent.Close()
	base := filepath.Base(dir)
	tmpName, err := parent.MkdirTemp("."+base+".tmp-", 0o700)
	if err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(parent.Path(tmpName))
		}
	}()
	tmp, err := parent.OpenSub(tmpName)
	if err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	defer tmp.Close()
	if n, err = writeStream(ctx, tmp, gen); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !exists {
		if err := parent.Rename(tmpName, base); err != nil {
			return 0, fmt.Errorf("output directory %s: %w", named, err)
		}
		return n, parent.Sync()
	}
	if err := replaceDir(parent, tmpName, base); err != nil {
		return 0, fmt.Errorf("output directory %s: %w", named, err)
	}
	return n, parent.Sync()
}

// writeWorkers is how many files are written and fsynced at once: an
// fsync mostly waits for the disk, and the file system commits concurrent
// ones together.
const writeWorkers = 128

// writeStream writes the files gen emits under root: each file's missing
// directories are made when it is emitted (in the emitting goroutine, so
// in order, one name at a time without following links), then
// writeWorkers workers write, chmod and fsync the files from a queue of
// writeWorkers (each created new in its directory, opened beneath root for
// the write and closed after it, so open descriptors do not grow with the
// number of directories); emit blocks while the queue is full, which
// bounds the files held at once. After gen returns, Marker is written with
// every path and each directory is fsynced once, deepest first, also
// concurrently. Nothing outside root is touched; on error the caller
// removes root. A write error is returned before gen's (gen then fails
// because emit does).
func writeStream(ctx context.Context, root *atomicfile.Dir, gen func(emit func(File) error) error) (int, error) {
	type job struct {
		rel  string
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
				if err := writeBeneath(root, j.rel, j.file); err != nil {
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
		var missing []string
		for x := filepath.Dir(rel); x != "." && !made[x]; x = filepath.Dir(x) {
			missing = append(missing, x)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			d, err := root.MkdirAll(missing[i], 0o755)
			if err != nil {
				return err
			}
			d.Close()
			made[missing[i]] = true
			dirs = append(dirs, missing[i])
		}
		paths = append(paths, path.Clean(f.Path))
		jobs <- job{rel, f}
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
	if err := writeOne(root, Marker, File{Path: Marker, Data: manifest(paths), Mode: 0o644}); err != nil {
		return 0, err
	}
	// Children before parents: a path sorts after its parent.
	sort.Strings(dirs)
	slices.Reverse(dirs)
	if err := parallel(ctx, len(dirs), func(i int) error {
		d, err := root.OpenSub(dirs[i])
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}); err != nil {
		return 0, err
	}
	return len(paths) + 1, nil
}

// writeBeneath writes f at rel below root, whose directory exists.
func writeBeneath(root *atomicfile.Dir, rel string, f File) error {
	dir := filepath.Dir(rel)
	if dir == "." {
		return writeOne(root, rel, f)
	}
	d, err := root.OpenSub(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return writeOne(d, filepath.Base(rel), f)
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

// writeOne writes f as name in d (created new, never through a link),
// sets its mode exactly and fsyncs it.
func writeOne(d *atomicfile.Dir, name string, f File) error {
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	fh, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
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

// replaceDir puts the directory tmp (a name in parent) in the place of
// dir (another name in parent) and removes the old one.
func replaceDir(parent *atomicfile.Dir, tmp, dir string) error {
	if err := parent.Exchange(tmp, dir); err == nil {
		// tmp now holds the old contents.
		return os.RemoveAll(parent.Path(tmp))
	}
	old := tmp + ".old"
	if err := parent.Rename(dir, old); err != nil {
		return err
	}
	if err := parent.Rename(tmp, dir); err != nil {
		_ = parent.Rename(old, dir)
		return err
	}
	return os.RemoveAll(parent.Path(old))
}

// manifest is Marker's content: the header and every path written, sorted.
func manifest(paths []string) []byte {
	paths = slices.Clone(paths)
	sort.Strings(paths)
	return []byte(manifestHeader + "\n" + strings.Join(paths, "\n") + "\n")
}

// maxMarkerBytes bounds what render reads of a previous render's Marker
// (5,000 nodes' files are about 1 MiB of paths).
const maxMarkerBytes = 16 << 20

// readMarker reads dir's Marker: a regular file, not a link (a link there
// is foreign, and could lead to a file that never ends), at most
// maxMarkerBytes.
func readMarker(dir string) ([]byte, error) {
	d, err := atomicfile.OpenDir(dir, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	f, err := d.OpenFile(Marker, os.O_RDONLY|openNonblock, 0)
	if errors.Is(err, atomicfile.ErrLink) {
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrForeign, Marker)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrForeign, Marker, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMarkerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMarkerBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes, more than render writes", ErrForeign, Marker, maxMarkerBytes)
	}
	return b, nil
}

// foreignEntries lists, sorted, what dir holds beyond the files its
// manifest names and their directories: a directory render did not create
// is named once ("x/"), a symbolic link or a directory where render wrote
// a file is foreign too. Links are never followed.
func foreignEntries(dir string) ([]string, error) {
	b, err := readMarker(dir)
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
// render's files), so that it can be removed after the swap. Each
// directory is opened without following links before its mode changes.
func makeWritable(dir string) error {
	root, err := atomicfile.OpenDir(dir, 0)
	if err != nil {
		return err
	}
	defer root.Close()
	return makeWritableDir(root)
}

func makeWritableDir(d *atomicfile.Dir) error {
	st, err := d.Stat()
	if err == nil {
		if m := st.Mode().Perm(); m&0o300 != 0o300 {
			if err := d.Chmod(m | 0o300); err != nil {
				return fmt.Errorf("%s is read-only and cannot be made writable (owned by another user?): %w", d.Name(), err)
			}
		}
	}
	ents, err := d.ReadDir()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub, err := d.OpenSub(e.Name())
		if err != nil {
			return err
		}
		err = makeWritableDir(sub)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
