package bundle

import (
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
func VerifyArtifacts(ctx context.Context, dir string, arts []Artifact) (*Report, error) {
	r := &Report{OK: []string{}, Problems: []Problem{}, Extra: []string{}}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("bundle directory %s: not a directory", dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	sumsPath := filepath.Join(dir, SumsFile)
	listed := map[string]string{}
	sums, err := ReadSums(ctx, sumsPath)
	sumsOK := err == nil
	var se *SumsError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Problems = append(r.Problems, Problem{Path: SumsFile, Message: "missing: the bundle has no checksum file (hybridctl bundle download writes it last)"})
	case errors.As(err, &se):
		r.Problems = append(r.Problems, Problem{Path: SumsFile, Message: "refused: " + err.Error()})
	case err != nil:
		return nil, err
	}
	for _, s := range sums {
		listed[s.Path] = s.SHA256
	}
	need := map[string]bool{}
	for _, a := range arts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		need[a.Path] = true
		bad := func(format string, x ...any) {
			r.Problems = append(r.Problems, Problem{Path: a.Path, Message: fmt.Sprintf(format, x...)})
		}
		got, msg, err := hashInside(ctx, root, a.Path)
		if err != nil {
			return nil, err
		}
		if msg != "" {
			bad("%s (%s %s, %s)", msg, a.OS, a.Name, a.URL)
			continue
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
	if err != nil {
		return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	sort.Strings(r.Extra)
	return r, nil
}

// hashInside hashes root/rel. msg says what is wrong with the file
// (missing, not a regular file, a link leaving root); err is an I/O error
// that stops the check.
func hashInside(ctx context.Context, root, rel string) (sum, msg string, err error) {
	full := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", "missing", nil
	} else if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	// Every link on the way (the file's or a directory's) must stay in root.
	target, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "a symbolic link to nothing", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	if r, err := filepath.Rel(root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", fmt.Sprintf("a symbolic link to %s, outside the bundle", target), nil
	}
	st, err := os.Lstat(target)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Sprintf("not a regular file (%s)", st.Mode().Type()), nil
	}
	s, err := hashFile(ctx, target)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", rel, err)
	}
	return s, "", nil
}

// hashFile returns the sha256 of a regular file, checking ctx between
// blocks so a cancel stops hashing a large file.
func hashFile(ctx context.Context, name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashOpen(ctx, f)
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
