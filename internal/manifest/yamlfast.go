package manifest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path of ToJSON. Most manifests use a small part of YAML:
// block mappings and sequences, one-line flow collections, plain and
// quoted one-line scalars and literal block scalars, in printable ASCII.
// fastToJSON converts exactly that part, straight from the lines to
// JSON, with no token stream and no node tree (yaml.v3's parser is most of
// lint's time otherwise). On anything else it gives up (ok false) before
// deciding anything, and ToJSON parses the document with yaml.v3, so
// errors and their lines always come from yaml.v3. What it accepts it
// writes byte for byte as the yaml.v3 path does (FuzzYAMLFast checks that on
// every input it accepts), and it means what sigs.k8s.io/yaml, Kubernetes'
// own reader, makes of the same text (FuzzToJSONOracle).

// fastMaxDepth bounds the nesting the fast path follows; deeper documents
// go to yaml.v3.
const fastMaxDepth = 200

type fastLine struct {
	indent int    // leading spaces
	text   []byte // the line from its first non-space byte
	raw    []byte // the whole line
	blank  bool   // empty, spaces only, or a comment
}

type fastParser struct {
	lines []fastLine
	i     int // the line being read
	b     *bytes.Buffer
	depth int
	// The top-level mapping's apiVersion and kind, read on the way.
	root bool // the next mapping is the top-level one
	top  TypeMeta
}

// note records a top-level key and its value (the JSON written since at).
func (p *fastParser) note(k string, at int) {
	switch {
	case k == "apiVersion" || k == "kind":
		v := p.b.Bytes()[at:]
		var s string
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v[1:len(v)-1], '"') < 0 && bytes.IndexByte(v, '\\') < 0:
			// A string writeString wrote without escapes.
			s = string(v[1 : len(v)-1])
		case len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil:
			p.top.OK = false
			return
		}
		if k == "kind" {
			p.top.Kind = s
		} else {
			p.top.APIVersion = s
		}
	case strings.EqualFold(k, "apiVersion") || strings.EqualFold(k, "kind") || strings.EqualFold(k, "items"):
		p.top.OK = false
	}
}

// fastToJSON writes doc as JSON into b and reports whether it could; when
// not, b holds garbage and the caller uses yaml.v3. It also returns the
// document's apiVersion and kind when it is a mapping (TypeMeta.OK). The
// document's lines are kept in *lines, whose storage it reuses.
func fastToJSON(doc []byte, b *bytes.Buffer, lines *[]fastLine) (top TypeMeta, ok bool) {
	if len(doc) == 0 || doc[len(doc)-1] != '\n' {
		return top, false // the cutter ends every document with a line break
	}
	for _, c := range doc {
		if (c < 0x20 && c != '\n') || c >= 0x7f {
			return top, false // tabs, CR, control bytes, non-ASCII
		}
	}
	if n := bytes.Count(doc, []byte{'\n'}) + 1; cap(*lines) < n {
		*lines = make([]fastLine, 0, n)
	}
	p := fastParser{lines: (*lines)[:0], b: b}
	defer func() { *lines = p.lines }()
	for len(doc) > 0 {
		var raw []byte
		if j := bytes.IndexByte(doc, '\n'); j >= 0 {
			raw, doc = doc[:j], doc[j+1:]
		} else {
			raw, doc = doc, nil
		}
		ind := 0
		for ind < len(raw) && raw[ind] == ' ' {
			ind++
		}
		if ind == 0 && len(raw) >= 3 && (string(raw[:3]) == "---" || string(raw[:3]) == "...") && (len(raw) == 3 || raw[3] == ' ') {
			return top, false // a document marker: the cutter's business
		}
		text := raw[ind:]
		p.lines = append(p.lines, fastLine{indent: ind, text: text, raw: raw, blank: len(text) == 0 || text[0] == '#'})
	}
	p.skipBlank()
	if p.i >= len(p.lines) {
		return top, false
	}
	l := p.lines[p.i]
	if l.text[0] == '%' {
		return top, false // a directive
	}
	p.root = true
	if !p.block(l.indent) {
		return top, false
	}
	p.skipBlank()
	return p.top, p.i == len(p.lines)
}

func (p *fastParser) skipBlank() {
	for p.i < len(p.lines) && p.lines[p.i].blank {
		p.i++
	}
}

