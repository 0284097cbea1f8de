package snapshot

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// TypeError is a field of an object that has the wrong type, in words:
// "containers[0] (cns-container): command must be a list of strings, not a
// string". Kept says whether the object was stored with what could be read
// (its checks then run on the rest of it) or dropped.
type TypeError struct {
	// Path is the field's full path, list indexes included
	// (spec.template.spec.containers[0].command).
	Path string
	// Where names the field for a reader: inside a container, the
	// container by index and name and the field under it; else Path.
	Where string
	// Want and Got are the type the field must have and the one it has, in
	// words ("a list of strings", "a string").
	Want, Got string
	// Kept is true when the object was stored without the field.
	Kept bool

	inContainer bool // in a container, and not a field the checks read
}

func (e *TypeError) Error() string {
	msg := e.Where + " must be " + e.Want + ", not " + e.Got
	if e.Want == "of another type" {
		msg = e.Where + " cannot be " + e.Got
	}
	if e.Kept {
		return msg + "; the object's other fields were checked"
	}
	return msg + "; the object was not checked"
}

// Fix says how to write the field.
func (e *TypeError) Fix() string {
	field := e.Path
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		field = strings.TrimPrefix(field[i+1:], ".")
	}
	if strings.HasPrefix(e.Want, "a list") {
		return "write " + field + " as a YAML list: one \"- item\" line per element, or [a, b]"
	}
	return "write " + field + " as " + e.Want
}

// containerLists are the fields of a pod spec that hold containers.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// containerFieldsRead are the fields of a container the checks read: an
// object with one of them unreadable is not checked at all.
var containerFieldsRead = []string{"image", "name", "securityContext"}

// fieldError makes a JSON decoding error name the field it failed on, in
// words (a *TypeError), finding the field's place in data (list indexes,
// a container's name) from the error's offset. Other errors are returned
// as they are.
func fieldError(data []byte, err error) error {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok || te.Field == "" {
		return err
	}
	tokens := pointerAt(data, te.Offset)
	if tokens == nil {
		// Not found in data (not expected): the path encoding/json names.
		tokens = strings.Split(strings.TrimPrefix(te.Field, "Object."), ".")
	}
	e := &TypeError{Path: pathString(tokens), Want: typeWords(te.Type), Got: valueWords(te.Value)}
	e.Where = e.Path
	for i := len(tokens) - 2; i >= 0; i-- {
		if !slices.Contains(containerLists, tokens[i]) || !isIndex(tokens[i+1]) {
			continue
		}
		e.Where = tokens[i] + "[" + tokens[i+1] + "]"
		if name := containerName(data, tokens[:i+2]); name != "" {
			e.Where += " (" + name + ")"
		}
		if rest := tokens[i+2:]; len(rest) > 0 {
			e.Where += ": " + pathString(rest)
			e.inContainer = !slices.Contains(containerFieldsRead, rest[0])
		}
		break
	}
	return e
}

// pointerAt returns the tokens of the JSON pointer to the value that
// ends at or after offset off in data, or nil.
func pointerAt(data []byte, off int64) []string {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.ReadToken(); err != nil {
			return nil
		}
		if dec.InputOffset() >= off {
			var out []string
			for t := range dec.StackPointer().Tokens() {
				out = append(out, t)
			}
			return out
		}
	}
}

// pathString writes pointer tokens as a field path: a.b[0].c.
func pathString(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		switch {
		case isIndex(t):
			b.WriteString("[" + t + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(t)
		}
	}
	return b.String()
}

func isIndex(t string) bool {
	_, err := strconv.ParseUint(t, 10, 31)
	return err == nil && (t == "0" || t[0] != '0')
}

// containerName reads the name of the container at the pointer's tokens.
func containerName(data []byte, tokens []string) string {
	ptr := jsontext.Pointer("")
	for _, t := range tokens {
		ptr = ptr.AppendToken(t)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if tok.Kind() == '{' && dec.StackPointer() == ptr {
			break
		}
	}
	for {
		key, err := dec.ReadToken()
		if err != nil || key.Kind() != '"' {
			return ""
		}
		if key.String() != "name" {
			if dec.SkipValue() != nil {
				return ""
			}
			continue
		}
		v, err := dec.ReadToken()
		if err != nil || v.Kind() != '"' {
			return ""
		}
		return v.String()
	}
}

// typeWords names a Go type as the YAML a user writes.
func typeWords(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(t.Elem())
	case reflect.Map:
		return "a mapping of " + plural(t.Elem())
	case reflect.Struct:
		return "a mapping"
	}
	return "a value of type " + t.String()
}

func plural(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "strings"
	case reflect.Bool:
		return "booleans"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole numbers"
	case reflect.Float32, reflect.Float64:
		return "numbers"
	case reflect.Slice, reflect.Array:
		return "lists"
	case reflect.Map, reflect.Struct:
		return "mappings"
	}
	return "values"
}

// valueWords names the kind of JSON value encoding/json found.
func valueWords(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "a mapping"
	case strings.HasPrefix(v, "number"):
		if n := strings.TrimSpace(strings.TrimPrefix(v, "number")); n != "" {
			return "the number " + n
		}
		return "a number"
	}
	return v
}

// keepPartial reports whether a pod or pod template that decoded with err
// is stored with what could be read: when err is a *TypeError in a
// container field the checks do not read (it is then marked Kept).
func keepPartial(err error) bool {
	te, ok := err.(*TypeError)
	if ok && te.inContainer {
		te.Kept = true
	}
	return ok && te.inContainer
}
