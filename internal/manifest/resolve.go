package manifest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Scalars resolve as Kubernetes' own YAML reader resolves them:
// sigs.k8s.io/yaml, which decodes with go-yaml v2 (YAML 1.1: yes/no/on/off
// and y/n are booleans, timestamps stay text) into Go values and writes
// those as JSON. Both paths of ToJSON use what follows, so that the JSON
// they write decodes to what sigs.k8s.io/yaml's does; FuzzToJSONOracle
// checks that against sigs.k8s.io/yaml itself.

type scalarKind uint8

const (
	kindStr scalarKind = iota
	kindNull
	kindBool
	kindInt
	kindUint
	kindFloat
)

// scalar is a resolved scalar: s for a string (the text, or what a
// !!binary value decodes to), b, i, u or f for the others.
type scalar struct {
	kind scalarKind
	s    string
	b    bool
	i    int64
	u    uint64
	f    float64
}

// resolve resolves a scalar's text. tag is its explicit tag in short form
// ("!!int", "!foo"), "" when it has none; an untagged scalar that is not
// plain (quoted, literal, folded) is a string.
func resolve(tag, text string, plain bool) (scalar, error) {
	if tag == "" && !plain {
		return scalar{s: text}, nil
	}
	switch tag {
	case "", "!!str", "!!bool", "!!int", "!!float", "!!null", "!!timestamp":
	case "!!binary":
		data, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return scalar{}, fmt.Errorf("!!binary value contains invalid base64 data")
		}
		return scalar{s: string(data)}, nil
	default:
		return scalar{s: text}, nil // a tag go-yaml does not resolve
	}
	v, rtag := resolveUntagged(tag, text)
	switch {
	case tag == "", tag == rtag, tag == "!!str":
		if tag == "!!str" {
			return scalar{s: text}, nil
		}
		return v, nil
	case tag == "!!float" && rtag == "!!int":
		if v.kind == kindUint {
			return scalar{kind: kindFloat, f: float64(v.u)}, nil
		}
		return scalar{kind: kindFloat, f: float64(v.i)}, nil
	}
	return scalar{}, fmt.Errorf("cannot decode %s `%s` as a %s", rtag, text, tag)
}

// resolveUntagged is go-yaml v2's resolve of text, with the tag it found.
func resolveUntagged(tag, text string) (scalar, string) {
	var c byte
	if text != "" {
		c = text[0]
	}
	switch {
	case text == "" || c == '~' || c == '.' || c == '+' || c == '-' || (c >= '0' && c <= '9'),
		strings.IndexByte("yYnNtTfFoO", c) >= 0:
	default:
		return scalar{s: text}, "!!str"
	}
	// The words below are at most five bytes long.
	switch {
	case len(text) > 5:
	case text == "<<":
		return scalar{s: text}, "!!merge"
	default:
		if v, rtag, ok := resolveWord(text); ok {
			return v, rtag
		}
	}
	return resolveNumber(tag, text, c)
}

// resolveWord resolves go-yaml v2's words: booleans, nulls, infinities.
func resolveWord(text string) (scalar, string, bool) {
	switch text {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return scalar{kind: kindBool, b: true}, "!!bool", true
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return scalar{kind: kindBool}, "!!bool", true
	case "", "~", "null", "Null", "NULL":
		return scalar{kind: kindNull}, "!!null", true
	case ".nan", ".NaN", ".NAN":
		return scalar{kind: kindFloat, f: math.NaN()}, "!!float", true
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return scalar{kind: kindFloat, f: math.Inf(1)}, "!!float", true
	case "-.inf", "-.Inf", "-.INF":
		return scalar{kind: kindFloat, f: math.Inf(-1)}, "!!float", true
	}
	return scalar{}, "", false
}

// resolveNumber resolves what starts like a number (c is its first byte).
func resolveNumber(tag, text string, c byte) (scalar, string) {
	switch {
	case c == '.':
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return scalar{kind: kindFloat, f: f}, "!!float"
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if (tag == "" || tag == "!!timestamp") && isTimestamp(text) {
			return scalar{s: text}, "!!timestamp"
		}
		if !numeric(text) {
			// None of the parses below can succeed (and each failure
			// allocates its error): "100m", "10.0.26100.1", "app-0".
			break
		}
		plain := strings.ReplaceAll(text, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return scalar{kind: kindInt, i: i}, "!!int"
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return scalar{kind: kindUint, u: u}, "!!int"
		}
		if yamlStyleFloat(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return scalar{kind: kindFloat, f: f}, "!!float"
			}
		}
		if digits, ok := strings.CutPrefix(plain, "0b"); ok {
			if i, err := strconv.ParseInt(digits, 2, 64); err == nil {
				return scalar{kind: kindInt, i: i}, "!!int"
			}
			if u, err := strconv.ParseUint(digits, 2, 64); err == nil {
				return scalar{kind: kindUint, u: u}, "!!int"
			}
		} else if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
			if i, err := strconv.ParseInt("-"+digits, 2, 64); err == nil {
				return scalar{kind: kindInt, i: i}, "!!int"
			}
		}
	}
	return scalar{s: text}, "!!str"
}

// numeric reports whether every byte of s can occur in a number the
// parses of resolveUntagged accept: digits (hexadecimal too), signs, '.',
// '_', and the base prefixes' x, o and b.
func numeric(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		case c == 'x', c == 'X', c == 'o', c == 'O', c == '+', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return true
}

// yamlStyleFloat matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
// (go-yaml's float pattern) without a regular expression.
func yamlStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
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

// The timestamp formats go-yaml tries on a scalar.
var timestampFormats = [...]string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}

// errNotJSON is a value JSON cannot hold.
var errNotJSON = fmt.Errorf("not a JSON value")

// writeValue writes a resolved scalar as JSON; NaN and the infinities,
// which JSON cannot hold, are an error.
func writeValue(b *bytes.Buffer, v scalar, text string) error {
	switch v.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		b.WriteString(strconv.FormatBool(v.b))
	case kindInt:
		b.WriteString(strconv.FormatInt(v.i, 10))
	case kindUint:
		b.WriteString(strconv.FormatUint(v.u, 10))
	case kindFloat:
		if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
			return fmt.Errorf("%w: %s (JSON has no infinity or NaN)", errNotJSON, text)
		}
		b.WriteString(strconv.FormatFloat(v.f, 'g', -1, 64))
	default:
		writeString(b, v.s)
	}
	return nil
}

// keyString is the JSON name a mapping key gets: a string as it is, a
// number or a boolean as sigs.k8s.io/yaml writes it (floats at 32-bit
// precision); a null key, or an integer past int64, is an error.
func keyString(v scalar, text string) (string, error) {
	switch v.kind {
	case kindStr:
		return v.s, nil
	case kindBool:
		return strconv.FormatBool(v.b), nil
	case kindInt:
		return strconv.FormatInt(v.i, 10), nil
	case kindFloat:
		switch s := strconv.FormatFloat(v.f, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: the mapping key %q", errNotJSON, text)
}
