package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/manifest/manifesttest"
)

// The oracle: sigs.k8s.io/yaml's YAMLToJSON, the reader kubectl and the
// API machinery use. ToJSON (either path) must accept what it accepts,
// refuse what it refuses, and write JSON that decodes to the same value.
// Error texts may differ. Left out, each for a reason:
//   - a mapping with two keys of different kinds that name the same JSON
//     key (1 and "1"): sigs.k8s.io/yaml then keeps one at random;
//   - documents that nest past 1,000 levels or expand through aliases past
//     ToJSON's bound (ErrTooDeep): the limits differ on purpose;
//   - text yaml.v3's parser refuses and go-yaml v2's reads (v2 is laxer
//     about some malformed input, such as text after a quoted scalar):
//     ToJSON reports it as an error, never as a value;
//   - the non-specific tag "!" (as in "a: ! 1"): go-yaml v2 reads its value
//     as a string, but yaml.v3's node tree does not keep the tag, so the
//     yaml.v3 path resolves the value as if untagged. Manifests do not use
//     it; nonSpecificTag finds it.

// checkOracle compares ToJSON with the oracle on doc; it reports whether
// the two were compared.
func checkOracle(t *testing.T, doc []byte) bool {
	t.Helper()
	ours, err := ToJSON(doc)
	if errors.Is(err, ErrTooDeep) || keysCollide(doc) || nonSpecificTag(doc) {
		return false
	}
	theirs, terr := sigsyaml.YAMLToJSON(doc)
	if terr != nil && strings.Contains(terr.Error(), "excessive aliasing") {
		return false
	}
	switch {
	case err != nil && terr != nil:
		return true
	case err != nil:
		var n yaml.Node
		if yaml.Unmarshal(doc, &n) != nil {
			return false // yaml.v3's parser is stricter
		}
		t.Fatalf("ToJSON refuses what sigs.k8s.io/yaml reads (%s): %v\n%q", theirs, err, doc)
	case terr != nil:
		t.Fatalf("ToJSON reads what sigs.k8s.io/yaml refuses (%v): %s\n%q", terr, ours, doc)
	}
	if len(ours) == 0 {
		ours = []byte("null")
	}
	a, aerr := decodeNumbers(ours)
	b, berr := decodeNumbers(theirs)
	if aerr != nil || berr != nil {
		t.Fatalf("invalid JSON: ours %v (%s), sigs.k8s.io/yaml %v (%s)\n%q", aerr, ours, berr, theirs, doc)
	}
	if !sameJSON(a, b) {
		t.Fatalf("ToJSON and sigs.k8s.io/yaml differ on\n%q\nToJSON: %s\nsigs:   %s", doc, ours, theirs)
	}
	return true
}

func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// sameJSON compares decoded JSON values, numbers by value.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], bs[i]) {
				return false
			}
		}
		return true
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, _, err1 := big.ParseFloat(string(a), 10, 200, big.ToNearestEven)
		y, _, err2 := big.ParseFloat(string(bn), 10, 200, big.ToNearestEven)
		return err1 == nil && err2 == nil && x.Cmp(y) == 0
	}
	return a == b
}

// nonSpecificTag reports whether doc may hold the tag "!" alone: a '!'
// followed by white space or the end.
func nonSpecificTag(doc []byte) bool {
	for i, c := range doc {
		if c == '!' && (i+1 == len(doc) || doc[i+1] == ' ' || doc[i+1] == '\t' || doc[i+1] == '\n' || doc[i+1] == '\r') {
			return true
		}
	}
	return false
}

