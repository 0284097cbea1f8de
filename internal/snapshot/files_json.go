package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

// jsonSlack is what the reader lets the JSON decoder read past the cap
// (separators, white space); decodeRaw checks the value's own size.
const jsonSlack = 4 << 10

// errTooLarge stops the JSON decoder at the document cap.
var errTooLarge = errors.New("document too large")

// lineTracker passes a stream through, counting lines, and refuses to
// read past a limit (the end of the current document's allowance).
type lineTracker struct {
	r     io.Reader
	read  int64   // bytes passed on
	limit int64   // no byte at or past this offset is read
	nl    []int64 // offsets of newlines at or after the last query
	line  int     // newlines before nl[0]
}

func (t *lineTracker) Read(b []byte) (int, error) {
	rem := t.limit - t.read
	if rem <= 0 {
		return 0, errTooLarge
	}
	if int64(len(b)) > rem {
		b = b[:rem]
	}
	n, err := t.r.Read(b)
	for i := 0; i < n; {
		j := bytes.IndexByte(b[i:n], '\n')
		if j < 0 {
			break
		}
		t.nl = append(t.nl, t.read+int64(i+j))
		i += j + 1
	}
	t.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line of offset off. Offsets must not
// decrease from one call to the next.
func (t *lineTracker) lineAt(off int64) int {
	i := 0
	for i < len(t.nl) && t.nl[i] < off {
		i++
	}
	t.line += i
	if i > 0 {
		t.nl = append(t.nl[:0], t.nl[i:]...)
	}
	return t.line + 1
}

// jsonCutter cuts a stream of JSON values into documents: an object is a
// document, a top-level array's elements are documents, and so are the
// elements of an object's "items" array (a List). Each is decoded on its
// own, so a List of any size is held one item at a time.
type jsonCutter struct {
	p    *pipeline
	ctx  context.Context
	file string
	t    *lineTracker
	dec  *json.Decoder
	// at is the line of the document being read, for a diagnostic when
	// it turns out too large.
	at int
}

func (p *pipeline) readJSON(ctx context.Context, file string, r io.Reader) error {
	t := &lineTracker{r: r}
	c := &jsonCutter{p: p, ctx: ctx, file: file, t: t, dec: json.NewDecoder(t)}
	c.dec.UseNumber()
	err := c.stream()
	var re readError
	if err == nil || errors.As(err, &re) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The text is broken: JSON cannot be resumed after it, so the rest
	// of the file is not read.
	line := c.at
	if line == 0 {
		line = t.lineAt(t.read)
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line = t.lineAt(max(se.Offset-1, 0))
		err = fmt.Errorf("%v (the rest of the file was not read)", se)
	case errors.Is(err, errTooLarge):
		return c.p.send(c.ctx, doc{file: file, line: line, diag: tooLarge(file, line, p.max)})
	case errors.Is(err, io.ErrUnexpectedEOF):
		line = t.lineAt(t.read)
		err = errors.New("unexpected end of JSON input (a truncated file?)")
	}
	return c.p.send(c.ctx, doc{file: file, line: line, json: true,
		diag: &Diagnostic{Severity: finding.Error, File: file, Line: line, Message: err.Error()}})
}

// decodeRaw decodes the next value whole, within the cap. A syntax
// error's offset, which the decoder counts from the value's start, is made
// absolute. A value over the cap that still fit the slack is refused here,
// and the stream goes on after it.
func (c *jsonCutter) decodeRaw(line int) (json.RawMessage, error) {
	c.at = line
	c.allow()
	start := c.dec.InputOffset()
	var raw json.RawMessage
	if err := c.dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			se.Offset += start
		}
		return nil, err
	}
	if len(raw) > c.p.max {
		return nil, c.p.send(c.ctx, doc{file: c.file, line: line, diag: tooLarge(c.file, line, c.p.max)})
	}
	return raw, nil
}

// allow lets the next document read up to the cap past where the decoder
// is now.
func (c *jsonCutter) allow() {
	c.t.limit = c.dec.InputOffset() + int64(c.p.max) + jsonSlack
	if c.t.limit < c.t.read {
		c.t.limit = c.t.read
	}
}

// nextLine is the line of the next value: it skips a separating comma
// and white space in the decoder's buffer. Call it after More.
func (c *jsonCutter) nextLine() int {
	line := c.t.lineAt(c.dec.InputOffset())
	var buf [256]byte
	n, _ := c.dec.Buffered().Read(buf[:])
	for i, b := range buf[:n] {
		switch {
		case b == '\n':
			line++
		case b == ',' && i == 0, b == ' ', b == '\t', b == '\r':
		default:
			return line
		}
	}
	return line
}

