package transport

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Stream bounds of UploadStream: the transfer fails when no byte moves for
// StreamIdleTimeout, and the node's check of the received file (sha256
// over the whole file) must finish within StreamVerifyTimeout after the
// last byte.
const (
	StreamIdleTimeout   = 2 * time.Minute
	StreamVerifyTimeout = 5 * time.Minute
)

// ErrStreamStalled is the cause of an upload that moved no data for
// StreamIdleTimeout.
var ErrStreamStalled = errors.New("no data moved")

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// UploadStream writes what r yields to dst on the host without holding it
// in memory, and replaces dst only when the node itself computed the
// expected sha256 (lower-case hex) over what arrived: a short or corrupted
// transfer never replaces anything. Parent directories are created 0755
// and owned by root (Linux); the file gets mode (on Windows: received into
// a file only Administrators and SYSTEM can open, then, for a mode with
// group or other bits, given the directory's inherited permissions). The transfer fails when no data
// moves for StreamIdleTimeout; ctx bounds the whole upload.
func (c *Client) UploadStream(ctx context.Context, dst string, r io.Reader, sha256hex string, mode fs.FileMode) error {
	if dst == "" {
		return fmt.Errorf("upload to %s: empty destination path", c.cfg.Host)
	}
	if !sha256Hex.MatchString(sha256hex) {
		return fmt.Errorf("upload of %s to %s: %q is not a lower-case hex sha256", dst, c.cfg.Host, sha256hex)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := c.cfg.StreamIdleTimeout
	if idle <= 0 {
		idle = StreamIdleTimeout
	}
	wr := &watchedReader{r: r, idle: idle}
	wr.touch()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wr.watch(stop, cancel)
	}()
	defer func() { close(stop); wg.Wait() }()
	var script string
	var in io.Reader = wr
	if c.cfg.OS == engine.Windows {
		script = windowsStreamScript(dst, sha256hex, mode)
		in = newBase64LineReader(wr)
	} else {
		script = linuxStreamScript(dst, sha256hex, mode)
	}
	_, err := c.run(ctx, script, in, Limits{}, false)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrStreamStalled) {
			err = fmt.Errorf("%w for %s (after %d bytes)", cause, idle, wr.n.Load())
		}
		return fmt.Errorf("uploading %s to %s: %w", dst, c.cfg.Host, err)
	}
	return nil
}

// watchedReader counts bytes and when they last moved; after EOF the node
// has StreamVerifyTimeout to check the file.
type watchedReader struct {
	r    io.Reader
	idle time.Duration
	n    atomic.Int64
	last atomic.Int64 // unix nanoseconds of the last progress
	eof  atomic.Bool
}

func (w *watchedReader) touch() { w.last.Store(time.Now().UnixNano()) }

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.n.Add(int64(n))
		w.touch()
	}
	if err == io.EOF && !w.eof.Load() {
		w.touch()
		w.eof.Store(true)
	}
	return n, err
}

func (w *watchedReader) watch(stop <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(min(time.Second, w.idle/4))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			limit, cause := w.idle, ErrStreamStalled
			if w.eof.Load() {
				limit, cause = StreamVerifyTimeout, fmt.Errorf("the node did not finish checking the file within %s", StreamVerifyTimeout)
			}
			if time.Since(time.Unix(0, w.last.Load())) > limit {
				cancel(cause)
				return
			}
		}
	}
}

// linuxStreamScript receives stdin into a temporary file beside dst, checks
// its sha256 on the node and only then renames it over dst.
func linuxStreamScript(dst, sum string, mode fs.FileMode) string {
	return fmt.Sprintf(`umask 022
if [ "$(id -u)" = 0 ]; then install -d -o 0 -g 0 -m 0755 -- %[1]s; else install -d -m 0755 -- %[1]s; fi
tmp=$(mktemp -- %[1]s/.hybridctl-part.XXXXXX)
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
got=$(sha256sum < "$tmp" | cut -d' ' -f1)
if [ "$got" != %[3]s ]; then
	echo "the received file has sha256 $got ($(wc -c < "$tmp") bytes), want %[3]s; nothing was replaced" >&2
	exit 3
fi
chmod %04[4]o -- "$tmp"
mv -f -- "$tmp" %[2]s
trap - EXIT`, ShellQuote(path.Dir(dst)), ShellQuote(dst), sum, mode.Perm())
}

func windowsStreamScript(dst, sum string, mode fs.FileMode) string {
	return windowsReceiveScript(dst, "part", sum, mode.Perm()&0o077 == 0)
}

// base64LineReader encodes what it reads as base64 lines of uploadChunk
// input bytes (what the Windows upload script reads line by line).
type base64LineReader struct {
	r   io.Reader
	in  []byte
	out []byte
	err error
}

func newBase64LineReader(r io.Reader) *base64LineReader {
	return &base64LineReader{r: r, in: make([]byte, uploadChunk)}
}

func (b *base64LineReader) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		n, err := io.ReadFull(b.r, b.in)
		if n > 0 {
			line := make([]byte, base64.StdEncoding.EncodedLen(n)+1)
			base64.StdEncoding.Encode(line, b.in[:n])
			line[len(line)-1] = '\n'
			b.out = line
		}
		switch {
		case err == io.ErrUnexpectedEOF:
			b.err = io.EOF
		case err != nil:
			b.err = err
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}
