// Package termtext makes text from outside safe to show on a terminal.
//
// Object names, images, messages, node output and kubeconfig fields are
// chosen by whoever wrote them: a chart author, a node, a colleague's
// kubeconfig. Written raw, an escape sequence among them moves the cursor
// and erases the error lines above it (ESC[1A ESC[2K), retitles the window
// (OSC 0), writes the clipboard (OSC 52), rings the bell, or returns to the
// start of the line to overwrite it (CR). Every string from outside that
// hybridctl writes for people goes through Line, Text or Name; JSON and XML
// documents go through JSON and XML after their encoders.
//
// What is escaped: the C0 controls (U+0000-U+001F) and DEL, the C1
// controls (U+0080-U+009F; U+009B is CSI to a terminal that reads them),
// bytes that are not UTF-8 (a lone 0x9B is CSI to an 8-bit terminal), the
// Unicode bidirectional overrides and isolates (U+202A-U+202E,
// U+2066-U+2069, and the marks U+200E, U+200F, U+061C) that make a line read
// otherwise than it is, and the line and paragraph separators U+2028 and
// U+2029. Each becomes its Go escape (\x1b, \r, \u009b, \u202e, \xff), so
// what was sent stays readable.
package termtext

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// unsafe reports whether r must not reach a terminal as it is.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// IsSafe reports whether s reaches a terminal unchanged by Line.
func IsSafe(s string) bool { return safe(s, false) }

func safe(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if keepLines && (c == '\n' || c == '\t') {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafe(r) {
			return false
		}
		i += size
	}
	return true
}

// Line returns s with every unsafe rune, newlines and tabs included,
// escaped: for table cells, names and one-line messages, where a newline
// would start a line that looks like hybridctl's own.
func Line(s string) string {
	if safe(s, false) {
		return s
	}
	return escape(s, false)
}

// Text is Line for text of several lines (node output, an error message
// that joins several): newlines and tabs stay, a CRLF line end becomes a
// newline; other carriage returns and every other unsafe rune are escaped.
func Text(s string) string {
	if safe(s, true) {
		return s
	}
	return escape(strings.ReplaceAll(s, "\r\n", "\n"), true)
}

func escape(s string, keepLines bool) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&15])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case unsafe(r):
			// Go's own escapes: \a \b \f \n \r \t \v, \x1b, \u009b.
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Name returns s as it is when it is printable ASCII without spaces (an
// object name, a DNS name, an address), and Go-quoted otherwise, so that a
// name with anything else in it is seen as a name that was tampered with.
func Name(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// Names is Name of each of list.
func Names(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Name(s)
	}
	return out
}

// JSON returns a JSON document as encoding/json wrote it, with the unsafe
// runes it leaves raw (DEL, the C1 controls, the bidirectional controls)
// written as \u escapes: the same document to a JSON reader, nothing a
// terminal acts on when a person looks at it. Such runes can only be inside
// strings (JSON's own syntax is ASCII); the newlines and spaces of the
// indentation stay.
func JSON(doc []byte) []byte {
	return rewrite(doc, func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
	})
}

// XML returns an XML document as encoding/xml wrote it (which replaces
// what XML cannot hold with U+FFFD), with the unsafe runes XML allows (the
// C1 and bidirectional controls) written as character references.
func XML(doc []byte) []byte {
	return rewrite(doc, func(b []byte, r rune) []byte {
		b = append(b, "&#x"...)
		b = strconv.AppendInt(b, int64(r), 16)
		return append(b, ';')
	})
}

// rewrite replaces each unsafe rune of doc other than the newline, tab
// and carriage return of a document's layout by esc's spelling of it.
func rewrite(doc []byte, esc func([]byte, rune) []byte) []byte {
	clean := true
	for i := 0; i < len(doc); {
		r, size := utf8.DecodeRune(doc[i:])
		if r != '\n' && r != '\t' && r != '\r' && unsafe(r) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return doc
	}
	out := make([]byte, 0, len(doc)+32)
	for i := 0; i < len(doc); {
		r, size := utf8.DecodeRune(doc[i:])
		if r != '\n' && r != '\t' && r != '\r' && unsafe(r) && !(r == utf8.RuneError && size == 1) {
			out = esc(out, r)
		} else {
			out = append(out, doc[i:i+size]...)
		}
		i += size
	}
	return out
}

// EncodeJSON writes v to w as indented JSON (two spaces, a newline at the
// end), escaped by JSON: the one way hybridctl writes JSON output.
func EncodeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(JSON(buf.Bytes()))
	return err
}

// EncodeXML writes the XML header, v indented by two spaces and a
// newline to w, escaped by XML.
func EncodeXML(w io.Writer, v any) error {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(XML(buf.Bytes()))
	return err
}

// JSONLines returns a writer that passes each Write through JSON: for an
// encoder that writes one whole JSON document per Write (a json.Encoder
// without indentation, slog's JSON handler), whose documents then reach w
// escaped.
func JSONLines(w io.Writer) io.Writer { return jsonLines{w} }

type jsonLines struct{ w io.Writer }

func (j jsonLines) Write(p []byte) (int, error) {
	if _, err := j.w.Write(JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
