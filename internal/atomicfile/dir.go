package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrLink matches (errors.Is) a LinkError.
var ErrLink = errors.New("a symbolic link hybridctl did not make")

// LinkError is a symbolic link where hybridctl was to create a directory or
// write a file below a directory the user named, or a link it may not
// follow in a path the user named (FollowLink). Nothing was written
// through it.
type LinkError struct {
	// Path is the link, as the user would name it.
	Path string
	// Target is where it points ("" when it cannot be read).
	Target string
	// Why says why it is refused when it is not simply under a directory
	// the user named.
	Why string
}

func (e *LinkError) Error() string {
	why := e.Why
	if why == "" {
		why = "hybridctl follows no link below the directory it was given"
	}
	return fmt.Sprintf("refusing to write through %s: it is a symbolic link to %q that hybridctl did not make (%s)", e.Path, e.Target, why)
}

// Is makes errors.Is(err, ErrLink) true.
func (e *LinkError) Is(target error) bool { return target == ErrLink }

// Dir is a directory the user named (an output directory such as render's
// -o, node diagnose's --collect or a bundle directory), opened once.
// Links in the path the user gave are followed as the kernel follows them;
// below it nothing is: every directory Dir creates or opens and every file
// it writes is reached one name at a time with O_NOFOLLOW (and, on Linux,
// openat2's RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH), so a symbolic link
// found there, whoever made it and wherever it points, is refused with a
// LinkError naming it, and nothing outside the directory is ever changed.
// Non-Unix builds check each name with os.Root and Lstat instead (the
// same refusals, without the guarantee against a link swapped in between).
//
// Methods take paths relative to the directory, with the OS's separator;
// a path that leaves it ("..", absolute) is an error.
type Dir struct {
	name string
	sys  dirSys
}

// Name is the directory as the user named it.
func (d *Dir) Name() string { return d.name }

// Path is rel below the directory, for messages.
func (d *Dir) Path(rel string) string { return filepath.Join(d.name, rel) }

// OpenDir opens the directory at path as the user named it (links in path
// are followed). With create non-zero, a missing directory is made with
// that permission, with its missing parents, each one without following
// links.
func OpenDir(path string, create fs.FileMode) (*Dir, error) {
	path = filepath.Clean(path)
	if create == 0 {
		return openDir(path)
	}
	// The deepest existing ancestor is the user's (followed); what is
	// missing below it is hybridctl's.
	base, rest := path, ""
	for {
		st, err := os.Stat(base)
		if err == nil {
			if !st.IsDir() {
				return nil, &fs.PathError{Op: "mkdir", Path: base, Err: errors.New("not a directory")}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		parent := filepath.Dir(base)
		if parent == base {
			return nil, err
		}
		rest = filepath.Join(filepath.Base(base), rest)
		base = parent
	}
	d, err := openDir(base)
	if err != nil || rest == "" {
		return d, err
	}
	defer d.Close()
	sub, err := d.MkdirAll(rest, create)
	if err != nil {
		return nil, err
	}
	sub.name = path
	return sub, nil
}

// checkRel refuses a path that leaves the directory.
func (d *Dir) checkRel(rel string) (string, error) {
	c := filepath.Clean(rel)
	if c != "." && !filepath.IsLocal(c) {
		return "", fmt.Errorf("%s: %q is not a path inside %s", d.Path(rel), rel, d.name)
	}
	return c, nil
}

// split returns the directory and the last name of rel (which must name
// something below d, not d itself).
func (d *Dir) split(rel string) (dir, base string, err error) {
	c, err := d.checkRel(rel)
	if err != nil {
		return "", "", err
	}
	if c == "." {
		return "", "", fmt.Errorf("%s: no file name", d.name)
	}
	return filepath.Dir(c), filepath.Base(c), nil
}

// components splits a cleaned relative path into its names ("." is none).
func components(c string) []string {
	if c == "." || c == "" {
		return nil
	}
	return strings.Split(c, string(filepath.Separator))
}

// WriteFile writes data to rel atomically with permission perm: a
// temporary file beside it (created new, 0600 until it is complete),
// fsync, rename, fsync of the directory. The directory of rel must exist;
// a link at rel or on the way to it is refused.
func (d *Dir) WriteFile(ctx context.Context, rel string, data []byte, perm fs.FileMode, opts Options) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := d.CreateTemp(rel, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", d.Path(rel), err)
	}
	defer func() {
		if err != nil {
			t.Abort()
		}
	}()
	if _, err := t.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", d.Path(rel), err)
	}
	return t.Commit(ctx, opts)
}

// Temp is a temporary file that takes the place of its target on Commit.
// It is an *os.File open for writing.
type Temp struct {
	*os.File
	d      *Dir
	rel    string // the target
	perm   fs.FileMode
	tmp    tempSys
	closed bool
}

// Path is the temporary file's path, for messages.
func (t *Temp) Path() string { return t.File.Name() }

// Commit makes the temporary file the target: mode perm, fsync, close,
// rename over the target (or, with NoClobber, link it only if the target
// does not exist), fsync of the directory. A link at the target is
// refused. On error the target is untouched and the caller still calls
// Abort.
func (t *Temp) Commit(ctx context.Context, opts Options) error {
	name := t.d.Path(t.rel)
	if err := t.File.Chmod(t.perm); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := t.File.Sync(); err != nil {
		return fmt.Errorf("writing %s: fsync: %w", name, err)
	}
	t.closed = true
	if err := t.File.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if opts.BeforeRename != nil {
		if err := opts.BeforeRename(t.Path()); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if err := t.tmp.commit(opts.NoClobber); err != nil {
		if errors.Is(err, fs.ErrExist) && opts.NoClobber {
			return fmt.Errorf("%s already exists: %w", name, ErrExists)
		}
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// Abort closes and removes the temporary file (after a successful Commit
// it does nothing).
func (t *Temp) Abort() {
	if !t.closed {
		t.closed = true
		_ = t.File.Close()
	}
	t.tmp.abort()
}
