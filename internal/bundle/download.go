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
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/safeurl"
)

// Download limits (DownloadOptions zero values mean these).
const (
	// DefaultMaxBytes caps one artifact: the largest (kubelet.exe, kubectl)
	// are around 100-130 MB.
	DefaultMaxBytes = 1 << 30
	// DefaultRequestTimeout bounds one request from start to the last byte.
	DefaultRequestTimeout = 20 * time.Minute
	// DefaultIdleTimeout bounds the wait for response headers and for each
	// next block of the body: a server that stops sending fails here.
	DefaultIdleTimeout = 60 * time.Second
	// maxChecksumBytes caps an upstream checksum file.
	maxChecksumBytes = 64 << 10
)

// DownloadOptions tune Download.
type DownloadOptions struct {
	// Mirror, when set (http[s]://host[:port][/path]), replaces the scheme
	// and host of every upstream URL: https://dl.k8s.io/release/x becomes
	// MIRROR/dl.k8s.io/release/x. A site mirror or a test server serves
	// the upstream paths under a directory per host.
	Mirror string
	// Client makes the requests (nil: a client of its own that honours
	// HTTPS_PROXY and NO_PROXY).
	Client *http.Client
	// MaxBytes caps one artifact (0: DefaultMaxBytes).
	MaxBytes int64
	// RequestTimeout and IdleTimeout (0: the defaults) are the deadlines of
	// each request.
	RequestTimeout, IdleTimeout time.Duration
	// Progress, when set, is called after each artifact.
	Progress func(Result)
}

// Result is what Download did with one artifact.
type Result struct {
	Artifact Artifact
	// Action is "downloaded" or "present" (the file was there with the
	// right checksum and was not fetched again).
	Action string
	SHA256 string
	Bytes  int64
	// ChecksumFrom says where the expected sha256 came from: "pinned",
	// the checksum file's URL, "SHA256SUMS" (an earlier download recorded
	// it) or "first-download" (nothing to compare with: recorded as is).
	ChecksumFrom string
}

// ChecksumError is a file whose sha256 is not the expected one: the
// upstream (or mirror) served something else, or a checksum file disagrees.
type ChecksumError struct {
	Path, URL, Got, Want, From string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s has sha256 %s, but %s says %s; nothing was kept", e.Path, e.URL, e.Got, e.From, e.Want)
}

// MirrorURL rewrites an upstream URL for a mirror: see DownloadOptions.Mirror.
func MirrorURL(mirror, upstream string) (string, error) {
	if mirror == "" {
		return upstream, nil
	}
	m, err := parseMirror(mirror)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return "", fmt.Errorf("upstream URL %q: %w", upstream, err)
	}
	out := *m
	out.Path = strings.TrimSuffix(m.Path, "/") + "/" + u.Host + u.Path
	out.RawPath = ""
	// The upstream path goes under MIRROR/HOST/ and stays there.
	base := *m
	base.Path = strings.TrimSuffix(m.Path, "/") + "/" + u.Host + "/"
	base.RawPath = ""
	if err := safeurl.Under(base.String(), out.String()); err != nil {
		return "", fmt.Errorf("--mirror: %w", err)
	}
	return out.String(), nil
}

func parseMirror(mirror string) (*url.URL, error) {
	m, err := url.Parse(mirror)
	if err != nil {
		return nil, fmt.Errorf("--mirror %q: %w", mirror, err)
	}
	if (m.Scheme != "http" && m.Scheme != "https") || m.Host == "" || m.User != nil || m.RawQuery != "" || m.Fragment != "" {
		return nil, fmt.Errorf("--mirror %q: want http[s]://host[:port][/path], without user, query or fragment", mirror)
	}
	return m, nil
}

