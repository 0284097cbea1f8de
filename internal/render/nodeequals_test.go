package render

import (
	"encoding/json"
	"reflect"
	"testing"

	parse "github.com/hybridctl/hybridctl/internal/manifest"
)

// checkNodeEquals: where nodeEquals judges, it says what decoding the node
// and comparing says (the pruner's slow path).
func checkNodeEquals(t *testing.T, a, b string) {
	t.Helper()
	n, err := parse.JSONNode([]byte(a))
	if err != nil {
		return
	}
	plain(n)
	var z any
	if json.Unmarshal([]byte(b), &z) != nil {
		return
	}
	eq, known := nodeEquals(n, z)
	if !known {
		return
	}
	var val any
	if err := n.Decode(&val); err != nil {
		return
	}
	if want := reflect.DeepEqual(normalize(val), z); eq != want {
		t.Fatalf("nodeEquals(%s, %s) = %v, decoding says %v", a, b, eq, want)
	}
}

func TestNodeEquals(t *testing.T) {
	values := []string{`null`, `true`, `false`, `0`, `0.0`, `-0`, `1`, `1.5`, `1e0`, `""`, `"0"`, `"true"`, `"x"`,
		`[]`, `{}`, `[0]`, `[""]`, `{"a":0}`, `{"a":""}`, `{"a":null}`, `{"a":{}}`, `{"a":0,"b":false}`,
		`{"metadata":{"creationTimestamp":null},"spec":{},"status":{}}`, `{"a":[{"b":1}]}`}
	judged := 0
	for _, a := range values {
		for _, b := range values {
			checkNodeEquals(t, a, b)
			n, _ := parse.JSONNode([]byte(a))
			var z any
			_ = json.Unmarshal([]byte(b), &z)
			if _, known := nodeEquals(n, z); known {
				judged++
			} else {
				t.Logf("not judged: %s, %s", a, b)
			}
		}
	}
	if judged < len(values)*len(values)*9/10 {
		t.Errorf("nodeEquals judged only %d of %d pairs", judged, len(values)*len(values))
	}
}

func FuzzNodeEquals(f *testing.F) {
	f.Add(`{"a":0,"b":[false,""]}`, `{"a":0,"b":[false,""]}`)
	f.Add(`{"a":1}`, `{"a":null}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		checkNodeEquals(t, a, b)
	})
}
