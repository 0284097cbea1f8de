package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// MaxSumsBytes bounds a SHA256SUMS file (a bundle has a few dozen lines).
const MaxSumsBytes = 1 << 20

// Sum is one line of SHA256SUMS.
type Sum struct {
	// SHA256 is 64 lowercase hex digits.
	SHA256 string
	// Path is relative to the bundle directory, slash-separated.
	Path string
}

// SumsError is a SHA256SUMS line that does not parse.
type SumsError struct {
	File string
	Line int
	Msg  string
}

func (e *SumsError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ParseSums reads sha256sum(1) output: one "<64 hex>  <path>" (or
// "<64 hex> *<path>", binary mode) per line. It is strict, because a bundle
// may come from anywhere: every path must pass CheckPath (relative, no
// "..", no absolute or Windows paths, no backslashes), a path may appear
// once, hex digits are lowercase, lines end in "\n" (not "\r\n"), no empty
// lines, no escaped names ("\" lines). name is the file's name for errors:
// "DIR/SHA256SUMS:3: ...". The order of lines is not checked; FormatSums
// sorts.
func ParseSums(r io.Reader, name string) ([]Sum, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSumsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > MaxSumsBytes {
		return nil, &SumsError{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxSumsBytes)}
	}
	var out []Sum
	seen := map[string]int{}
	text := string(data)
	if text == "" {
		return out, nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, line := range lines {
		n := i + 1
		bad := func(format string, a ...any) error {
			return &SumsError{File: name, Line: n, Msg: fmt.Sprintf(format, a...)}
		}
		switch {
		case line == "":
			return nil, bad("empty line")
		case strings.HasSuffix(line, "\r"):
			return nil, bad("ends in a carriage return (\\r\\n line ends; write the file with \\n only)")
		case strings.HasPrefix(line, "\\"):
			return nil, bad("an escaped file name (a backslash or newline in a name): a bundle has none")
		}
		if len(line) < 66 {
			return nil, bad("want \"<64 hex digits>  <path>\", got %q", clip(line))
		}
		sum, sep, p := line[:64], line[64:66], line[66:]
		if !isLowerHex(sum) {
			return nil, bad("%q is not 64 lowercase hex digits", clip(sum))
		}
		if sep != "  " && sep != " *" {
			return nil, bad("want two spaces (or \" *\") after the checksum, got %q", sep)
		}
		if err := CheckPath(p); err != nil {
			return nil, bad("%v", err)
		}
		if first, dup := seen[p]; dup {
			return nil, bad("%s is listed again (first on line %d)", p, first)
		}
		seen[p] = n
		out = append(out, Sum{SHA256: sum, Path: p})
	}
	return out, nil
}

// CheckPath reports whether p can name a file of a bundle: relative,
// slash-separated, clean (no "", "." or ".." elements), printable ASCII
// without backslashes, colons or spaces at either end, and not SumsFile.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("an empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is an absolute path; bundle paths are relative to the bundle directory", clip(p))
	case strings.ContainsAny(p, "\\:"):
		return fmt.Errorf("%q has a backslash or colon (a Windows path?); bundle paths are relative with forward slashes", clip(p))
	case p == SumsFile:
		return fmt.Errorf("%s cannot list itself", SumsFile)
	}
	for _, r := range p {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("%q has a character other than printable ASCII (%q)", clip(p), r)
		}
	}
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "":
			return fmt.Errorf("%q has an empty path element", clip(p))
		case ".", "..":
			return fmt.Errorf("%q has a %q element; bundle paths stay inside the bundle", clip(p), el)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%q is not a clean path", clip(p))
	}
	return nil
}

// FormatSums writes sums in sha256sum(1) text format, sorted by path.
func FormatSums(sums []Sum) []byte {
	s := append([]Sum(nil), sums...)
	sort.Slice(s, func(i, j int) bool { return s[i].Path < s[j].Path })
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x.SHA256)
		b.WriteString("  ")
		b.WriteString(x.Path)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ReadSums reads and parses file, which must be a regular file. A missing
// file is an error wrapping fs.ErrNotExist; one that is not a regular file
// or does not parse is a *SumsError.
func ReadSums(ctx context.Context, file string) ([]Sum, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// A FIFO or device would block or never end: only a regular file
	// (through a link) is opened.
	st, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &SumsError{File: file, Msg: fmt.Sprintf("not a regular file (%s)", st.Mode().Type())}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSums(f, file)
}

// readSumsIn reads the SHA256SUMS of the bundle directory d, refusing a
// link (and, like ReadSums, anything but a regular file).
func readSumsIn(ctx context.Context, d *atomicfile.Dir) ([]Sum, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := d.OpenFile(SumsFile, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &SumsError{File: d.Path(SumsFile), Msg: fmt.Sprintf("not a regular file (%s)", st.Mode().Type())}
	}
	return ParseSums(f, d.Path(SumsFile))
}

// writeSumsIn is WriteSums into the bundle directory d (no link followed).
func writeSumsIn(ctx context.Context, d *atomicfile.Dir, sums []Sum) error {
	file := d.Path(SumsFile)
	if err := checkSums(file, sums); err != nil {
		return err
	}
	return d.WriteFile(ctx, SumsFile, FormatSums(sums), 0o644, atomicfile.Options{})
}

// WriteSums writes sums to file atomically (mode 0644) after checking
// every path and refusing duplicates.
func WriteSums(ctx context.Context, file string, sums []Sum) error {
	if err := checkSums(file, sums); err != nil {
		return err
	}
	return atomicfile.Write(ctx, file, FormatSums(sums), 0o644, atomicfile.Options{})
}

// checkSums refuses a bad path or sha256 and duplicates.
func checkSums(file string, sums []Sum) error {
	seen := map[string]bool{}
	for _, s := range sums {
		if err := CheckPath(s.Path); err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		if !isLowerHex(s.SHA256) || len(s.SHA256) != 64 {
			return fmt.Errorf("writing %s: %s: %q is not a sha256", file, s.Path, clip(s.SHA256))
		}
		if seen[s.Path] {
			return fmt.Errorf("writing %s: %s is listed twice", file, s.Path)
		}
		seen[s.Path] = true
	}
	return nil
}

func isLowerHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// clip shortens hostile input quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
