package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// maxExpanded caps the JSON one document may expand to: a second bound
// behind the alias limits (AliasBudget), which readers of outside input
// apply before converting.
const maxExpanded = 64 << 20

// ToJSON converts one YAML document to JSON. The common part of YAML goes
// through a fast path (yamlfast.go); anything else is parsed by yaml.v3
// into a node tree and written from the tree, which is about twice as
// fast as a round trip through interface{} values. Scalars resolve with
// yaml.v3's rules, and as Kubernetes' YAML 1.1 reader where that matters:
// unquoted yes/no/on/off are booleans. An empty document gives no bytes.
func ToJSON(doc []byte) ([]byte, error) {
	j, _, err := new(Converter).ToJSON(doc)
	return j, err
}

// TypeMeta is a document's apiVersion and kind as JSON decodes them into
// strings. OK is false when the fast path could not tell (the document is
// not a mapping, a value is not a string, a key differs only in case,
// there are "items"): then decode them from the JSON.
type TypeMeta struct {
	APIVersion, Kind string
	OK               bool
}

// Converter converts documents one after the other, reusing its buffers:
// the JSON buffer and the fast path's lines. The JSON a conversion returns
// is valid until the next one. A Converter is not safe for concurrent use.
type Converter struct {
	b     bytes.Buffer
	lines []fastLine
}

// MaxKept is the most a Converter keeps for the next document (Reusable):
// a larger document's buffers are better left to the garbage collector.
const MaxKept = 256 << 10

// ToJSON is the package's ToJSON into c's buffer, also returning the
// document's apiVersion and kind when the fast path read them on the way,
// so they need not be decoded from the JSON again.
func (c *Converter) ToJSON(doc []byte) ([]byte, TypeMeta, error) {
	c.b.Reset()
	c.b.Grow(len(doc) + len(doc)/2)
	top, ok := fastToJSON(doc, &c.b, &c.lines)
	if ok {
		return c.b.Bytes(), top, nil
	}
	c.b.Reset()
	j, err := slowToJSON(doc, &c.b)
	return j, TypeMeta{}, err
}

// Reusable reports whether c is small enough to keep for the next document.
func (c *Converter) Reusable() bool {
	return c.b.Cap() <= MaxKept && cap(c.lines) <= MaxKept/32
}

// slowToJSON is ToJSON through yaml.v3.
func slowToJSON(doc []byte, b *bytes.Buffer) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return nil, err
	}
	if n.Kind == 0 {
		return nil, nil
	}
	w := &jsonWriter{b: b}
	if err := w.node(&n, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type jsonWriter struct {
	b *bytes.Buffer
}

// ErrTooDeep is the error for a document that nests too deeply or
// expands too far through aliases.
var ErrTooDeep = errors.New("document nests too deeply or expands too far through aliases")

func (w *jsonWriter) node(n *yaml.Node, depth int) error {
	if depth > 1000 || w.b.Len() > maxExpanded {
		return ErrTooDeep
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			w.b.WriteString("null")
			return nil
		}
		return w.node(n.Content[0], depth+1)
	case yaml.AliasNode:
		return w.node(n.Alias, depth+1)
	case yaml.SequenceNode:
		w.b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.b.WriteByte(',')
			}
			if err := w.node(c, depth+1); err != nil {
				return err
			}
		}
		w.b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		w.b.WriteByte('{')
		first := true
		if err := w.mapping(n, depth, &first); err != nil {
			return err
		}
		w.b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return w.scalar(n)
	}
	return lineError(n.Line, "unsupported YAML node")
}

// lineError is an error at a line of the document, worded as yaml.v3's.
func lineError(line int, format string, a ...any) error {
	return fmt.Errorf("yaml: line %d: %s", line, fmt.Sprintf(format, a...))
}

// mapping writes a mapping's pairs, expanding "<<" merge keys as go-yaml
// v2 does: a merged mapping's pairs are written where the key is (a later
// pair of the same name wins, JSON decoders keep the last), the mappings
// of a merged sequence last to first, so that the first wins.
func (w *jsonWriter) mapping(n *yaml.Node, depth int, first *bool) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = nil
				for j := len(v.Content) - 1; j >= 0; j-- {
					srcs = append(srcs, v.Content[j])
				}
			}
			for _, s := range srcs {
				if s.Kind == yaml.AliasNode && s.Alias != nil {
					s = s.Alias
				}
				if s.Kind != yaml.MappingNode {
					return lineError(k.Line, "map merge requires map or sequence of maps as the value")
				}
				if err := w.mapping(s, depth+1, first); err != nil {
					return err
				}
			}
			continue
		}
		if !*first {
			w.b.WriteByte(',')
		}
		*first = false
		for k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return lineError(k.Line, "a mapping key must be a scalar")
		}
		r, err := resolveNode(k)
		if err != nil {
			return lineError(k.Line, "%v", err)
		}
		name, err := keyString(r, k.Value)
		if err != nil {
			return lineError(k.Line, "%v", err)
		}
		writeString(w.b, name)
		w.b.WriteByte(':')
		if err := w.node(v, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter) scalar(n *yaml.Node) error {
	r, err := resolveNode(n)
	if err == nil {
		err = writeValue(w.b, r, n.Value)
	}
	if err != nil {
		return lineError(n.Line, "%v", err)
	}
	return nil
}

// resolveNode resolves a scalar node: its explicit tag if it has one, and
// plain or not.
func resolveNode(n *yaml.Node) (scalar, error) {
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	plain := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
	return resolve(tag, n.Value, plain)
}

func writeString(b *bytes.Buffer, s string) {
	simple := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			simple = false
			break
		}
	}
	if simple {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc, _ := json.Marshal(s)
	b.Write(enc)
}
