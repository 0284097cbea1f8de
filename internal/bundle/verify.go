package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/plan"
)

// Problem is something wrong with one file of a bundle.
type Problem struct {
	// Path is relative to the bundle directory.
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Report is the result of Verify.
type Report struct {
	// OK are the paths that are present and match SHA256SUMS, in list order.
	OK []string `json:"ok"`
	// Problems are missing, unreadable-as-a-file or corrupted files and a
	// SHA256SUMS that is missing or does not parse: the bundle is wrong.
	Problems []Problem `json:"problems"`
	// Extra are files in the directory the plan does not need (sorted);
	// they are reported, not wrong.
	Extra []string `json:"extra"`
	// Checked are the OK files' sha256 and size, as verified.
	Checked map[string]Checked `json:"-"`
}

// Err is nil when the report has no problems, else an error naming every
// problem, one per line.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	var lines []string
	for _, p := range r.Problems {
		lines = append(lines, p.String())
	}
	return fmt.Errorf("the bundle is not complete or not intact:\n  %s", strings.Join(lines, "\n  "))
}

// Verify checks dir against the artifacts of the plan: see VerifyArtifacts.
func Verify(ctx context.Context, dir string, p *plan.Plan) (*Report, error) {
	arts, err := Artifacts(p)
	if err != nil {
		return nil, err
	}
	return VerifyArtifacts(ctx, dir, arts)
}

// VerifyArtifacts checks that every artifact is in dir: a regular file (a
// symbolic link only when it stays inside dir), listed in dir/SHA256SUMS,
// with that sha256 (and the pinned one, when the artifact pins one).
// Files of dir that no artifact names are reported as Extra. Problems of
// the bundle go into the report; the error is for a directory that could
// not be read at all (missing, permission denied, I/O) or a cancelled ctx.
//
// The check is of one state of the directory: SHA256SUMS and every file
// are opened through one handle of it before any is read, so a bundle
// replaced or re-downloaded meanwhile (the new directory renamed over the
// old one, files renamed into place) is never mixed with the old one
// however long the hashing takes. When problems were found and the
// directory or its SHA256SUMS changed during the check, it is checked
// again (verifyAttempts in all), and then the report says it kept
// changing.
func VerifyArtifacts(ctx context.Context, dir string, arts []Artifact) (*Report, error) {
	return verifyArtifacts(ctx, dir, arts, verifyHooks{})
}

// verifyAttempts is how many times a bundle that changed while it was
// checked is checked.
const verifyAttempts = 3

// verifyHooks run at two moments of each check (tests replace the
// directory there).
type verifyHooks struct {
	afterSums, afterOpen func()
}

func verifyArtifacts(ctx context.Context, dir string, arts []Artifact, h verifyHooks) (*Report, error) {
	for attempt := 1; ; attempt++ {
		r, changed, err := verifyOnce(ctx, dir, arts, h)
		if err != nil || !changed || len(r.Problems) == 0 {
			return r, err
		}
		if attempt == verifyAttempts {
			r.Problems = append(r.Problems, Problem{Path: ".", Message: fmt.Sprintf("the directory changed while it was being checked, %d times: something is writing it (a download, another tool); check it again once that is done", attempt)})
			return r, nil
		}
	}
}

// Checked is a file of the bundle as it was verified.
type Checked struct {
	SHA256 string
	Size   int64
}