// Download puts every artifact into dir (created 0755 if missing), then
// writes dir/SHA256SUMS. Each file is written to a temporary file beside
// it and renamed into place only once its sha256 matches, so an
// interrupted download leaves the old file or none, never a part; a file
// already present with the right sha256 is kept. SHA256SUMS is written
// last, atomically, with one line per artifact plus the lines of an
// earlier SHA256SUMS for files still present that the list does not name
// (a bundle shared by several specs). The first error stops the download;
// SHA256SUMS is then left as it was.
func Download(ctx context.Context, dir string, arts []Artifact, o DownloadOptions) ([]Result, error) {
	if o.Mirror != "" {
		if _, err := parseMirror(o.Mirror); err != nil {
			return nil, err
		}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Client == nil {
		// The waits for headers and body are the idle timer's (stream).
		o.Client = &http.Client{
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				TLSHandshakeTimeout: o.IdleTimeout,
				IdleConnTimeout:     o.IdleTimeout,
			},
			CheckRedirect: noDowngrade,
		}
	}
	root, err := atomicfile.OpenDir(dir, 0o755)
	if err != nil {
		return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
	}
	defer root.Close()
	old, err := readSumsIn(ctx, root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("refusing to add to %s: %w (move it away to start afresh)", dir, err)
	}
	oldSum := map[string]string{}
	for _, s := range old {
		oldSum[s.Path] = s.SHA256
	}
	d := &downloader{o: o, dir: root}
	var results []Result
	var sums []Sum
	named := map[string]bool{}
	for _, a := range arts {
		if err := CheckPath(a.Path); err != nil {
			return results, fmt.Errorf("artifact %s: %w", a.Name, err)
		}
		for _, u := range []string{a.URL, a.ChecksumURL} {
			if u == "" && a.ChecksumFrom != ChecksumFile {
				continue
			}
			if err := CheckURL(u); err != nil {
				return results, fmt.Errorf("artifact %s: %w", a.Name, err)
			}
		}
		r, err := d.one(ctx, a, oldSum[a.Path])
		if err != nil {
			return results, err
		}
		results = append(results, r)
		sums = append(sums, Sum{SHA256: r.SHA256, Path: a.Path})
		named[a.Path] = true
		if o.Progress != nil {
			o.Progress(r)
		}
	}
	for _, s := range old {
		if named[s.Path] {
			continue
		}
		if st, err := root.Lstat(filepath.FromSlash(s.Path)); err == nil && st.Mode().IsRegular() {
			sums = append(sums, s)
		}
	}
	if err := writeSumsIn(ctx, root, sums); err != nil {
		return results, err
	}
	return results, nil
}

// noDowngrade follows at most 10 redirects (GitHub's release downloads
// redirect to its object store) and never from https to http.
func noDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing a redirect from https to %s", req.URL.Redacted())
	}
	return nil
}

type downloader struct {
	o   DownloadOptions
	dir *atomicfile.Dir
}

// one fetches one artifact (or keeps it when present and right).
func (d *downloader) one(ctx context.Context, a Artifact, recorded string) (Result, error) {
	r := Result{Artifact: a}
	want, from := "", ""
	switch {
	case a.SHA256 != "":
		want, from = a.SHA256, ChecksumPinned
	case a.ChecksumFrom == ChecksumFile:
		u, err := MirrorURL(d.o.Mirror, a.ChecksumURL)
		if err != nil {
			return r, err
		}
		data, err := d.get(ctx, u, maxChecksumBytes)
		if err != nil {
			return r, fmt.Errorf("%s: checksum file: %w", a.Path, err)
		}
		if want, err = parseChecksumFile(data, a.File()); err != nil {
			return r, fmt.Errorf("%s: checksum file %s: %w", a.Path, u, err)
		}
		from = u
	case recorded != "":
		want, from = recorded, SumsFile+" (recorded by an earlier download)"
	default:
		from = ChecksumNone
	}
	r.ChecksumFrom = from
	target := filepath.FromSlash(a.Path)
	if want != "" {
		if st, err := d.dir.Lstat(target); err == nil && st.Mode().IsRegular() {
			got, err := d.hashIn(ctx, target)
			if err != nil {
				return r, fmt.Errorf("%s: %w", a.Path, err)
			}
			if got == want {
				r.Action, r.SHA256, r.Bytes = "present", got, st.Size()
				return r, nil
			}
		}
	}
	u, err := MirrorURL(d.o.Mirror, a.URL)
	if err != nil {
		return r, err
	}
	sum, n, err := d.fetchFile(ctx, u, target, a.Path, want, from)
	if err != nil {
		return r, err
	}
	r.Action, r.SHA256, r.Bytes = "downloaded", sum, n
	return r, nil
}

// hashIn returns the sha256 of the regular file rel of the bundle, opened
// without following a link.
func (d *downloader) hashIn(ctx context.Context, rel string) (string, error) {
	f, err := d.dir.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashOpen(ctx, f)
}

