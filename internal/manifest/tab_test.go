package manifest

import (
	"errors"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestTabIndent(t *testing.T) {
	cases := []struct {
		name, doc      string
		line, col      int
		ok             bool
		decoderFails   bool
		otherErrorText string
	}{
		{"key indented by a tab", "a:\n  b: 1\n\tc: 2\n", 3, 1, true, true, ""},
		{"tab after spaces", "a:\n  b:\n  \t c: 2\n", 3, 3, true, true, ""},
		{"tab after an item dash", "a:\n- \tb\n", 2, 3, true, true, ""},
		// A tab inside a value is not indentation: no position.
		{"tab in a value", "a: \"x\ty\"\nb: [\n", 0, 0, false, true, ""},
		{"no tab", "a: [\n", 0, 0, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v any
			err := yaml.Unmarshal([]byte(c.doc), &v)
			if (err != nil) != c.decoderFails {
				t.Fatalf("yaml.v3: %v", err)
			}
			line, col, ok := TabIndent([]byte(c.doc), err)
			if line != c.line || col != c.col || ok != c.ok {
				t.Errorf("TabIndent = %d, %d, %v (decoder: %v); want %d, %d, %v", line, col, ok, err, c.line, c.col, c.ok)
			}
		})
	}
	// Another decoder error on a document with a tab is not about the tab.
	if _, _, ok := TabIndent([]byte("a:\n\tb\n"), errors.New("yaml: line 1: did not find expected key")); ok {
		t.Error("TabIndent blamed a tab for another error")
	}
	// The line the decoder names wins over an earlier tab.
	if line, col, ok := TabIndent([]byte("a: |\n\tfirst\nb:\n  \tc: 1\n"), errors.New("yaml: line 4: found character that cannot start any token")); !ok || line != 4 || col != 3 {
		t.Errorf("TabIndent = %d, %d, %v; want line 4, column 3", line, col, ok)
	}
}