// verifyOnce checks one state of dir; changed reports that the directory
// or its SHA256SUMS was replaced while it was checked.
func verifyOnce(ctx context.Context, dir string, arts []Artifact, h verifyHooks) (r *Report, changed bool, err error) {
	r = &Report{OK: []string{}, Problems: []Problem{}, Extra: []string{}, Checked: map[string]Checked{}}
	st0, err := os.Stat(dir)
	if err != nil {
		return nil, false, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	if !st0.IsDir() {
		return nil, false, fmt.Errorf("bundle directory %s: not a directory", dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, false, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	d, err := atomicfile.OpenDir(root, 0)
	if err != nil {
		return nil, false, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	defer d.Close()
	listed := map[string]string{}
	rawSums, sums, err := readSumsAt(ctx, d, root, filepath.Join(dir, SumsFile))
	sumsOK := err == nil
	var se *SumsError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Problems = append(r.Problems, Problem{Path: SumsFile, Message: "missing: the bundle has no checksum file (hybridctl bundle download writes it last)"})
	case errors.As(err, &se):
		r.Problems = append(r.Problems, Problem{Path: SumsFile, Message: "refused: " + err.Error()})
	case err != nil:
		return nil, false, err
	}
	for _, s := range sums {
		listed[s.Path] = s.SHA256
	}
	if h.afterSums != nil {
		h.afterSums()
	}
	// Every file is opened before any is read: what is hashed is this
	// state of the directory, even if it is replaced meanwhile.
	type opened struct {
		f   *os.File
		msg string
	}
	files := make([]opened, len(arts))
	defer func() {
		for _, o := range files {
			if o.f != nil {
				o.f.Close()
			}
		}
	}()
	for i, a := range arts {
		f, msg, err := openInside(d, root, a.Path)
		if err != nil {
			return nil, false, err
		}
		files[i] = opened{f, msg}
	}
	if h.afterOpen != nil {
		h.afterOpen()
	}
	need := map[string]bool{}
	for i, a := range arts {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		need[a.Path] = true
		bad := func(format string, x ...any) {
			r.Problems = append(r.Problems, Problem{Path: a.Path, Message: fmt.Sprintf(format, x...)})
		}
		if files[i].msg != "" {
			bad("%s (%s %s, %s)", files[i].msg, a.OS, a.Name, a.URL)
			continue
		}
		got, err := hashOpen(ctx, files[i].f)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", a.Path, err)
		}
		want, ok := listed[a.Path]
		switch {
		case !ok && sumsOK:
			bad("present but not listed in %s", SumsFile)
		case !ok:
			// SHA256SUMS itself is missing or refused: reported once above.
			bad("cannot be checked without %s (sha256 %s)", SumsFile, got)
		case got != want:
			bad("corrupted: sha256 %s, %s says %s", got, SumsFile, want)
		case a.SHA256 != "" && got != a.SHA256:
			bad("sha256 %s is not the %s hybridctl pins for %s %s", got, a.SHA256, a.Name, a.Version)
		default:
			r.OK = append(r.OK, a.Path)
			fi, err := files[i].f.Stat()
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", a.Path, err)
			}
			r.Checked[a.Path] = Checked{SHA256: got, Size: fi.Size()}
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != SumsFile && !need[rel] {
			r.Extra = append(r.Extra, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	sort.Strings(r.Extra)
	// Did the directory, or its SHA256SUMS, change under the check?
	st1, err := os.Stat(dir)
	if err != nil || !os.SameFile(st0, st1) {
		return r, true, nil
	}
	again, _, err := readSumsAt(ctx, d, root, filepath.Join(dir, SumsFile))
	return r, !bytes.Equal(again, rawSums) || (err != nil) != !sumsOK, nil
}

// readSumsAt reads and parses SHA256SUMS through the directory handle d
// (a link to a regular file inside root is followed, as for the files);
// raw is what was read. name is the file as the user would name it.
func readSumsAt(ctx context.Context, d *atomicfile.Dir, root, name string) (raw []byte, sums []Sum, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f, msg, err := openInside(d, root, SumsFile)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case msg == "missing":
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case msg != "":
		return nil, nil, &SumsError{File: name, Msg: msg}
	}
	defer f.Close()
	raw, err = io.ReadAll(io.LimitReader(f, MaxSumsBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", name, err)
	}
	sums, err = ParseSums(bytes.NewReader(raw), name)
	return raw, sums, err
}

// openInside opens the file rel of the bundle through the directory
// handle d for reading. A symbolic link on the way is followed only when
// it leads to a file inside root (then by path). msg says what is wrong
// with the file (missing, not a regular file, a link leaving root); err is
// an I/O error that stops the check.
func openInside(d *atomicfile.Dir, root, rel string) (f *os.File, msg string, err error) {
	f, err = d.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|openNonblock, 0)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, "missing", nil
	case errors.Is(err, atomicfile.ErrLink):
		full := filepath.Join(root, filepath.FromSlash(rel))
		target, err := filepath.EvalSymlinks(full)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "a symbolic link to nothing", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", rel, err)
		}
		if r, err := filepath.Rel(root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
			return nil, fmt.Sprintf("a symbolic link to %s, outside the bundle", target), nil
		}
		if f, err = os.OpenFile(target, os.O_RDONLY|openNonblock, 0); err != nil {
			return nil, "", fmt.Errorf("%s: %w", rel, err)
		}
	default:
		return nil, "", fmt.Errorf("%s: %w", rel, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("%s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Sprintf("not a regular file (%s)", st.Mode().Type()), nil
	}
	return f, "", nil
}

// hashOpen returns the sha256 of the open file f, which must be a regular
// file, checking ctx between blocks.
func hashOpen(ctx context.Context, f *os.File) (string, error) {
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file")
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
