package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Objects are serialized through their JSON form (the json tags of
// k8s.io/api and friends are the contract) into YAML that keeps the
// struct's field order (apiVersion, kind, metadata, spec, ...) and indents
// lists as the guide does.

// toNode converts obj's JSON form to a YAML node tree. With sparse, fields
// equal to those of obj's type's zero value are dropped: the noise typed
// configuration structs carry (cacheTTL: 0s, status: {}, creationTimestamp:
// null). A field set to its type's zero value is dropped too; pointer fields
// (false, 0) are kept because their zero value is nil.
func toNode(obj any, sparse bool) (*yaml.Node, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("%T: not one JSON value", obj)
	}
	n := doc.Content[0]
	plain(n)
	apiVersionFirst(n)
	if sparse {
		zb, err := json.Marshal(reflect.New(reflect.TypeOf(obj)).Elem().Interface())
		if err != nil {
			return nil, err
		}
		var zero map[string]any
		if err := json.Unmarshal(zb, &zero); err != nil {
			return nil, err
		}
		if err := prune(n, zero); err != nil {
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

// prune deletes from the mapping n the keys whose values equal those in
// zero, recursing into mappings and dropping mappings it emptied.
func prune(n *yaml.Node, zero map[string]any) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	out := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		zv, ok := zero[k.Value]
		if !ok {
			out = append(out, k, v)
			continue
		}
		if zm, isMap := zv.(map[string]any); isMap && v.Kind == yaml.MappingNode {
			wasEmpty := len(v.Content) == 0
			if err := prune(v, zm); err != nil {
				return err
			}
			if len(v.Content) == 0 && (!wasEmpty || len(zm) == 0) {
				continue
			}
			if len(v.Content) == 0 {
				v.Style = yaml.FlowStyle
			}
			out = append(out, k, v)
			continue
		}
		var val any
		if err := v.Decode(&val); err != nil {
			return err
		}
		if reflect.DeepEqual(normalize(val), normalize(zv)) {
			continue
		}
		out = append(out, k, v)
	}
	n.Content = out
	return nil
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
