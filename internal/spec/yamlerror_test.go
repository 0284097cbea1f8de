package spec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// editLab returns examples/lab.yaml with each old line (a whole line,
// found exactly once) replaced by its new text, which may span lines.
func editLab(t *testing.T, pairs ...string) string {
	t.Helper()
	src := mustRead(t, "../../examples/lab.yaml")
	for i := 0; i+1 < len(pairs); i += 2 {
		old := "\n" + pairs[i] + "\n"
		if strings.Count(src, old) != 1 {
			t.Fatalf("examples/lab.yaml holds the line %q %d times, want once", pairs[i], strings.Count(src, old))
		}
		src = strings.Replace(src, old, "\n"+pairs[i+1]+"\n", 1)
	}
	return src
}

// lineOf is the 1-based number of the first line of src equal to l.
func lineOf(t *testing.T, src, l string) int {
	t.Helper()
	for i, x := range strings.Split(src, "\n") {
		if x == l {
			return i + 1
		}
	}
	t.Fatalf("no line %q", l)
	return 0
}

// oneDiagnostic parses src and wants exactly one diagnostic, on line want,
// with msg in its message.
func oneDiagnostic(t *testing.T, src string, want int, msg string) {
	t.Helper()
	r := Parse("lab.yaml", []byte(src))
	if len(r.Diagnostics) != 1 || r.Diagnostics[0].Line != want || !strings.Contains(r.Diagnostics[0].Message, msg) {
		t.Errorf("got\n%swant one diagnostic on line %d containing %q", diagText(r.Diagnostics), want, msg)
	}
}

// TestMisIndentedAroundBlockScalars: the lines of a block scalar (| or >)
// are text, not structure, whatever their indentation; the lines after it
// are structure again, at any level.
func TestMisIndentedAroundBlockScalars(t *testing.T) {
	const bad = "      encapsulation: VXLAN"
	const hint = "this line is indented 6 spaces, which matches no enclosing level (the line before it is at 4 and opens no block)"
	for _, c := range []struct {
		name  string
		pairs []string
	}{
		// A folded scalar at the top level, its text indented 2.
		{"top level", []string{"apiVersion: hybridctl.dev/v1alpha1", "apiVersion: >-\n  hybridctl.dev/v1alpha1"}},
		// A literal scalar at level 4 whose text goes deeper than the
		// mis-indented line, then a sibling at the scalar's own level.
		{"nested", []string{"    version: v3.33.0", "    version: |-\n      v3.33.0\n\n          (the release of the guide)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := editLab(t, append(c.pairs, "    encapsulation: VXLAN", bad)...)
			oneDiagnostic(t, src, lineOf(t, src, bad), hint)
		})
	}
}

// TestMisIndentedAfterQuotedValues: balanced quotes on a line before the
// mis-indented one do not stop the search (only a string left open, which
// may go on over several lines, does).
func TestMisIndentedAfterQuotedValues(t *testing.T) {
	for _, q := range []string{`"`, `'`} {
		bad := "      encapsulation: VXLAN"
		src := editLab(t,
			"    nodeCIDR: 192.168.10.0/24", "    nodeCIDR: "+q+"192.168.10.0/24"+q,
			"    version: v3.33.0", "    version: "+q+"v3.33.0"+q,
			"    encapsulation: VXLAN", bad)
		oneDiagnostic(t, src, lineOf(t, src, bad), "this line is indented 6 spaces")
	}
}

// TestMisIndentedInAnIndentedDocument: a spec whose every line is
// indented (pasted from a document or a heredoc) is valid YAML; a key
// mis-indented in it is still found on its line, with the levels counted
// from the left margin.
func TestMisIndentedInAnIndentedDocument(t *testing.T) {
	shift := func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = "  " + l
			}
		}
		return strings.Join(lines, "\n")
	}
	if r := Parse("lab.yaml", []byte(shift(mustRead(t, "../../examples/lab.yaml")))); len(r.Diagnostics) != 0 {
		t.Fatalf("the indented lab spec:\n%s", diagText(r.Diagnostics))
	}
	src := shift(editLab(t, "    encapsulation: VXLAN", "       encapsulation: VXLAN"))
	oneDiagnostic(t, src, lineOf(t, src, "         encapsulation: VXLAN"),
		"this line is indented 9 spaces, which matches no enclosing level (the line before it is at 6 and opens no block)")
}

// TestTabAfterTextIsNotIndentation: a tab inside a comment or a value is
// allowed; the tab reported is the first one in a line's indentation.
func TestTabAfterTextIsNotIndentation(t *testing.T) {
	src := editLab(t,
		"    dnsSuffix: example.com", "    dnsSuffix: example.com\t# a tab before this comment",
		"    mtu: 1500", "    # a tab\tin a comment\n\tmtu: 1500")
	want := lineOf(t, src, "\tmtu: 1500")
	oneDiagnostic(t, src, want, "a tab character at line "+strconv.Itoa(want)+", column 1")
}