// parseChecksumFile reads an upstream checksum file: a bare sha256
// (dl.k8s.io's .sha256) or sha256sum lines (containerd's .sha256sum,
// runc's runc.sha256sum listing every asset); with names, the line of file
// is taken, and a file that does not name it is an error.
func parseChecksumFile(data []byte, file string) (string, error) {
	text := strings.TrimSpace(string(data))
	if text == "" {
		return "", errors.New("empty")
	}
	lines := strings.Split(text, "\n")
	var names []string
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		sum := strings.ToLower(f[0])
		if !isLowerHex(sum) {
			return "", fmt.Errorf("%q is not a sha256", clip(f[0]))
		}
		if len(f) == 1 && len(lines) == 1 {
			return sum, nil
		}
		if len(f) != 2 {
			return "", fmt.Errorf("want \"<sha256>  <file>\", got %q", clip(line))
		}
		name := path.Base(strings.TrimPrefix(f[1], "*"))
		if name == file {
			return sum, nil
		}
		names = append(names, name)
	}
	return "", fmt.Errorf("has no line for %s (it names %s)", file, clip(strings.Join(names, ", ")))
}

// get fetches a small file into memory.
func (d *downloader) get(ctx context.Context, u string, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := d.stream(ctx, u, &buf, max); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fetchFile streams u into a temporary file beside target (a path
// relative to the bundle directory), checks its sha256 (when want is set)
// and renames it into place. The directories on the way are made without
// following links: a link in the bundle directory is refused, so nothing
// is written outside it.
func (d *downloader) fetchFile(ctx context.Context, u, target, rel, want, from string) (sum string, n int64, err error) {
	sub, err := d.dir.MkdirAll(filepath.Dir(target), 0o755)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", rel, err)
	}
	defer sub.Close()
	base := filepath.Base(target)
	// What a killed download left (a cancelled one removes its own).
	if ents, err := sub.ReadDir(); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "."+base+".tmp-") || strings.HasPrefix(e.Name(), "."+base+".part-") {
				_ = sub.Remove(e.Name())
			}
		}
	}
	tmp, err := sub.CreateTemp(base, 0o644)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", rel, err)
	}
	defer func() {
		if err != nil {
			tmp.Abort()
		}
	}()
	h := sha256.New()
	n, err = d.stream(ctx, u, io.MultiWriter(tmp, h), d.o.MaxBytes)
	if err != nil {
		return "", n, fmt.Errorf("%s: %w", rel, err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if want != "" && sum != want {
		return "", n, &ChecksumError{Path: rel, URL: u, Got: sum, Want: want, From: from}
	}
	if err := tmp.Commit(ctx, atomicfile.Options{}); err != nil {
		return "", n, fmt.Errorf("%s: %w", rel, err)
	}
	return sum, n, nil
}

// stream GETs u into w, at most max bytes, under the request deadline and
// the idle deadline (headers, then every read of the body).
func (d *downloader) stream(parent context.Context, u string, w io.Writer, max int64) (int64, error) {
	ctx, cancel := context.WithTimeout(parent, d.o.RequestTimeout)
	defer cancel()
	var idleFired atomic.Bool
	idle := time.AfterFunc(d.o.IdleTimeout, func() { idleFired.Store(true); cancel() })
	defer idle.Stop()
	why := func(err error) error {
		switch {
		case parent.Err() != nil:
			return fmt.Errorf("%s: %w", u, parent.Err())
		case idleFired.Load():
			return fmt.Errorf("%s: nothing received for %s (the idle deadline): %w", u, d.o.IdleTimeout, err)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: not finished within the deadline of %s per request: %w", u, d.o.RequestTimeout, err)
		default:
			return fmt.Errorf("%s: %w", u, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("User-Agent", "hybridctl-bundle")
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return 0, why(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", u, resp.Status)
	}
	if resp.ContentLength > max {
		return 0, fmt.Errorf("%s: %d bytes, more than the limit of %d", u, resp.ContentLength, max)
	}
	var n int64
	buf := make([]byte, 64<<10)
	for {
		idle.Reset(d.o.IdleTimeout)
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			n += int64(k)
			if n > max {
				return n, fmt.Errorf("%s: more than the limit of %d bytes", u, max)
			}
			if _, err := w.Write(buf[:k]); err != nil {
				return n, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, why(rerr)
		}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("%s: got %d of %d bytes", u, n, resp.ContentLength)
	}
	return n, nil
}
