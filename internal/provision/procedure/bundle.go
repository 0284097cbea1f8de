package procedure

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// BundleFile is one file of a bundle as a node gets it.
type BundleFile struct {
	// Path is relative to the bundle directory, slash-separated
	// ("linux-amd64/kubelet").
	Path string
	// SHA256 is the lower-case hex digest the bundle's SHA256SUMS gives.
	SHA256 string
	Size   int64
}

// Bundle is a verified bundle directory on this machine and the files
// each node OS needs from it (BundleFrom).
type Bundle struct {
	Dir     string
	Linux   []BundleFile
	Windows []BundleFile
	// LinuxDir and WindowsDir are where the files go on the nodes
	// (default render.LinuxBundleDir, render.WindowsBundleDir).
	LinuxDir, WindowsDir string
}

func (b *Bundle) filesFor(h engine.Host) []BundleFile {
	if h.OS == engine.Windows {
		return b.Windows
	}
	return b.Linux
}

func (b *Bundle) remoteDir(h engine.Host) string {
	if h.OS == engine.Windows {
		if b.WindowsDir != "" {
			return b.WindowsDir
		}
		return render.WindowsBundleDir
	}
	if b.LinuxDir != "" {
		return b.LinuxDir
	}
	return render.LinuxBundleDir
}