func (c *jsonCutter) stream() error {
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		c.allow()
		if !c.dec.More() {
			// More is false at the end, or before a stray closing
			// delimiter, which Token reports.
			if _, err := c.dec.Token(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			return errors.New("unexpected closing delimiter")
		}
		line := c.nextLine()
		c.at = line
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['):
			if err := c.elements(); err != nil {
				return err
			}
		case json.Delim('{'):
			if err := c.object(line); err != nil {
				return err
			}
		default:
			if err := c.p.send(c.ctx, doc{file: c.file, line: line, json: true,
				diag: notObject(c.file, line, fmt.Sprintf("a JSON %s", jsonType(tok)))}); err != nil {
				return err
			}
		}
	}
}

func jsonType(tok json.Token) string {
	switch tok.(type) {
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// elements sends each element of the array whose '[' was just read as a
// document, then reads the ']'.
func (c *jsonCutter) elements() error {
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		c.allow()
		if !c.dec.More() {
			break
		}
		line := c.nextLine()
		raw, err := c.decodeRaw(line)
		if err != nil {
			return err
		}
		if raw == nil {
			continue
		}
		if err := c.p.send(c.ctx, doc{file: c.file, line: line, json: true, data: raw}); err != nil {
			return err
		}
	}
	_, err := c.dec.Token()
	return err
}

// object reads the object whose '{' was just read. Its "items" array, when
// the object is a List (or its kind comes later), is streamed element by
// element; the rest is sent as one document.
func (c *jsonCutter) object(line int) error {
	head := []byte{'{'}
	kind := ""
	for {
		c.allow()
		if !c.dec.More() {
			break
		}
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if key == "items" && (kind == "" || strings.HasSuffix(kind, "List")) {
			// The value's first token says whether it is an array to
			// stream; anything else is rebuilt from its tokens.
			c.at = line
			c.allow()
			tok, err := c.dec.Token()
			if err != nil {
				return err
			}
			if tok == json.Delim('[') {
				if err := c.elements(); err != nil {
					return err
				}
				continue
			}
			if raw, err = c.rebuild(tok, 0); err != nil {
				return err
			}
		} else if raw, err = c.decodeRaw(line); err != nil {
			return err
		} else if raw == nil {
			// Over the cap: the object is dropped with its diagnostic.
			return c.skipObject()
		}
		if key == "kind" {
			_ = json.Unmarshal(raw, &kind)
		}
		if len(head)+len(raw)+len(key)+4 > c.p.max {
			if err := c.p.send(c.ctx, doc{file: c.file, line: line, diag: tooLarge(c.file, line, c.p.max)}); err != nil {
				return err
			}
			return c.skipObject()
		}
		if len(head) > 1 {
			head = append(head, ',')
		}
		k, _ := json.Marshal(key)
		head = append(append(append(head, k...), ':'), raw...)
	}
	if _, err := c.dec.Token(); err != nil {
		return err
	}
	head = append(head, '}')
	return c.p.send(c.ctx, doc{file: c.file, line: line, json: true, data: head})
}

// rebuild writes the JSON of the value whose first token is tok, reading
// the rest of it token by token.
func (c *jsonCutter) rebuild(tok json.Token, depth int) (json.RawMessage, error) {
	if depth > 1000 {
		return nil, manifest.ErrTooDeep
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return json.Marshal(tok)
	}
	out := []byte{byte(d)}
	for i := 0; c.dec.More(); i++ {
		if i > 0 {
			out = append(out, ',')
		}
		t, err := c.dec.Token()
		if err != nil {
			return nil, err
		}
		if d == '{' {
			k, _ := json.Marshal(t)
			out = append(append(out, k...), ':')
			if t, err = c.dec.Token(); err != nil {
				return nil, err
			}
		}
		v, err := c.rebuild(t, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
		if len(out) > c.p.max {
			return nil, errTooLarge
		}
	}
	end, err := c.dec.Token()
	if err != nil {
		return nil, err
	}
	return append(out, byte(end.(json.Delim))), nil
}

// skipObject reads the rest of the current object without keeping it.
func (c *jsonCutter) skipObject() error {
	for {
		c.allow()
		if !c.dec.More() {
			_, err := c.dec.Token()
			return err
		}
		if _, err := c.dec.Token(); err != nil {
			return err
		}
		var skip json.RawMessage
		c.allow()
		if err := c.dec.Decode(&skip); err != nil {
			return err
		}
	}
}
