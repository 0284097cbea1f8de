package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/manifest"
)

// lineReader reads lines of at most max bytes; a longer line is reported
// as long (its text dropped) and skipped without being held in memory.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

// next returns the next line without its "\n" (or "\r\n"). The slice is
// valid until the next call. io.EOF comes after the last line.
func (l *lineReader) next() (line []byte, long bool, err error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		if !long {
			if len(l.buf)+len(frag) > l.max+2 {
				long, l.buf = true, l.buf[:0]
			} else if len(l.buf) == 0 && err == nil {
				// The common case: the whole line is in the buffer.
				return trimEOL(frag), false, nil
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case err == nil:
			return trimEOL(l.buf), long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if len(l.buf) == 0 && !long {
				return nil, false, io.EOF
			}
			return trimEOL(l.buf), long, nil
		default:
			return nil, false, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// yamlCutter cuts a multi-document YAML stream into documents at "---"
// and "..." lines. A List's items (a top-level "items:" block sequence, as
// kubectl get -o yaml writes it) are cut out one by one, so a List of any
// size is read one item at a time; each item keeps its own line. A Helm
// "# Source: path" comment names the template of the document it
// precedes.
type yamlCutter struct {
	p    *pipeline
	ctx  context.Context
	file string

	cur      []byte // the document (or a List's head) so far
	first    int    // file line of cur's first line, 0 before content
	template string
	skip     bool // the document is over the cap: drop it
	docs     int  // documents of the file before this one

	// A List's items, while inside its top-level "items:" block.
	inItems   bool
	dash      int // column of the items' "-", -1 before the first item
	item      []byte
	itemFirst int
	itemSkip  bool
	headLines *headLines
}

func (p *pipeline) readYAML(ctx context.Context, file string, br *bufio.Reader) error {
	c := &yamlCutter{p: p, ctx: ctx, file: file}
	lr := &lineReader{br: br, max: p.max}
	for n := 1; ; n++ {
		line, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := c.line(n, line, long); err != nil {
			return err
		}
	}
	return c.flush()
}

func isSeparator(t []byte) bool {
	return bytes.HasPrefix(t, []byte("---")) && (len(t) == 3 || t[3] == ' ' || t[3] == '\t')
}

func indentOf(t []byte) int {
	i := 0
	for i < len(t) && t[i] == ' ' {
		i++
	}
	return i
}

// isItemsKey matches a top-level "items:" with nothing after it but a
// comment: the start of a block sequence of items.
func isItemsKey(t []byte) bool {
	if !bytes.HasPrefix(t, []byte("items:")) {
		return false
	}
	rest := bytes.TrimSpace(t[len("items:"):])
	return len(rest) == 0 || rest[0] == '#'
}

// dashAt reports whether t is a sequence entry ("- x" or "-") whose dash
// is at column col.
func dashAt(t []byte, col int) bool {
	if len(t) <= col || t[col] != '-' || indentOf(t) != col {
		return false
	}
	return len(t) == col+1 || t[col+1] == ' '
}

func (c *yamlCutter) line(n int, t []byte, long bool) error {
	if isSeparator(t) {
		if err := c.flush(); err != nil {
			return err
		}
		if rest := bytes.TrimSpace(t[3:]); len(rest) > 0 && rest[0] != '#' {
			// "--- {inline: doc}" puts content on the marker line.
			c.first = n
			c.cur = append(append(c.cur, rest...), '\n')
		}
		return nil
	}
	if string(t) == "..." {
		return c.flush()
	}
	if c.skip {
		return nil
	}
	if c.inItems {
		return c.itemLine(n, t, long)
	}
	trim := bytes.TrimSpace(t)
	if c.first == 0 {
		if bytes.HasPrefix(trim, []byte("# Source: ")) {
			c.template = string(trim[len("# Source: "):])
		}
		if len(trim) == 0 || trim[0] == '#' {
			// Blank lines and comments before content are not the
			// object's line; YAML error lines count from its first line.
			return nil
		}
		c.first = n
	}
	if long || len(c.cur)+len(t)+1 > c.p.max {
		c.skip = true
		c.cur = c.cur[:0]
		return c.p.send(c.ctx, doc{file: c.file, line: c.first, diag: tooLarge(c.file, c.first, c.p.max)})
	}
	c.cur = append(append(c.cur, t...), '\n')
	if isItemsKey(t) && c.headLines == nil && indentOf(c.cur) == 0 {
		c.inItems, c.dash = true, -1
	}
	return nil
}

// itemLine handles a line inside a List's items block.
func (c *yamlCutter) itemLine(n int, t []byte, long bool) error {
	trim := bytes.TrimSpace(t)
	blank := len(trim) == 0 || trim[0] == '#'
	if c.dash < 0 {
		switch {
		case blank:
			c.cur = append(append(c.cur, t...), '\n')
			return nil
		case bytes.HasPrefix(trim, []byte("-")) && dashAt(t, indentOf(t)):
			c.dash = indentOf(t)
		default:
			// "items:" held no sequence: an ordinary document.
			c.inItems = false
			return c.line(n, t, long)
		}
	}
	switch {
	case dashAt(t, c.dash):
		if err := c.flushItem(); err != nil {
			return err
		}
		c.itemFirst = n
		if long {
			return c.itemTooLarge()
		}
		c.item = append(c.item, t...)
		c.item[len(c.item)-len(t)+c.dash] = ' '
		c.item = append(c.item, '\n')
		return nil
	case blank || indentOf(t) > c.dash || t[indentOf(t)] == '\t':
		// More indented (a tab counts as more: YAML's parser reports it),
		// or blank: the item goes on.
		if c.itemSkip {
			return nil
		}
		if long || len(c.item)+len(t)+1 > c.p.max {
			return c.itemTooLarge()
		}
		c.item = append(append(c.item, t...), '\n')
		return nil
	}
	// A line back at the List's own level: the items have ended, the
	// rest is the List's head again.
	if err := c.flushItem(); err != nil {
		return err
	}
	c.inItems = false
	c.headLines = &headLines{before: bytes.Count(c.cur, []byte{'\n'}), after: n}
	return c.line(n, t, long)
}

func (c *yamlCutter) itemTooLarge() error {
	c.item, c.itemSkip = c.item[:0], true
	return c.p.send(c.ctx, doc{file: c.file, line: c.itemFirst, diag: tooLarge(c.file, c.itemFirst, c.p.max)})
}

func (c *yamlCutter) flushItem() error {
	defer func() { c.item, c.itemSkip = c.item[:0], false }()
	if c.itemSkip || len(c.item) == 0 {
		return nil
	}
	return c.send(doc{file: c.file, line: c.itemFirst, template: c.template}, c.item)
}

// flush sends the document read so far (a List's head after its items).
func (c *yamlCutter) flush() error {
	var err error
	if c.inItems {
		err = c.flushItem()
	}
	if err == nil && c.first > 0 && !c.skip {
		err = c.send(doc{file: c.file, line: c.first, template: c.template, lines: c.headLines}, c.cur)
	}
	if c.first > 0 {
		c.docs++
	}
	c.cur, c.first, c.template, c.skip = c.cur[:0], 0, "", false
	c.inItems, c.headLines = false, nil
	return err
}

func aliasFix(ae *manifest.AliasError) string {
	if ae.Whole {
		return "write the aliased values out, or lint the files in smaller groups"
	}
	return "write the aliased values out: a Kubernetes object rarely needs YAML aliases"
}

// send hands a document (or a List's item) cut from document c.docs+1 of
// the file to the workers. A document that may hold aliases is measured
// first, here and in the input's order, against the input's alias budget:
// one that expands too far becomes an error diagnostic and is not
// expanded at all. (A document yaml.v3 cannot parse is left to the
// worker, which reports the error; nothing expands it.)
func (c *yamlCutter) send(d doc, data []byte) error {
	if manifest.MayHaveAlias(data) {
		var n yaml.Node
		if yaml.Unmarshal(data, &n) == nil {
			var ae *manifest.AliasError
			if err := c.p.aliases.Charge(&n); errors.As(err, &ae) {
				line := d.fileLine(max(ae.Line, 1))
				return c.p.send(c.ctx, doc{file: c.file, line: line, diag: &Diagnostic{Severity: DiagError, File: c.file, Line: line,
					Message: fmt.Sprintf("cannot read this YAML document (document %d of the file): %s", c.docs+1, ae.Reason()),
					Fix:     aliasFix(ae)}})
			}
		}
	}
	return c.p.send(c.ctx, c.p.copyDoc(d, data))
}