// next is the next content line, or nil.
func (p *fastParser) next() *fastLine {
	p.skipBlank()
	if p.i >= len(p.lines) {
		return nil
	}
	return &p.lines[p.i]
}

// isDash reports whether a line's text is a block sequence entry.
func isDash(t []byte) bool {
	return len(t) > 0 && t[0] == '-' && (len(t) == 1 || t[1] == ' ')
}

// block reads the block collection whose first line is the current one,
// at column col.
func (p *fastParser) block(col int) bool {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > fastMaxDepth {
		return false
	}
	t := p.lines[p.i].text
	if isDash(t) {
		p.root = false
		return p.seq(col)
	}
	if _, _, ok := p.key(t); ok {
		return p.mapping(col)
	}
	return false // a scalar on its own line: yaml.v3
}

// after is the check after an entry's value: the next content line must
// not be more indented than the collection (a multi-line scalar, or an
// error yaml.v3 reports).
func (p *fastParser) after(col int) (l *fastLine, ok bool) {
	l = p.next()
	if l != nil && l.indent > col {
		return nil, false
	}
	return l, true
}

// value reads a value that starts on the lines after its key or dash: a
// block collection more indented than col, or a block sequence at col as
// a mapping's value; otherwise the value is null.
func (p *fastParser) value(col int, inMapping bool) bool {
	l := p.next()
	switch {
	case l == nil || l.indent < col:
	case l.indent == col:
		if inMapping && isDash(l.text) {
			return p.seq(col)
		}
	default:
		return p.block(l.indent)
	}
	p.b.WriteString("null")
	return true
}

func (p *fastParser) mapping(col int) bool {
	root := p.root
	p.root = false
	if root {
		p.top.OK = true
	}
	p.b.WriteByte('{')
	for first := true; ; first = false {
		l := &p.lines[p.i]
		k, rest, ok := p.key(l.text)
		if !ok {
			return false
		}
		if !first {
			p.b.WriteByte(',')
		}
		writeString(p.b, k)
		p.b.WriteByte(':')
		p.i++
		at := p.b.Len()
		if len(rest) == 0 {
			if !p.value(col, true) {
				return false
			}
		} else if !p.inline(rest, col) {
			return false
		}
		if root {
			p.note(k, at)
		}
		l, ok = p.after(col)
		if !ok {
			return false
		}
		if l == nil || l.indent < col {
			break
		}
		if isDash(l.text) {
			return false
		}
	}
	p.b.WriteByte('}')
	return true
}

func (p *fastParser) seq(col int) bool {
	p.b.WriteByte('[')
	for first := true; ; first = false {
		l := &p.lines[p.i]
		if !first {
			p.b.WriteByte(',')
		}
		rest := l.text[1:]
		k := 0
		for k < len(rest) && rest[k] == ' ' {
			k++
		}
		rest = rest[k:]
		switch {
		case len(rest) == 0 || rest[0] == '#':
			p.i++
			if !p.value(col, false) {
				return false
			}
		case isDash(rest) || p.isKeyLine(rest):
			// "- key: v" or "- - x": a collection that starts on the
			// dash's line, at the column of its first character.
			*l = fastLine{indent: col + 1 + k, text: rest, raw: l.raw}
			if !p.block(l.indent) {
				return false
			}
		default:
			p.i++
			if !p.inline(rest, col) {
				return false
			}
		}
		l, ok := p.after(col)
		if !ok {
			return false
		}
		if l == nil || l.indent < col || !isDash(l.text) {
			break
		}
	}
	p.b.WriteByte(']')
	return true
}

func (p *fastParser) isKeyLine(t []byte) bool {
	_, _, ok := p.key(t)
	return ok
}