// TestUnplacedYAMLError: an error yaml.v3 reports without a line (it was
// on the first line) is put on line 1, not moved to a later line by the
// indentation search, which would point at a line with nothing wrong; a
// byte that is not UTF-8, which the decoder reports without a line, is
// put on its own line.
func TestUnplacedYAMLError(t *testing.T) {
	oneDiagnostic(t, "apiVersion: v: 1\n kind: Cluster\n", 1, "invalid YAML: mapping values are not allowed in this context")
	oneDiagnostic(t, "apiVersion: hybridctl.dev/v1alpha1\nkind: Cluster\nmetadata: {name: \xff}\n", 3, "invalid YAML")
	oneDiagnostic(t, "\xff", 1, "invalid YAML")
	r := Parse("lab.yaml", []byte("apiVersion: v: 1\n kind: Cluster\n"))
	if m := r.Diagnostics[0].Message; m != "invalid YAML: mapping values are not allowed in this context" {
		t.Errorf("message %q", m)
	}
}

// TestYAMLErrorMessage: the decoder's "yaml: line N: msg" becomes the
// diagnostic's line and "invalid YAML: msg", the number not repeated.
func TestYAMLErrorMessage(t *testing.T) {
	src := "apiVersion: hybridctl.dev/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec: nodes: []\n"
	r := Parse("x.yaml", []byte(src))
	if len(r.Diagnostics) != 1 || r.Diagnostics[0].Line != 4 || r.Diagnostics[0].Message != "invalid YAML: mapping values are not allowed in this context" {
		t.Errorf("got\n%s", diagText(r.Diagnostics))
	}
	for _, c := range []struct {
		err, msg string
		line     int
	}{
		{"yaml: line 12: did not find expected key", "invalid YAML: did not find expected key", 12},
		{"yaml: line 7:mapping values", "invalid YAML: mapping values", 7},
		{"yaml: control characters are not allowed", "invalid YAML: control characters are not allowed", 0},
		{"yaml: line x: odd", "invalid YAML: line x: odd", 0},
	} {
		line, msg := yamlErrorLine(errString(c.err))
		if line != c.line || msg != c.msg {
			t.Errorf("%q: %d %q, want %d %q", c.err, line, msg, c.line, c.msg)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestStructureErrorsDoNotHideRules: a field of the wrong shape is dropped
// and the rest of the spec is still decoded and validated, so one run
// reports both; a document that is not a mapping at all stops there, with
// one diagnostic and no cluster.
func TestStructureErrorsDoNotHideRules(t *testing.T) {
	src := editLab(t, "    blockSize: 26", "    blockSize: big", "  - name: k8s-lab-win-1", "  - name: k8s-lab-windows-01")
	r := Parse("lab.yaml", []byte(src))
	var got []string
	for _, d := range r.Diagnostics {
		got = append(got, d.Rule+" "+d.Path)
	}
	if r.Cluster == nil || len(got) != 2 || got[0] != "S001 spec.network.blockSize" || !strings.HasPrefix(got[1], "S") || !strings.HasSuffix(got[1], "spec.nodes[3].name") {
		t.Errorf("want the blockSize structure error and the Windows name rule, got cluster %v:\n%s", r.Cluster != nil, diagText(r.Diagnostics))
	}
	for _, src := range []string{"hello\n", "- a\n- b\n", "42\n"} {
		r := Parse("x.yaml", []byte(src))
		if r.Cluster != nil || len(r.Diagnostics) != 1 || !strings.Contains(r.Diagnostics[0].Message, "want a mapping") {
			t.Errorf("%q: cluster %v, diagnostics:\n%s", src, r.Cluster != nil, diagText(r.Diagnostics))
		}
	}
}

// TestLoad: Load returns the cluster of a valid spec, an *InvalidError
// listing the problems of an invalid one, and a wrapped I/O error naming
// the file it cannot read.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := Load(ctx, write("lab.yaml", mustRead(t, "../../examples/lab.yaml")))
	if err != nil || c == nil || c.Metadata.Name != "lab" {
		t.Fatalf("valid spec: %v, %+v", err, c)
	}
	bad := write("bad.yaml", editLab(t, "    blockSize: 26", "    blockSize: big"))
	c, err = Load(ctx, bad)
	var ie *InvalidError
	if c != nil || !errors.As(err, &ie) || ie.File != bad || len(ie.Diagnostics) != 1 {
		t.Fatalf("invalid spec: %v, %v", c, err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	c, err = Load(ctx, missing)
	if c != nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: %v, %v", c, err)
	}
}
