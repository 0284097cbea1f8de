package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	parse "github.com/hybridctl/hybridctl/internal/manifest"
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
	n, err := parse.JSONNode(b)
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
			if zero, known := nodeEquals(v, z); known {
				if zero {
					continue
				}
			} else {
				var val any
				if err := v.Decode(&val); err != nil {
					return err
				}
				if reflect.DeepEqual(normalize(val), z) {
					continue
				}
			}
		}
		out = append(out, k, v)
	}
	n.Content = out
	return nil
}

// nodeEquals reports whether n decodes to z, a value decoded from JSON
// (what DeepEqual(normalize(decoded n), z) says), without decoding n;
// known is false for a node it does not judge (then the caller decodes).
func nodeEquals(n *yaml.Node, z any) (equal, known bool) {
	switch n.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode, yaml.SequenceNode:
	default:
		return false, false
	}
	switch z := z.(type) {
	case nil:
		if n.Kind != yaml.ScalarNode {
			return false, true
		}
		return n.Tag == "!!null", true
	case bool:
		if n.Kind != yaml.ScalarNode {
			return false, true
		}
		switch n.Tag {
		case "!!bool":
			if n.Value == "true" || n.Value == "false" {
				return (n.Value == "true") == z, true
			}
		case "!!str", "!!int", "!!float", "!!null":
			return false, true
		}
	case float64:
		if n.Kind != yaml.ScalarNode {
			return false, true
		}
		switch n.Tag {
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil || !parse.IsJSONNumber(n.Value) {
				return false, false
			}
			return f == z, true
		case "!!str", "!!bool", "!!null":
			return false, true
		}
	case string:
		if n.Kind != yaml.ScalarNode {
			return false, true
		}
		switch n.Tag {
		case "!!str":
			return n.Value == z, true
		case "!!int", "!!float", "!!bool", "!!null":
			return false, true
		}
	case []any:
		if n.Kind != yaml.SequenceNode {
			return false, true
		}
		if len(n.Content) != len(z) {
			return false, true
		}
		for i, c := range n.Content {
			if eq, known := nodeEquals(c, z[i]); !known || !eq {
				return false, known
			}
		}
		return true, true
	case map[string]any:
		if n.Kind != yaml.MappingNode {
			return false, true
		}
		if len(n.Content)/2 != len(z) {
			return false, true
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return false, false
			}
			zv, ok := z[k.Value]
			if !ok {
				return false, true
			}
			if eq, known := nodeEquals(v, zv); !known || !eq {
				return false, known
			}
		}
		return true, true
	}
	return false, false
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
