package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// sameNode compares two node trees in what the encoder and the pruner
// read (kind, tag, value, style, children), not in positions.
func sameNode(a, b *yaml.Node, path string) error {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || len(a.Content) != len(b.Content) {
		return fmt.Errorf("%s: JSONNode {kind %v tag %s value %q style %v, %d children}, yaml.v3 {kind %v tag %s value %q style %v, %d children}",
			path, a.Kind, a.Tag, a.Value, a.Style, len(a.Content), b.Kind, b.Tag, b.Value, b.Style, len(b.Content))
	}
	for i := range a.Content {
		if err := sameNode(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func checkJSONNode(t *testing.T, b []byte) {
	t.Helper()
	var doc yaml.Node
	yerr := yaml.Unmarshal(b, &doc)
	n, err := JSONNode(b)
	if !json.Valid(b) {
		if err == nil {
			t.Fatalf("JSONNode accepted invalid JSON %q", b)
		}
		return
	}
	if err != nil {
		t.Fatalf("JSONNode(%q): %v", b, err)
	}
	if yerr != nil || len(doc.Content) != 1 {
		return // JSON that is not YAML (yaml.v3 limits): nothing to compare
	}
	if err := sameNode(n, doc.Content[0], ""); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
}

func TestJSONNode(t *testing.T) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{}},"spec":{"n":[1,-2,0,1.5,-0,1e3,2E-2,18446744073709551615,123456789012345678901234567890,true,false,null,"",[],{}]}}`,
		`{"s":"a\"b\\c\u003c\n\u00e9 ☃","t":"10.0.26100","u":"true","v":"0x10","w":"~","x":"2026-11-06"}`,
		` [ 1 , "a" , { "k" : null } ] `,
		`"just a string"`, `42`, `null`,
	} {
		checkJSONNode(t, []byte(s))
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":}`, `[1,]`, `01`, `1.`, `tru`, `"x`, `{"a":1}x`, `+1`} {
		if _, err := JSONNode([]byte(bad)); err == nil {
			t.Errorf("JSONNode(%q) accepted it", bad)
		}
	}
	// An object as render gets it, through json.Marshal.
	b, err := json.Marshal(map[string]any{"a": []any{1, 2.5, "x", nil, map[string]any{}}, "b": strings.Repeat("y", 100)})
	if err != nil {
		t.Fatal(err)
	}
	checkJSONNode(t, b)
}

// FuzzJSONNode: on any valid JSON, JSONNode builds yaml.v3's tree.
func FuzzJSONNode(f *testing.F) {
	f.Add(`{"a":[1,2.5,-0,1e3,"x",true,null,{}],"b":"\u00e9\n"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		checkJSONNode(t, []byte(s))
	})
}