// key splits a block mapping entry "key: rest" (or "key:") into its key
// and the rest of the line after the colon and its spaces; a comment
// after the colon leaves rest empty.
func (p *fastParser) key(t []byte) (key string, rest []byte, ok bool) {
	var after []byte
	plain := false
	switch t[0] {
	case '"', '\'':
		var n int
		key, n, ok = quoted(t)
		if !ok {
			return "", nil, false
		}
		after = t[n:]
		for len(after) > 0 && after[0] == ' ' {
			after = after[1:]
		}
		if len(after) == 0 || after[0] != ':' {
			return "", nil, false
		}
		after = after[1:]
	default:
		if !plainStart(t) {
			return "", nil, false
		}
		i := 0
		for {
			j := bytes.IndexByte(t[i:], ':')
			if j < 0 {
				return "", nil, false
			}
			i += j
			if i+1 == len(t) || t[i+1] == ' ' {
				break
			}
			i++
		}
		k := bytes.TrimRight(t[:i], " ")
		if len(k) > 1000 || bytes.Contains(k, []byte(" #")) {
			return "", nil, false
		}
		key, after, plain = string(k), t[i+1:], true
	}
	if key == "<<" {
		return "", nil, false // a merge key
	}
	if plain {
		// A plain key resolves like a value: "on" is the key "true".
		if key, ok = plainKey(key); !ok {
			return "", nil, false
		}
	}
	if len(after) > 0 && after[0] != ' ' {
		return "", nil, false
	}
	for len(after) > 0 && after[0] == ' ' {
		after = after[1:]
	}
	if len(after) > 0 && after[0] == '#' {
		after = nil
	}
	return key, after, true
}

