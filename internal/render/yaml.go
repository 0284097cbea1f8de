package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Objects are serialized through their JSON form (the json tags of
// k8s.io/api and friends are the contract) into YAML that keeps the
// struct's field order (apiVersion, kind, metadata, spec, ...) and indents
// lists as the guide does.

// toNode converts obj's JSON form to a YAML node tree. With sparse, fields
// whose value is the zero value of their Go type are dropped, at every depth
// and inside lists: the noise typed structs carry because their omitempty
// does not omit structs (cacheTTL: 0s, status: {}, creationTimestamp: null,
// resources: {}). An empty object that a pointer field was set to (emptyDir:
// {}, spec: {}) is kept: setting it means something.
func toNode(obj any, sparse bool) (*yaml.Node, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	n, err := jsonNode(b)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", obj, err)
	}
	plain(n)
	apiVersionFirst(n)
	if sparse {
		p := pruner{zeros: map[reflect.Type]any{}}
		if err := p.prune(n, reflect.TypeOf(obj)); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// plain resets the JSON styles (double quotes, flow braces) so that the
// encoder picks block style and quotes only where YAML needs it; an empty
// object stays {} and an empty list [].
func plain(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && looksNumeric(n.Value) {
		// 10.0.26100 is a string to Go's YAML but a float to YAML 1.1
		// resolvers elsewhere: quote it, as the guide does.
		n.Style = yaml.DoubleQuotedStyle
	}
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		plain(c)
	}
}

// apiVersionFirst moves a top-level apiVersion before kind (metav1.TypeMeta
// declares kind first; every manifest reads apiVersion first).
func apiVersionFirst(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 2; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "apiVersion" {
			k, v := n.Content[i], n.Content[i+1]
			copy(n.Content[2:i+2], n.Content[0:i])
			n.Content[0], n.Content[1] = k, v
			return
		}
	}
}

// pruner removes zero-valued fields from a node tree, guided by the Go
// type the tree was serialized from.
type pruner struct {
	zeros map[reflect.Type]any // JSON form of each type's zero value
}

func (p *pruner) zero(t reflect.Type) (any, error) {
	if z, ok := p.zeros[t]; ok {
		return z, nil
	}
	b, err := json.Marshal(reflect.Zero(t).Interface())
	if err != nil {
		return nil, err
	}
	var z any
	if err := json.Unmarshal(b, &z); err != nil {
		return nil, err
	}
	p.zeros[t] = z
	return z, nil
}

func (p *pruner) prune(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, c := range n.Content {
			if err := p.prune(c, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	case n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct:
		return nil
	}
	out := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := jsonField(t, k.Value)
		if !ok {
			out = append(out, k, v)
			continue
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // a nil pointer, slice or map without omitempty
		}
		if err := p.prune(v, ft); err != nil {
			return err
		}
		if ft.Kind() != reflect.Pointer {
			if v.Kind == yaml.MappingNode && len(v.Content) == 0 && ft.Kind() == reflect.Struct {
				continue // a struct that had nothing set
			}
			z, err := p.zero(ft)
			if err != nil {
				return err
			}
			var val any
			if err := v.Decode(&val); err != nil {
				return err
			}
			if reflect.DeepEqual(normalize(val), z) {
				continue
			}
		}
		out = append(out, k, v)
	}
	n.Content = out
	return nil
}

// jsonField returns the type of t's field serialized under name, looking
// through embedded (inline) structs.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		tagName, _, _ := strings.Cut(tag, ",")
		if tagName == "" && f.Anonymous {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := jsonField(et, name); ok {
					return ft, true
				}
			}
			continue
		}
		if tagName == "" {
			tagName = f.Name
		}
		if tagName == name {
			return f.Type, true
		}
	}
	return nil, false
}

// normalize makes YAML-decoded and JSON-decoded values comparable (YAML
// gives int, JSON float64).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// looksNumeric: digits with at most two dots (6443, 1.5, 10.0.26100).
// IPv4 addresses (three dots) stay bare, as everyone writes them.
func looksNumeric(s string) bool {
	if s == "" {
		return false
	}
	dots := 0
	for _, r := range s {
		switch {
		case r == '.':
			dots++
		case r < '0' || r > '9':
			return false
		}
	}
	return dots <= 2
}

// verbatim wraps an object of hybridctl's own types (kubeadm, Calico) whose
// omitempty tags already say what to write; yamlDocs serializes it as is.
type verbatim struct{ v any }

// yamlDocs serializes objects as one multi-document YAML file with a leading
// comment.
func yamlDocs(header string, objs ...any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	for i, o := range objs {
		var n *yaml.Node
		var err error
		if r, ok := o.(verbatim); ok {
			n, err = toNode(r.v, false)
		} else {
			n, err = toNode(o, true)
		}
		if err != nil {
			return nil, fmt.Errorf("serialize %T: %w", o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return nil, fmt.Errorf("serialize %T: %w", o, err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("serialize %T: %w", o, err)
		}
	}
	return buf.Bytes(), nil
}

// comment renders lines as a YAML/shell comment block; a line break inside
// a value (a node name, say) cannot end the comment.
func comment(lines ...string) string {
	var b bytes.Buffer
	for _, l := range lines {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + oneLine(l) + "\n")
	}
	return b.String()
}
