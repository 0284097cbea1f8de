package manifest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
)

// Document is one document of a YAML stream, or one item of a List in it.
type Document struct {
	// Data is the document's text, every line ending in a line break; nil
	// when TooLarge. It is valid only during the call that receives it.
	Data []byte
	// Line is the stream's line of Data's first line: the document's first
	// content line (blank and comment lines before it are not part of it).
	Line int
	// Number is the document's place among the stream's documents with
	// content, from 1 (an item has its List's number).
	Number int
	// Source is the path of Helm's "# Source: PATH" comment before the
	// document, if any.
	Source string
	// Item marks an item of a List cut out of document Number.
	Item bool
	// TooLarge marks a document (or item) over Splitter.MaxDocument, or
	// with a longer line: its text was skipped, not held.
	TooLarge bool
	// Lines maps Data's lines to the stream's.
	Lines LineMap
}

// LineMap maps the lines of a document's text to the lines of its stream:
// one offset, or two for a List's head, whose lines before and after its
// items are joined.
type LineMap struct {
	first  int // stream line of the first line
	before int // with a head: lines before the items' end
	after  int // with a head: stream line of the first line after the items
}

// Line maps line n (1-based) of the text to the stream's line.
func (m LineMap) Line(n int) int {
	if m.after > 0 && n > m.before {
		return m.after + n - m.before - 1
	}
	return m.first + n - 1
}

// Splitter cuts a YAML stream into documents at "---" and "..." lines,
// reading it line by line, so a stream of any length is held one document
// at a time. The zero value cuts documents only, of any size.
type Splitter struct {
	// MaxDocument caps one document's (or item's) size in bytes; a larger
	// one is passed on as TooLarge, without its text. 0 is no cap.
	MaxDocument int
	// Items cuts the items of a List (a top-level "items:" block sequence,
	// as kubectl get -o yaml writes it) out one by one, each with its own
	// line, so a List of any size is held one item at a time; the List's
	// other lines follow as a document of their own.
	Items bool
}

// Split reads r and calls emit with each document that has content, in
// order; emit's error stops the split and is returned, as is a read error.
func (s Splitter) Split(ctx context.Context, r io.Reader, emit func(*Document) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	max := s.MaxDocument
	if max <= 0 {
		max = math.MaxInt / 2
	}
	c := &cutter{ctx: ctx, max: max, items: s.Items, emit: emit}
	lr := &lineReader{br: br, max: max}
	for n := 1; ; n++ {
		line, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		// A stream's last line may end without a line break: then its
		// document does not end with one either (a literal block's
		// value ends where the file does).
		c.eol = lr.eol
		if err := c.line(n, line, long); err != nil {
			return err
		}
	}
	return c.flush()
}

// Documents cuts data into its documents, each with its own copy of its
// text.
func Documents(data []byte) []Document {
	var docs []Document
	_ = Splitter{}.Split(context.Background(), bytes.NewReader(data), func(d *Document) error {
		c := *d
		c.Data = bytes.Clone(d.Data)
		docs = append(docs, c)
		return nil
	})
	return docs
}

// lineReader reads lines of at most max bytes; a longer line is reported
// as long (its text dropped) and skipped without being held in memory.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
	eol bool // the line next returned ended with a line break
}

// next returns the next line without its "\n" (or "\r\n"). The slice is
// valid until the next call. io.EOF comes after the last line.
func (l *lineReader) next() (line []byte, long bool, err error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		l.eol = len(frag) > 0 && frag[len(frag)-1] == '\n'
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

// cutter is the state of one Split.
type cutter struct {
	ctx   context.Context
	max   int
	items bool
	emit  func(*Document) error
	docs  int  // documents with content before the current one
	eol   bool // the current line ends with a line break

	cur    []byte // the document (or a List's head) so far
	first  int    // stream line of cur's first line, 0 before content
	source string
	skip   bool // the document is over the cap: drop it

	// A List's items, while inside its top-level "items:" block.
	inItems   bool
	dash      int // column of the items' "-", -1 before the first item
	item      []byte
	itemFirst int
	itemSkip  bool
	head      LineMap // a List head's mapping once its items have ended
}

func (c *cutter) send(d *Document) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	d.Number = c.docs + 1
	d.Lines.first = d.Line
	return c.emit(d)
}