// remotePath is where f goes on h.
func (b *Bundle) remotePath(h engine.Host, rel string) string {
	if h.OS == engine.Windows {
		return b.remoteDir(h) + `\` + strings.ReplaceAll(rel, "/", `\`)
	}
	return path.Join(b.remoteDir(h), rel)
}

// sums is the node's SHA256SUMS: the lines of its own files, sorted by
// path, in sha256sum(1)'s format.
func sums(files []BundleFile) []byte {
	fs := append([]BundleFile(nil), files...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Path)
	}
	return []byte(b.String())
}

// bundleConn is what bundle-upload needs of a connection
// (*transport.Client).
type bundleConn interface {
	Run(ctx context.Context, script string) (*transport.Result, error)
	UploadStream(ctx context.Context, dst string, r io.Reader, sha256hex string, mode os.FileMode) error
}

// bundleUploadPhase sends each node the files of the bundle its OS needs,
// resumably: it first asks the node for the sha256 of what is already
// there and sends only what is missing or differs; each file is checked on
// the node before it replaces anything (transport.UploadStream). Last it
// writes the node's SHA256SUMS, which prepare.sh checks with sha256sum -c
// (prepare.ps1 with Get-FileHash).
type bundleUploadPhase struct {
	bundle  *Bundle
	connect func(ctx context.Context, host string) (bundleConn, error)
}

// Narrow implements engine.Narrower: every node with a bundle, none
// without (packages.source upstream).
func (p *bundleUploadPhase) Narrow(h []engine.Host) []engine.Host {
	if p.bundle == nil {
		return nil
	}
	return h
}

// Targets: every node with a bundle, none without (packages.source
// upstream).

// RunsOn is the phase tables' label: the targets depend on the spec.

// nodeState is what the node has: sha256 by relative path (files 0644
// owned by root only), and the sha256 of its SHA256SUMS.
type nodeState struct {
	have map[string]string
	sums string
}

// The sections of the state script's output.
const bundleSumsMarker = "### SHA256SUMS "

func (p *bundleUploadPhase) state(ctx context.Context, c bundleConn, h engine.Host) (*nodeState, error) {
	files := p.bundle.filesFor(h)
	dir := p.bundle.remoteDir(h)
	var script string
	if h.OS == engine.Windows {
		var b strings.Builder
		fmt.Fprintf(&b, "$base = %s\n$paths = @(", transport.PSQuote(dir))
		for i, f := range files {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(transport.PSQuote(f.Path))
		}
		b.WriteString(`)
foreach ($p in $paths) {
  $f = Join-Path $base ($p -replace '/', '\')
  if (Test-Path -LiteralPath $f -PathType Leaf) { '{0} {1}' -f (Get-FileHash -LiteralPath $f -Algorithm SHA256).Hash.ToLowerInvariant(), $p }
}
Get-ChildItem -LiteralPath $base -Recurse -Filter '*.hybridctl-part-*' -ErrorAction SilentlyContinue | Remove-Item -Force
$s = Join-Path $base 'SHA256SUMS'
if (Test-Path -LiteralPath $s -PathType Leaf) { '` + bundleSumsMarker + `{0}' -f (Get-FileHash -LiteralPath $s -Algorithm SHA256).Hash.ToLowerInvariant() }
`)
		script = b.String()
	} else {
		var b strings.Builder
		fmt.Fprintf(&b, "cd -- %s 2>/dev/null || exit 0\n", transport.ShellQuote(dir))
		// Partial files of an interrupted upload.
		b.WriteString("find . -name '.hybridctl-part.*' -type f -delete 2>/dev/null || true\nfor f in")
		for _, f := range files {
			b.WriteString(" " + transport.ShellQuote(f.Path))
		}
		b.WriteString(`; do
	# only a regular file, 0644, owned by root counts as present
	if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %a:%u -- "$f")" = "644:$(id -u)" ]; then
		printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"
	fi
done
if [ -f SHA256SUMS ]; then printf '` + bundleSumsMarker + `%s\n' "$(sha256sum < SHA256SUMS | cut -d' ' -f1)"; fi
`)
		script = b.String()
	}
	res, err := c.Run(ctx, script)
	if err != nil {
		return nil, fmt.Errorf("reading the bundle files on the node: %w", err)
	}
	st := &nodeState{have: map[string]string{}}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		line = strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(line, bundleSumsMarker); ok {
			st.sums = s
			continue
		}
		if sum, rel, ok := strings.Cut(line, " "); ok && len(sum) == 64 {
			st.have[rel] = sum
		}
	}
	return st, nil
}

// missing returns the files the node lacks or has with another sha256.
func (st *nodeState) missing(files []BundleFile) []BundleFile {
	var out []BundleFile
	for _, f := range files {
		if st.have[f.Path] != f.SHA256 {
			out = append(out, f)
		}
	}
	return out
}

func sumsHex(files []BundleFile) string {
	s := sha256.Sum256(sums(files))
	return fmt.Sprintf("%x", s)
}

func (p *bundleUploadPhase) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return false, "", err
	}
	st, err := p.state(ctx, c, h)
	if err != nil {
		return false, "", err
	}
	files := p.bundle.filesFor(h)
	if len(st.missing(files)) == 0 && st.sums == sumsHex(files) {
		return false, fmt.Sprintf("all %d bundle files are in %s with their sha256", len(files), p.bundle.remoteDir(h)), nil
	}
	return true, "", nil
}

func (p *bundleUploadPhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	files := p.bundle.filesFor(h)
	dir := p.bundle.remoteDir(h)
	var total int64
	for _, f := range files {
		total += f.Size
	}
	lines := []string{fmt.Sprintf("read the sha256 of the %d bundle files under %s (%s in all) and remove partial uploads", len(files), dir, mib(total))}
	for _, f := range files {
		lines = append(lines, fmt.Sprintf("upload %s to %s unless it is there with sha256 %s (%s, 0644; streamed, checked on the node before it replaces anything)",
			filepath.Join(p.bundle.Dir, filepath.FromSlash(f.Path)), p.bundle.remotePath(h, f.Path), f.SHA256, mib(f.Size)))
	}
	check := "prepare.sh checks them with sha256sum -c"
	if h.OS == engine.Windows {
		check = "prepare.ps1 checks them with Get-FileHash"
	}
	lines = append(lines, fmt.Sprintf("write %s with the %d lines of these files (%s)", p.bundle.remotePath(h, render.BundleSumsFile), len(files), check))
	return lines, nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func (p *bundleUploadPhase) Run(ctx context.Context, h engine.Host) error {
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	st, err := p.state(ctx, c, h)
	if err != nil {
		return err
	}
	files := p.bundle.filesFor(h)
	for _, f := range st.missing(files) {
		if err := p.send(ctx, c, h, f); err != nil {
			return err
		}
	}
	list := sums(files)
	if err := c.UploadStream(ctx, p.bundle.remotePath(h, render.BundleSumsFile), strings.NewReader(string(list)), sumsHex(files), 0o644); err != nil {
		return err
	}
	return nil
}

func (p *bundleUploadPhase) send(ctx context.Context, c bundleConn, h engine.Host, f BundleFile) error {
	src := filepath.Join(p.bundle.Dir, filepath.FromSlash(f.Path))
	fh, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	defer func() { _ = fh.Close() }()
	return c.UploadStream(ctx, p.bundle.remotePath(h, f.Path), fh, f.SHA256, 0o644)
}

// ErrBundleIncomplete matches (errors.Is) BundleFrom's error for a bundle
// that lacks a file or holds a corrupted one, as opposed to a directory
// that could not be read.
var ErrBundleIncomplete = errors.New("the bundle is not complete or not intact")

type incompleteError struct{ err error }

func (e incompleteError) Error() string        { return e.err.Error() }
func (e incompleteError) Unwrap() error        { return e.err }
func (e incompleteError) Is(target error) bool { return target == ErrBundleIncomplete }

// BundleFrom verifies the bundle directory dir against the plan's
// artifact list (internal/bundle: every file present, listed in
// SHA256SUMS and matching it) and returns what each node OS gets. It reads
// only dir; nothing connects.
func BundleFrom(ctx context.Context, p *plan.Plan, dir string) (*Bundle, error) {
	arts, err := bundle.Artifacts(p)
	if err != nil {
		return nil, err
	}
	rep, err := bundle.VerifyArtifacts(ctx, dir, arts)
	if err != nil {
		return nil, err
	}
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("--bundle %s: %w", dir, incompleteError{err})
	}
	// The sha256 and size of each file are the ones verified, from the
	// same state of the directory: nothing is read again.
	b := &Bundle{Dir: dir}
	for _, a := range arts {
		if a.OS != bundle.OSLinux && a.OS != bundle.OSWindows {
			continue
		}
		c, ok := rep.Checked[a.Path]
		if !ok {
			return nil, fmt.Errorf("--bundle %s: %s was not checked", dir, a.Path)
		}
		f := BundleFile{Path: a.Path, SHA256: c.SHA256, Size: c.Size}
		if a.OS == bundle.OSWindows {
			b.Windows = append(b.Windows, f)
		} else {
			b.Linux = append(b.Linux, f)
		}
	}
	return b, nil
}