// plainStart reports whether t can start a plain scalar (no indicator).
func plainStart(t []byte) bool {
	switch t[0] {
	case '-':
		return len(t) > 1 && t[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// rest checks that only spaces and a comment follow a value on its line.
func restOK(t []byte) bool {
	if len(t) == 0 {
		return true
	}
	if t[0] != ' ' {
		return false
	}
	t = bytes.TrimLeft(t, " ")
	return len(t) == 0 || t[0] == '#'
}

// inline reads a value that starts on the line of its key or dash; the
// current line is already the next one. col is the column of the
// collection the value is in.
func (p *fastParser) inline(t []byte, col int) bool {
	switch t[0] {
	case '{', '[':
		p.depth++
		n, ok := p.flow(t, 0)
		p.depth--
		return ok && restOK(t[n:])
	case '"', '\'':
		s, n, ok := quoted(t)
		if !ok && t[0] == '\'' {
			return p.foldSingle(t, col)
		}
		if !ok || !restOK(t[n:]) {
			return false
		}
		writeString(p.b, s)
		return true
	case '|':
		return p.literal(t, col)
	}
	if !plainStart(t) {
		return false
	}
	v := t
	comment := false
	if i := bytes.Index(v, []byte(" #")); i >= 0 {
		v, comment = v[:i], true
	}
	v = bytes.TrimRight(v, " ")
	if bytes.Contains(v, []byte(": ")) || v[len(v)-1] == ':' {
		return false
	}
	if !comment {
		// The lines after it that are more indented than the collection
		// continue it (a comment ends it: more lines then are the error
		// after reports).
		folded, ok := p.foldPlain(v, col)
		if !ok {
			return false
		}
		v = folded
	}
	return writePlain(p.b, string(v))
}

// foldPlain appends to the first line of a plain scalar (v) its
// continuation lines: those after it more indented than col, and the
// empty lines between them, folded as YAML folds them (a line break
// between two lines is a space, each empty line a line break). It gives
// up on a continuation line that could be read as anything else.
func (p *fastParser) foldPlain(v []byte, col int) ([]byte, bool) {
	j, empty := p.i, 0
	var out []byte
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		if len(l.text) == 0 {
			empty++
			continue
		}
		if l.indent <= col || l.text[0] == '#' {
			break
		}
		t := bytes.TrimRight(l.text, " ")
		if !plainStart(t) || t[0] == '-' || bytes.Contains(t, []byte(": ")) || bytes.Contains(t, []byte(" #")) || t[len(t)-1] == ':' {
			return nil, false
		}
		if out == nil {
			out = append(out, v...)
		}
		if empty > 0 {
			out = append(out, bytes.Repeat([]byte{'\n'}, empty)...)
		} else {
			out = append(out, ' ')
		}
		out = append(out, t...)
		empty = 0
		p.i = j + 1
	}
	if out == nil {
		return v, true
	}
	return out, true
}

// foldSingle reads a single-quoted scalar that does not end on its first
// line (t): its lines up to the closing quote, the others more indented
// than col (or empty), folded as YAML folds them.
func (p *fastParser) foldSingle(t []byte, col int) bool {
	var s []byte
	line, empty := t[1:], 0
	for first := true; ; first = false {
		if !first {
			if p.i >= len(p.lines) {
				return false
			}
			l := p.lines[p.i]
			p.i++
			if len(l.text) == 0 {
				empty++
				continue
			}
			if l.indent <= col {
				return false
			}
			if empty > 0 {
				s = append(s, bytes.Repeat([]byte{'\n'}, empty)...)
			} else {
				s = append(s, ' ')
			}
			// A line's leading spaces are not content (l.text starts
			// after them).
			empty, line = 0, l.text
		}
		// The line up to its closing quote ('' is a quote).
		for i := 0; i < len(line); i++ {
			if line[i] != '\'' {
				continue
			}
			if i+1 < len(line) && line[i+1] == '\'' {
				s = append(s, line[:i+1]...)
				line = line[i+2:]
				i = -1
				continue
			}
			if !restOK(line[i+1:]) {
				return false
			}
			writeString(p.b, string(append(s, line[:i]...)))
			return true
		}
		// A line's trailing spaces are not content when a line break
		// follows.
		s = append(s, bytes.TrimRight(line, " ")...)
	}
}

// literal reads a literal block scalar ("|" or "|-") whose content is on
// the lines after the current one, more indented than col.
func (p *fastParser) literal(t []byte, col int) bool {
	h := t[1:]
	strip := false
	if len(h) > 0 && h[0] == '-' {
		strip, h = true, h[1:]
	}
	if !restOK(h) {
		return false // "|+", an indentation indicator, text after "|"
	}
	// The content's indentation is the first non-empty line's; leading
	// empty lines must not be longer.
	lead, j := 0, p.i
	for ; j < len(p.lines) && len(p.lines[j].text) == 0; j++ {
		lead = max(lead, len(p.lines[j].raw))
	}
	if j == len(p.lines) {
		return false
	}
	ind := p.lines[j].indent
	if ind <= col || lead > ind {
		return false
	}
	var s []byte
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if len(l.text) == 0 {
			if len(l.raw) > ind {
				return false // spaces past the indentation: content
			}
			s = append(s, '\n')
			continue
		}
		if l.indent < ind {
			break
		}
		s = append(append(s, l.raw[ind:]...), '\n')
	}
	s = bytes.TrimRight(s, "\n")
	if !strip && len(s) > 0 {
		s = append(s, '\n')
	}
	writeString(p.b, string(s))
	return true
}

// flow reads a one-line flow collection starting at t[i] ('{' or '[')
// and returns the index after it.
func (p *fastParser) flow(t []byte, i int) (int, bool) {
	if p.depth > fastMaxDepth {
		return 0, false
	}
	open, close := t[i], byte('}')
	if open == '[' {
		close = ']'
	}
	p.b.WriteByte(open)
	i = skipSpaces(t, i+1)
	if i < len(t) && t[i] == close {
		p.b.WriteByte(close)
		return i + 1, true
	}
	for first := true; ; first = false {
		if !first {
			p.b.WriteByte(',')
		}
		var ok bool
		if open == '{' {
			// A key, ": ", a value.
			if i >= len(t) {
				return 0, false
			}
			var k string
			switch t[i] {
			case '"', '\'':
				var n int
				k, n, ok = quoted(t[i:])
				i += n
			default:
				var v []byte
				v, i, ok = flowPlain(t, i)
				k = string(v)
				if ok && k != "<<" {
					k, ok = plainKey(k)
				}
			}
			if !ok || k == "<<" || i+1 >= len(t) || t[i] != ':' || t[i+1] != ' ' {
				return 0, false
			}
			writeString(p.b, k)
			p.b.WriteByte(':')
			i = skipSpaces(t, i+1)
		}
		if i, ok = p.flowValue(t, i); !ok {
			return 0, false
		}
		i = skipSpaces(t, i)
		if i >= len(t) {
			return 0, false
		}
		switch t[i] {
		case ',':
			i = skipSpaces(t, i+1)
			if i < len(t) && (t[i] == close || t[i] == ',') {
				return 0, false
			}
			continue
		case close:
			p.b.WriteByte(close)
			return i + 1, true
		}
		return 0, false
	}
}

// flowValue reads a value inside a flow collection at t[i].
func (p *fastParser) flowValue(t []byte, i int) (int, bool) {
	if i >= len(t) {
		return 0, false
	}
	switch t[i] {
	case '{', '[':
		p.depth++
		defer func() { p.depth-- }()
		return p.flow(t, i)
	case '"', '\'':
		s, n, ok := quoted(t[i:])
		if !ok {
			return 0, false
		}
		writeString(p.b, s)
		return i + n, true
	}
	v, j, ok := flowPlain(t, i)
	if !ok {
		return 0, false
	}
	// "[a: b]" is a mapping inside a sequence: yaml.v3.
	if k := skipSpaces(t, j); k < len(t) && t[k] == ':' {
		return 0, false
	}
	return j, writePlain(p.b, string(v))
}

// flowPlain reads a plain scalar inside a flow collection: it ends before
// ", ", "]", "}" or ": "; trailing spaces are not part of it.
func flowPlain(t []byte, i int) ([]byte, int, bool) {
	if i >= len(t) || !plainStart(t[i:]) {
		return nil, 0, false
	}
	j := i
	for ; j < len(t); j++ {
		c := t[j]
		switch c {
		case ',', ']', '}':
		case '[', '{', '?':
			return nil, 0, false
		case ':':
			if j+1 == len(t) {
				return nil, 0, false
			}
			switch t[j+1] {
			case ' ':
			case ',', '[', ']', '{', '}':
				return nil, 0, false
			default:
				continue
			}
		case '#':
			if t[j-1] == ' ' {
				return nil, 0, false // a comment: the line ends unclosed
			}
			continue
		default:
			continue
		}
		break
	}
	v := bytes.TrimRight(t[i:j], " ")
	if len(v) == 0 {
		return nil, 0, false
	}
	return v, i + len(v), true
}

func skipSpaces(t []byte, i int) int {
	for i < len(t) && t[i] == ' ' {
		i++
	}
	return i
}

// quoted reads a one-line quoted scalar at the start of t and returns its
// value and length.
func quoted(t []byte) (string, int, bool) {
	if t[0] == '\'' {
		var s []byte
		esc, start := false, 1
		for i := 1; i < len(t); i++ {
			if t[i] != '\'' {
				continue
			}
			if i+1 < len(t) && t[i+1] == '\'' {
				// '' is one quote.
				s = append(s, t[start:i+1]...)
				i++
				start, esc = i+1, true
				continue
			}
			if esc {
				return string(append(s, t[start:i]...)), i + 1, true
			}
			return string(t[1:i]), i + 1, true
		}
		return "", 0, false
	}
	for i := 1; i < len(t); i++ {
		switch t[i] {
		case '"':
			return string(t[1:i]), i + 1, true
		case '\\':
			return quotedDouble(t)
		}
	}
	return "", 0, false
}

// quotedDouble reads a double-quoted scalar with escapes; the escapes
// JSON knows and \uXXXX outside the surrogates are read, any other makes
// the caller give up.
func quotedDouble(t []byte) (string, int, bool) {
	var s []byte
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch c {
		case '"':
			return string(s), i + 1, true
		case '\\':
			if i+1 >= len(t) {
				return "", 0, false
			}
			i++
			switch t[i] {
			case '\\', '"':
				s = append(s, t[i])
			case 'n':
				s = append(s, '\n')
			case 't':
				s = append(s, '\t')
			case 'r':
				s = append(s, '\r')
			case 'b':
				s = append(s, '\b')
			case 'f':
				s = append(s, '\f')
			case 'u':
				if i+4 >= len(t) {
					return "", 0, false
				}
				r, err := strconv.ParseUint(string(t[i+1:i+5]), 16, 32)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return "", 0, false
				}
				s = utf8.AppendRune(s, rune(r))
				i += 4
			default:
				return "", 0, false
			}
		default:
			s = append(s, c)
		}
	}
	return "", 0, false
}

// writePlain writes an untagged plain scalar as JSON; it gives up on a
// value JSON cannot hold, whose error is the yaml.v3 path's to report.
func writePlain(b *bytes.Buffer, v string) bool {
	r, _ := resolve("", v, true)
	return writeValue(b, r, v) == nil
}

// plainKey is the JSON name of a plain mapping key; it gives up on a key
// JSON cannot name.
func plainKey(k string) (string, bool) {
	r, _ := resolve("", k, true)
	s, err := keyString(r, k)
	return s, err == nil
}