// IsSeparator reports whether a line (without its line break) is a
// document start marker: "---" alone or followed by a space or a tab.
func IsSeparator(t []byte) bool {
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

func (c *cutter) line(n int, t []byte, long bool) error {
	if IsSeparator(t) {
		if err := c.flush(); err != nil {
			return err
		}
		if rest := bytes.TrimSpace(t[3:]); len(rest) > 0 && rest[0] != '#' {
			// "--- {inline: doc}" puts content on the marker line. On a
			// line of its own, content that reads as a marker ("--- ---")
			// is indented, so that it stays content.
			c.first = n
			if IsSeparator(rest) || bytes.HasPrefix(rest, []byte("...")) {
				c.cur = append(c.cur, ' ')
			}
			c.cur = c.appendLine(c.cur, rest)
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
			c.source = string(trim[len("# Source: "):])
		}
		if !long && (len(trim) == 0 || trim[0] == '#') {
			// Blank lines and comments before content are not the
			// document's line; YAML error lines count from its first line.
			return nil
		}
		c.first = n
	}
	if long || len(c.cur)+len(t)+1 > c.max {
		c.skip = true
		c.cur = c.cur[:0]
		return c.send(&Document{Line: c.first, Source: c.source, TooLarge: true})
	}
	c.cur = c.appendLine(c.cur, t)
	if c.items && isItemsKey(t) && c.head.after == 0 && indentOf(c.cur) == 0 {
		c.inItems, c.dash = true, -1
	}
	return nil
}

// itemLine handles a line inside a List's items block.
func (c *cutter) itemLine(n int, t []byte, long bool) error {
	trim := bytes.TrimSpace(t)
	blank := len(trim) == 0 || trim[0] == '#'
	if c.dash < 0 {
		switch {
		case long:
			// A line too long to read where the first item belongs:
			// the List is too large.
			c.inItems = false
			return c.line(n, t, long)
		case blank:
			c.cur = c.appendLine(c.cur, t)
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
		if long || len(t)+1 > c.max {
			return c.itemTooLarge()
		}
		at := len(c.item) + c.dash
		c.item = c.appendLine(c.item, t)
		c.item[at] = ' '
		return nil
	case blank || long || indentOf(t) > c.dash || t[indentOf(t)] == '\t':
		// More indented (a tab counts as more: YAML's parser reports it),
		// blank, or too long to read: the item goes on.
		if c.itemSkip {
			return nil
		}
		if long || len(c.item)+len(t)+1 > c.max {
			return c.itemTooLarge()
		}
		c.item = c.appendLine(c.item, t)
		return nil
	}
	// A line back at the List's own level: the items have ended, the
	// rest is the List's head again.
	if err := c.flushItem(); err != nil {
		return err
	}
	c.inItems = false
	c.head = LineMap{before: bytes.Count(c.cur, []byte{'\n'}), after: n}
	return c.line(n, t, long)
}

// appendLine appends line t to b, with its line break when it has one.
func (c *cutter) appendLine(b, t []byte) []byte {
	b = append(b, t...)
	if c.eol {
		b = append(b, '\n')
	}
	return b
}

func (c *cutter) itemTooLarge() error {
	c.item, c.itemSkip = c.item[:0], true
	return c.send(&Document{Line: c.itemFirst, Source: c.source, Item: true, TooLarge: true})
}

func (c *cutter) flushItem() error {
	defer func() { c.item, c.itemSkip = c.item[:0], false }()
	if c.itemSkip || len(c.item) == 0 {
		return nil
	}
	return c.send(&Document{Data: c.item, Line: c.itemFirst, Source: c.source, Item: true})
}

// flush sends the document read so far (a List's head after its items).
func (c *cutter) flush() error {
	var err error
	if c.inItems {
		err = c.flushItem()
	}
	if err == nil && c.first > 0 && !c.skip {
		err = c.send(&Document{Data: c.cur, Line: c.first, Source: c.source, Lines: c.head})
	}
	if c.first > 0 {
		c.docs++
	}
	c.cur, c.first, c.source, c.skip = c.cur[:0], 0, "", false
	c.inItems, c.head = false, LineMap{}
	return err
}
