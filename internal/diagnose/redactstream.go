package diagnose

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
)

// maxRedactLine is the longest line the streaming redaction keeps: a
// longer one is cut there (its first part redacted and kept) and the rest
// is dropped, so the memory it needs is bounded.
const maxRedactLine = 64 << 10

// redactingWriter redacts a stream line by line (Redact on each line; a
// PEM private key, which spans lines, is replaced whole, as Redact replaces
// it; other PEM blocks, certificates, are lines like the others) into w, and writes at
// most max bytes (whole lines): the rest is counted and noted at Close.
// It never fails a Write of the stream it is given: an error of w is
// kept, writing stops, and Close returns it.
type redactingWriter struct {
	w    io.Writer
	max  int64
	line []byte
	// cut is set while the rest of an over-long line is dropped.
	cut bool
	// inPEM is set between a PEM private key's BEGIN and END lines; pemKept
	// when its BEGIN line was within max.
	inPEM, pemKept bool
	// full is set once max is reached.
	full    bool
	written int64
	skipped int64
	err     error
}

// pemKeyBegin is the first line of a PEM private key, as redact's pattern
// for them reads it.
var pemKeyBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)

// pemKeyRedacted is what redact puts in a private key's place.
const pemKeyRedacted = "<redacted PEM private key>"

func newRedactingWriter(w io.Writer, max int64) *redactingWriter {
	return &redactingWriter{w: w, max: max}
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i+1]
		}
		p = p[len(chunk):]
		if r.cut {
			r.skipped += int64(len(chunk))
			if i >= 0 {
				r.cut = false
			}
			continue
		}
		if room := maxRedactLine - len(r.line); len(chunk) > room {
			// An over-long line: its first maxRedactLine bytes are
			// kept, the rest dropped (up to its newline, which may come
			// in a later write).
			r.line = append(r.line, chunk[:room]...)
			r.skipped += int64(len(chunk) - room)
			r.line = append(r.line, " [hybridctl: the rest of this line is not kept]\n"...)
			r.flush()
			r.cut = i < 0
			continue
		}
		r.line = append(r.line, chunk...)
		if i >= 0 {
			r.flush()
		}
	}
	return n, nil
}

// flush redacts and writes the buffered line; once the next line would
// take the output past max, nothing more is written, only counted.
func (r *redactingWriter) flush() {
	line := r.line
	r.line = r.line[:0]
	var out []byte
	switch {
	case r.inPEM:
		if bytes.Contains(line, []byte("-----END ")) {
			r.inPEM = false
			if r.pemKept {
				out = []byte(pemKeyRedacted + "\n")
			}
		}
	case pemKeyBegin.Match(line) && !bytes.Contains(line, []byte("-----END ")):
		r.inPEM, r.pemKept = true, !r.full
		i := pemKeyBegin.FindIndex(line)[0]
		out = Redact(append([]byte{}, line[:i]...))
	default:
		out = Redact(append([]byte{}, line...))
	}
	if !r.full && r.written+int64(len(out)) > r.max {
		r.full = true
	}
	if r.full {
		r.skipped += int64(len(line))
		return
	}
	if len(out) == 0 || r.err != nil {
		return
	}
	r.written += int64(len(out))
	_, r.err = r.w.Write(out)
}

// Close writes what is left (a last line without a newline, an unfinished
// PEM block as redacted) and a note of how much was not kept.
func (r *redactingWriter) Close() error {
	if len(r.line) > 0 {
		r.line = append(r.line, '\n')
		r.flush()
	}
	if r.inPEM && r.pemKept && r.err == nil {
		_, r.err = io.WriteString(r.w, pemKeyRedacted+", unfinished\n")
	}
	if r.skipped > 0 && r.err == nil {
		_, r.err = fmt.Fprintf(r.w, "[hybridctl: %d more bytes of the output are not kept here]\n", r.skipped)
	}
	return r.err
}
