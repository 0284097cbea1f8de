package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// maxExpanded caps the JSON a document may expand to through aliases, so a
// "billion laughs" document fails instead of exhausting memory.
const maxExpanded = 64 << 20

// yamlToJSON converts one YAML document to JSON. The common part of YAML
// goes through fastYAMLToJSON; anything else is parsed by yaml.v3 into a
// node tree and written from the tree, which is about twice as fast as a
// round trip through interface{} values. Scalars resolve as Kubernetes'
// YAML 1.1 reader does where that matters: unquoted yes/no/on/off are
// booleans.
func yamlToJSON(doc []byte) ([]byte, error) {
	j, _, err := yamlToJSONMeta(doc)
	return j, err
}

// yamlToJSONMeta is yamlToJSON that also returns the document's apiVersion
// and kind when the fast path could read them on the way (typeMeta.ok),
// so that they need not be decoded from the JSON again.
func yamlToJSONMeta(doc []byte) ([]byte, typeMeta, error) {
	return new(scratch).yamlToJSONMeta(doc)
}

// scratch is what converting a document needs and the next conversion
// can reuse: the JSON buffer and the fast path's lines. The file loader's
// workers take one from a pool per document.
type scratch struct {
	b     bytes.Buffer
	lines []fastLine
}

// maxScratch is the most a scratch keeps for the next document; a larger
// document's buffers are left to the garbage collector.
const maxScratch = 256 << 10

// yamlToJSONMeta converts doc like the function of that name, into s's
// buffer: the JSON is valid until s is used again.
func (s *scratch) yamlToJSONMeta(doc []byte) ([]byte, typeMeta, error) {
	s.b.Reset()
	s.b.Grow(len(doc) + len(doc)/2)
	top, ok := fastYAMLToJSONLines(doc, &s.b, &s.lines)
	if ok {
		return s.b.Bytes(), top, nil
	}
	s.b.Reset()
	j, err := yamlToJSONSlow(doc, &s.b)
	return j, typeMeta{}, err
}

// reusable reports whether s is small enough to keep for the next document.
func (s *scratch) reusable() bool {
	return s.b.Cap() <= maxScratch && cap(s.lines) <= maxScratch/32
}

// yamlToJSONSlow is yamlToJSON through yaml.v3.
func yamlToJSONSlow(doc []byte, b *bytes.Buffer) ([]byte, error) {
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

var errTooDeep = errors.New("document nests too deeply or expands too far through aliases")

func (w *jsonWriter) node(n *yaml.Node, depth int) error {
	if depth > 1000 || w.b.Len() > maxExpanded {
		return errTooDeep
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
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// mapping writes a mapping's pairs, expanding "<<" merge keys.
func (w *jsonWriter) mapping(n *yaml.Node, depth int, first *bool) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
			for v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				for s.Kind == yaml.AliasNode {
					s = s.Alias
				}
				if s.Kind != yaml.MappingNode {
					return fmt.Errorf("line %d: merge key needs a mapping", k.Line)
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
			return fmt.Errorf("line %d: mapping keys must be scalars", k.Line)
		}
		writeString(w.b, k.Value)
		w.b.WriteByte(':')
		if err := w.node(v, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter) scalar(n *yaml.Node) error {
	writeScalar(w.b, n.ShortTag(), n.Value, n.Style == 0)
	return nil
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
