package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestYAMLToJSON(t *testing.T) {
	cases := map[string]string{
		"a: 1\nb: x\nc: [1, 2.5, true, null]\n":       `{"a":1,"b":"x","c":[1,2.5,true,null]}`,
		"hostProcess: yes\nq: 'yes'\nn: no\n":         `{"hostProcess":true,"q":"yes","n":false}`,
		"v: 0x10\nw: 1_000\nf: .inf\nt: 2026-11-06\n": `{"v":16,"w":1000,"f":".inf","t":"2026-11-06"}`,
		"base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n":     `{"base":{"x":1},"m":{"x":1,"y":2}}`,
		"s: \"a\\\"b<c>\"\n":                          `{"s":"a\"b\u003cc\u003e"}`,
		"":                                            ``,
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