// keysCollide reports whether a mapping of doc (merged mappings included)
// has two keys of different kinds with the same JSON name.
func keysCollide(doc []byte) bool {
	var n yaml.Node
	if yaml.Unmarshal(doc, &n) != nil {
		return false
	}
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, depth int) bool
	var keys func(m *yaml.Node, names map[string]scalarKind, depth int) bool
	keys = func(m *yaml.Node, names map[string]scalarKind, depth int) bool {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
				srcs := []*yaml.Node{v}
				if v.Kind == yaml.SequenceNode {
					srcs = v.Content
				}
				for _, s := range srcs {
					if s.Kind == yaml.AliasNode && s.Alias != nil {
						s = s.Alias
					}
					if s.Kind == yaml.MappingNode && depth < 50 && keys(s, names, depth+1) {
						return true
					}
				}
				continue
			}
			for k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				continue
			}
			r, err := resolveNode(k)
			if err != nil {
				continue
			}
			name, err := keyString(r, k.Value)
			if err != nil {
				continue
			}
			if kind, ok := names[name]; ok && kind != r.kind {
				return true
			}
			names[name] = r.kind
		}
		return false
	}
	walk = func(n *yaml.Node, depth int) bool {
		if n == nil || seen[n] || depth > 1000 {
			return false
		}
		seen[n] = true
		if n.Kind == yaml.MappingNode && keys(n, map[string]scalarKind{}, 0) {
			return true
		}
		for _, c := range n.Content {
			if walk(c, depth+1) {
				return true
			}
		}
		return walk(n.Alias, depth+1)
	}
	return walk(&n, 0)
}

// oracleSeeds are what the fuzz target starts from and the test checks:
// the shapes of manifests, and YAML 1.1's corners.
var oracleSeeds = []string{
	manifesttest.KubectlPod, kubeadmConfig,
	"a: 1\nb: x\nc: [1, 2.5, true, null]\n",
	"hostProcess: yes\nq: 'yes'\nn: no\ny: Y\nN: off\n",
	"v: 0x10\nw: 1_000\nt: 2026-11-06\no: 0o17\nb: 0b101\nm: -0b11\ne: 1e3\nf: .5\ng: -.inf\n",
	"0x10: a\n1.0: b\n.5: c\n'y': d\n1e3: e\n-0: f\n+1: g\n",
	"k: -1\nl: +.5\nn: 1e3\np: 2026-11-06 10:00:00\nq: 1:2\nr: 12345678901234567890\ns: 123456789012345678901234\n",
	"a: |\n  x\n\n  y\nb: |-\n  z\nc: >\n  folded\n  text\n",
	"base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nn: {<<: [*b, {x: 5}]}\n",
	"b: !!binary aGVsbG8=\nf: !!float 1\ns: !!str 1\ni: !!int \"7\"\nt: !!timestamp 2026-01-01\nx: !custom v\n",
	"a: !!int 1.5\n", "a: .nan\n", "~: a\n", "null: 1\n", "[a]: b\n", "a: *x\n",
	"apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n",
	"Kind: Pod\nkind: Node\napiVersion: 1\n",
	"s: \"\\u00e9\\t\\x41\\N\"\nu: 'it''s'\n",
	"- a\n- b: c\n  d: [e, {f: g}]\n- - h\n",
	"a: one\n  two\n\n  three\nb: 'x ''y''\n\n   z '\n- c\n",
	"a: one\n  two\nb: 'x ''y''\n\n   z '\n",
}

func TestToJSONOracle(t *testing.T) {
	compared := 0
	for _, s := range oracleSeeds {
		if checkOracle(t, []byte(s)) {
			compared++
		}
	}
	docs := 0
	for _, f := range manifesttest.YAMLFiles(t) {
		for _, d := range Documents(f.Data) {
			docs++
			if checkOracle(t, d.Data) {
				compared++
			}
		}
	}
	if compared < docs {
		t.Errorf("compared %d of %d documents and seeds", compared, docs+len(oracleSeeds))
	}
	t.Logf("%d documents of the repository and %d seeds: %d compared", docs, len(oracleSeeds), compared)
}

// FuzzToJSONOracle: on any input, ToJSON agrees with sigs.k8s.io/yaml.
func FuzzToJSONOracle(f *testing.F) {
	for _, s := range oracleSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkOracle(t, []byte(doc))
	})
}
