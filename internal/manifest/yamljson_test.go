package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestYAMLToJSON: values and keys as Kubernetes' reader (sigs.k8s.io/yaml,
// go-yaml v2) makes them, through both paths: YAML 1.1 booleans as values
// and as keys (a key "y" or "n" is "true" or "false"), numbers in every
// base, timestamps as text, merge keys (the first merged mapping wins),
// !!binary decoded, explicit tags checked.
func TestYAMLToJSON(t *testing.T) {
	cases := map[string]string{
		"a: 1\nb: x\nc: [1, 2.5, true, null]\n":            `{"a":1,"b":"x","c":[1,2.5,true,null]}`,
		"hostProcess: yes\nq: 'yes'\nn: no\n":              `{"hostProcess":true,"q":"yes","false":false}`,
		"v: 0x10\nw: 1_000\nt: 2026-11-06\no: 0o17\n":      `{"v":16,"w":1000,"t":"2026-11-06","o":15}`,
		"base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n":          `{"base":{"x":1},"m":{"x":1,"true":2}}`,
		"a: &a {k: 1}\nb: &b {k: 2}\nm: {<<: [*a, *b]}\n":  `{"a":{"k":1},"b":{"k":2},"m":{"k":2,"k":1}}`,
		"s: \"a\\\"b<c>\"\n":                               `{"s":"a\"b\u003cc\u003e"}`,
		"0x10: a\n1.0: b\n.5: c\n'y': d\n1e3: e\n":         `{"16":"a","1":"b","0.5":"c","y":"d","1000":"e"}`,
		"b: !!binary aGVsbG8=\nf: !!float 1\ns: !!str 1\n": `{"b":"hello","f":1,"s":"1"}`,
		"": ``,
	}
	for in, want := range cases {
		got, err := ToJSON([]byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%q:\n got  %s\n want %s", in, got, want)
		}
	}
	// What JSON cannot hold, or a tag the value does not fit, is an
	// error at its line, as it is for Kubernetes.
	for in, want := range map[string]string{
		"a: 1\nf: .inf\n":           "yaml: line 2: not a JSON value: .inf",
		"a: 1\n~: x\n":              "yaml: line 2: not a JSON value: the mapping key \"~\"",
		"18446744073709551615: x\n": "yaml: line 1: not a JSON value: the mapping key",
		"a: !!int 1.5\n":            "yaml: line 1: cannot decode !!float `1.5` as a !!int",
		"a: !!binary '*'\n":         "yaml: line 1: !!binary value contains invalid base64 data",
		"a: 1\nm: {<<: [x]}\n":      "yaml: line 2: map merge requires map or sequence of maps as the value",
	} {
		if _, err := ToJSON([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// A "billion laughs" document fails instead of expanding without end.
func TestYAMLToJSONAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"" + strings.Repeat("x", 64) + "\"]\n")
	for i := 1; i <= 12; i++ {
		prev := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(prev+",", 10), ","))
	}
	_, err := ToJSON([]byte(b.String()))
	if !errors.Is(err, ErrTooDeep) {
		t.Fatalf("err = %v, want ErrTooDeep", err)
	}
}
