package manifest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hybridctl/hybridctl/internal/manifest/manifesttest"
)

// checkFast converts doc with the fast path and, when it accepts the
// document, with yaml.v3: yaml.v3 must accept it too and the JSON must be
// the same bytes. It reports whether the fast path accepted doc.
func checkFast(t *testing.T, doc []byte) bool {
	t.Helper()
	var fast bytes.Buffer
	var lines []fastLine
	top, ok := fastToJSON(doc, &fast, &lines)
	if !ok {
		return false
	}
	var slow bytes.Buffer
	want, err := slowToJSON(doc, &slow)
	if err != nil {
		t.Fatalf("the fast path accepted a document yaml.v3 refuses (%v):\n%s\nfast path: %s", err, doc, fast.Bytes())
	}
	if !bytes.Equal(fast.Bytes(), want) {
		t.Fatalf("the fast path and yaml.v3 differ on\n%s\nfast:    %s\nyaml.v3: %s", doc, fast.Bytes(), want)
	}
	// The apiVersion and kind it read are what decoding the JSON gives,
	// and there are no items.
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if top.OK {
		if err := json.Unmarshal(want, &head); err != nil {
			t.Fatalf("the fast path read apiVersion %q and kind %q where encoding/json fails (%v) on\n%s", top.APIVersion, top.Kind, err, doc)
		}
		if head.APIVersion != top.APIVersion || head.Kind != top.Kind || head.Items != nil {
			t.Fatalf("the fast path read apiVersion %q and kind %q, encoding/json %q, %q and %d items on\n%s", top.APIVersion, top.Kind, head.APIVersion, head.Kind, len(head.Items), doc)
		}
	}
	return true
}

const kubeadmConfig = `apiVersion: v1
kind: ConfigMap
metadata: {name: kubeadm-config, namespace: kube-system}
data:
  ClusterConfiguration: |
    apiVersion: kubeadm.k8s.io/v1beta4
    kind: ClusterConfiguration

    # a comment inside the text
    networking: {podSubnet: 172.16.0.0/12, serviceSubnet: 10.96.0.0/12}
      indented: more
  strip: |-
    one
    two


  empty: ""
  none:
  tilde: ~
  list:
  - a
  - - nested
    - again
  -
    deeper: x
  - |
    text in a list
`

// TestYAMLFastAccepts: the usual shapes of manifests take the fast path
// (so the speed of lint does not silently fall back to yaml.v3) and give
// the yaml.v3 path's JSON.
func TestYAMLFastAccepts(t *testing.T) {
	for name, doc := range map[string]string{"pod": manifesttest.KubectlPod, "configmap": kubeadmConfig} {
		if !checkFast(t, []byte(doc)) {
			t.Errorf("%s: the fast path gave up", name)
		}
	}
	// Long strings as kubectl's printer folds them over several lines,
	// plain and single-quoted, in mappings and sequences, with empty lines
	// (line breaks) and escaped quotes.
	for _, doc := range []string{
		"a: collects the metrics and logs of node 0\n  for the fleet dashboard;  owned\n\n\n  by the platform team\nb: 1\n",
		"- one two\n  three\n- 'it''s a\n\n  long  \n  ''quoted'' text '\n- x\n",
		"m:\n  k: 'a ''b''\n    c'\n  l: 1\n",
		"a: 12\n  34\n",
	} {
		if !checkFast(t, []byte(doc)) {
			t.Errorf("%q: the fast path gave up", doc)
		}
	}
	// The cases of TestYAMLToJSON it takes.
	for _, doc := range []string{
		"a: 1\nb: x\nc: [1, 2.5, true, null]\n",
		"hostProcess: yes\nq: 'yes'\nn: no\n",
		"v: 0x10\nw: 1_000\nt: 2026-11-06\no: 0o17\n",
		"0x10: a\n1.0: b\n.5: c\n'y': d\n1e3: e\n",
		"s: \"a\\\"b<c>\"\n",
	} {
		if !checkFast(t, []byte(doc)) {
			t.Errorf("%q: the fast path gave up", doc)
		}
	}
}

