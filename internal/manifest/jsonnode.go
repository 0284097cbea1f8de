package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// JSONNode builds the YAML node tree of one JSON value (json.Marshal's
// output) as yaml.v3's parser would from the same text, without running
// it (most of render's time otherwise): objects and arrays in flow style,
// strings double-quoted, numbers, booleans and null with the tags YAML
// resolves them to. FuzzJSONNode compares the two.
func JSONNode(b []byte) (*yaml.Node, error) {
	p := jsonParser{b: b}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.skip(); p.i != len(p.b) {
		return nil, fmt.Errorf("offset %d: text after the JSON value", p.i)
	}
	return n, nil
}

type jsonParser struct {
	b []byte
	i int
}

var errJSONDepth = errors.New("JSON nests too deeply")

func (p *jsonParser) skip() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	if depth > 10000 {
		return nil, errJSONDepth
	}
	p.skip()
	if p.i >= len(p.b) {
		return nil, errors.New("unexpected end of JSON")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
		p.i++
		p.skip()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return n, nil
		}
		for {
			p.skip()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.skip()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, fmt.Errorf("offset %d: expected ':'", p.i)
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, k, v)
			p.skip()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				return n, nil
			}
			return nil, fmt.Errorf("offset %d: expected ',' or '}'", p.i)
		}
	case c == '[':
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		p.i++
		p.skip()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return n, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
			p.skip()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == ']' {
				p.i++
				return n, nil
			}
			return nil, fmt.Errorf("offset %d: expected ',' or ']'", p.i)
		}
	case c == '"':
		return p.str()
	default:
		j := p.i
		for j < len(p.b) {
			switch p.b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
			default:
				j++
				continue
			}
			break
		}
		v := string(p.b[p.i:j])
		p.i = j
		switch v {
		case "true", "false":
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v}, nil
		case "null":
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: v}, nil
		}
		if !IsJSONNumber(v) {
			return nil, fmt.Errorf("offset %d: %q is not a JSON value", j-len(v), v)
		}
		tag := "!!float"
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			// Past float64's range: yaml.v3 resolves it to a string.
			tag = "!!str"
		} else if _, err := strconv.ParseInt(v, 0, 64); err == nil {
			tag = "!!int"
		} else if _, err := strconv.ParseUint(v, 0, 64); err == nil {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}, nil
	}
}

// str reads a JSON string as a double-quoted YAML scalar.
func (p *jsonParser) str() (*yaml.Node, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, fmt.Errorf("offset %d: expected a string", p.i)
	}
	esc := false
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c < 0x20:
			return nil, fmt.Errorf("offset %d: a control character in a string", j)
		case c == '\\':
			esc = true
			j++
		case c == '"':
			raw := p.b[p.i : j+1]
			p.i = j + 1
			var s string
			if !esc {
				s = string(raw[1 : len(raw)-1])
			} else if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}, nil
		}
	}
	return nil, errors.New("unexpected end of JSON in a string")
}

// IsJSONNumber reports whether s is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
func IsJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