// TestYAMLFastGivesUp: what the fast path leaves to yaml.v3, one near
// miss each, so an error keeps yaml.v3's message and line.
func TestYAMLFastGivesUp(t *testing.T) {
	for _, doc := range []string{
		"a: &x 1\nb: *x\n",         // anchors and aliases
		"a: !!str 1\n",             // tags
		"m:\n  <<: {x: 1}\n",       // merge keys
		"a: [1,\n  2]\n",           // a multi-line flow collection
		"a: \"x\n  y\"\n",          // a multi-line double-quoted scalar
		"a: b\n  c: d\n",           // a plain continuation that reads as a pair
		"a: b\n  - c\n",            // ... or as an entry
		"a: b # c\n  d\n",          // a continuation after a comment
		"a: b\n  # c\n  d\n",       // a comment line inside
		"a:\n  b: 'x\n  y'\n",      // a quoted continuation not indented past its mapping
		"a: 'x\n",                  // an unclosed quote
		"a: 'x\n  y' z\n",          // text after the closing quote
		"a: >\n  folded\n",         // folded block scalars
		"a: |+\n  keep\n\n",        // keep chomping
		"a: |2\n   x\n",            // indentation indicators
		"a:\tb\n",                  // tabs
		"a: é\n",                   // non-ASCII
		"a: b: c\n",                // an error yaml.v3 reports
		"a: 1\n - b\n",             // an error yaml.v3 reports
		"a:\n    b: 1\n  c: 2\n",   // bad indentation
		"? complex\n: key\n",       // complex keys
		"just a scalar\n",          // not a collection
		"a: {b: 1, }\n",            // a trailing comma
		"a: [b: 1]\n",              // a pair in a sequence
		"a: \"\\x41\"\n",           // escapes JSON does not have
		"a: 1\n--- b: 2\n",         // a document marker
		"%YAML 1.2\n---\na: 1\n",   // directives
		"a: |\n\n      x\n    y\n", // a literal's bad indentation
		"a: 1\r\nb: 2\n",           // a CR inside
		"a: 1\n'b: 2\n",            // an unclosed quote
		"a: [x] junk\n",            // text after a flow collection
		"a: {b: c #d}\n",           // a comment inside a flow
	} {
		var b bytes.Buffer
		var lines []fastLine
		if _, ok := fastToJSON([]byte(doc), &b, &lines); ok {
			t.Errorf("%q: the fast path accepted it (%s)", doc, b.Bytes())
		}
	}
}

// TestYAMLFastRepository runs every YAML document in the repository
// through both paths. The fast path is for what tools write (kubectl,
// Helm, the public manifests vendored under testdata/third_party): at
// least two thirds of those take it. The hand-written fixtures are mostly
// in flow style, which it leaves to the full parser, so they do not count
// in that share.
func TestYAMLFastRepository(t *testing.T) {
	var docs, fast, real, realFast int
	for _, f := range manifesttest.YAMLFiles(t) {
		for _, d := range Documents(f.Data) {
			docs++
			ok := checkFast(t, d.Data)
			if ok {
				fast++
			}
			if f.Public {
				real++
				if ok {
					realFast++
				}
			}
		}
	}
	t.Logf("%d of %d documents took the fast path; of the %d vendored public ones, %d", fast, docs, real, realFast)
	if docs < 100 || real < 100 || realFast < real*2/3 {
		t.Errorf("%d of %d vendored public documents took the fast path: fewer than two thirds (%d of %d in all)", realFast, real, fast, docs)
	}
}

// FuzzYAMLFast: on any input, what the fast path accepts yaml.v3 accepts
// and writes as the same JSON.
func FuzzYAMLFast(f *testing.F) {
	for _, s := range []string{
		manifesttest.KubectlPod, kubeadmConfig,
		"a: 1\nb: x\nc: [1, 2.5, true, null]\n",
		"hostProcess: yes\nq: 'yes'\nn: no\n",
		"v: 0x10\nw: 1_000\nt: 2026-11-06\no: 0o17\n",
		"0x10: a\n1.0: b\n.5: c\n'y': d\n1e3: e\n",
		"- a\n- b: c\n  d: [e, {f: g}]\n- - h\n",
		"k: -1\nl: +.5\nm: 0o17\nn: 1e3\no: 0b101\np: 2026-11-06 10:00:00\nq: 1:2\n",
		"a: |\n  x\n\n  y\nb: |-\n  z\n",
		"\"q\": 'r'\n'': \"\"\n",
		"apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n",
		"Kind: Pod\nkind: Node\napiVersion: 1\n",
		"kind: \"P\\u00e9d\"\napiVersion: ~\n",
		"a: one\n  two\n\n  three\nb: 'x ''y''\n\n   z '\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkFast(t, []byte(doc))
	})
}
