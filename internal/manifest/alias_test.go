package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// aliased is a document whose aliases add exactly n*(l+3) bytes: a scalar
// of l bytes anchored once and used n times, one alias a line (the k-th
// alias is on line k+2).
func aliased(l, n int) string {
	var b strings.Builder
	b.WriteString("a: &a " + strings.Repeat("x", l) + "\nb:\n")
	for range n {
		b.WriteString("- *a\n")
	}
	return b.String()
}

func charge(t *testing.T, b *AliasBudget, doc string) error {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return b.Charge(&n)
}

// TestAliasLimits: both sides of the per-document limit and of the whole
// input's, with the package's own limits.
func TestAliasLimits(t *testing.T) {
	// 1,024 aliases of a 1,021-byte scalar add exactly 1 MiB.
	atLimit := aliased(1021, 1024)
	var b AliasBudget
	if err := charge(t, &b, atLimit); err != nil {
		t.Fatalf("a document that grows by exactly %d bytes: %v", MaxAliasExpansionPerDocument, err)
	}
	if b.Used() != MaxAliasExpansionPerDocument {
		t.Fatalf("used %d, want %d", b.Used(), MaxAliasExpansionPerDocument)
	}
	var over AliasBudget
	err := charge(t, &over, aliased(1021, 1025))
	var ae *AliasError
	if !errors.As(err, &ae) || ae.Whole || ae.Line != 1027 || ae.Limit != MaxAliasExpansionPerDocument {
		t.Fatalf("one alias more: %#v (%v), want the per-document limit at line 1027", ae, err)
	}
	if over.Used() != 0 {
		t.Errorf("a refused document charged %d bytes", over.Used())
	}
	if !strings.Contains(err.Error(), "line 1027: aliases expand this document by more than 1 MiB") {
		t.Errorf("message %q", err)
	}

	// Eight documents at the per-document limit fill the input's; the
	// next alias of one byte crosses it, and a document without aliases
	// still passes.
	for i := 2; i <= 8; i++ {
		if err := charge(t, &b, atLimit); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
	}
	if b.Used() != MaxAliasExpansion {
		t.Fatalf("used %d, want %d", b.Used(), MaxAliasExpansion)
	}
	if err := charge(t, &b, "a: 1\nb: [x, y]\n"); err != nil {
		t.Fatalf("no aliases, budget spent: %v", err)
	}
	err = charge(t, &b, "a: &a \"\"\nb: *a\n")
	if !errors.As(err, &ae) || !ae.Whole || ae.Line != 2 || ae.Limit != MaxAliasExpansion {
		t.Fatalf("past the input's limit: %#v (%v)", ae, err)
	}
	if !strings.Contains(err.Error(), "aliases expand the input by more than 8 MiB") {
		t.Errorf("message %q", err)
	}
}

// TestAliasBudgetSmall: both sides of overridden limits, and how values are
// counted (a scalar its length plus 3, a collection 2 plus its contents,
// keys included, nested aliases through their anchors).
func TestAliasBudgetSmall(t *testing.T) {
	for _, c := range []struct {
		doc  string
		adds int64
	}{
		{"a: &a xy\nb: *a\n", 5},
		{"a: &a [x, y]\nb: *a\nc: *a\n", 2 * (2 + 4 + 4)},
		{"a: &a {k: v}\nb: *a\n", 2 + 4 + 4},
		{"a: &a x\nb: &b [*a, *a]\nc: *b\n", 4 + 4 + (2 + 4 + 4)},
		{"m: &m {x: 1}\nn:\n  <<: *m\n  y: 2\n", 2 + 4 + 4},
		{"a: 1\n", 0},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &n); err != nil {
			t.Fatal(err)
		}
		at := &AliasBudget{PerDocument: c.adds, Total: c.adds}
		if err := at.Charge(&n); err != nil || at.Used() != c.adds {
			t.Errorf("%q with a limit of %d: %v, used %d", c.doc, c.adds, err, at.Used())
		}
		if c.adds == 0 {
			continue
		}
		below := &AliasBudget{PerDocument: c.adds - 1, Total: 100}
		if err := below.Charge(&n); err == nil {
			t.Errorf("%q with a per-document limit of %d: accepted", c.doc, c.adds-1)
		}
		whole := &AliasBudget{PerDocument: 100, Total: c.adds - 1}
		var ae *AliasError
		if err := whole.Charge(&n); !errors.As(err, &ae) || !ae.Whole {
			t.Errorf("%q with an input limit of %d: %v", c.doc, c.adds-1, err)
		}
	}
}

// TestAliasEndless: an alias inside the value it names (which yaml.v3's
// node parser accepts) is refused, whatever the limits.
func TestAliasEndless(t *testing.T) {
	for _, doc := range []string{"a: &a [*a]\n", "a: &a {b: [1, {c: *a}]}\n", "&a [x, *a]\n"} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			t.Fatal(err)
		}
		b := &AliasBudget{PerDocument: saturated, Total: saturated}
		var ae *AliasError
		if err := b.Charge(&n); !errors.As(err, &ae) || !ae.Endless || ae.Line != 1 {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// bomb is a "billion laughs" document of about 21 KB: levels of ten
// aliases each, over a 64-byte string.
func bomb() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"" + strings.Repeat("x", 64) + "\"]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	return b.String()
}

// TestCheckYAMLAcrossDocuments: every document of a stream counts against
// one budget, and the error names the document and the alias's line.
func TestCheckYAMLAcrossDocuments(t *testing.T) {
	// Forty bombs: the first is refused at its level l5 (line 7, about
	// 6.9 MB), measured without expanding it.
	stream := strings.Repeat("---\n"+bomb(), 40)
	var ae *AliasError
	if err := CheckYAML([]byte(stream), &AliasBudget{}); !errors.As(err, &ae) || ae.Document != 1 || ae.Whole || ae.Line != 7 {
		t.Fatalf("forty bombs: %v", err)
	}
	// Documents each within their own limit, together past the input's:
	// the ninth is refused at its first alias (lines count from the
	// stream's start).
	doc := aliased(1021, 1024)
	stream = "kind: first\n" + strings.Repeat("---\n"+doc, 9)
	var b AliasBudget
	err := CheckYAML([]byte(stream), &b)
	if !errors.As(err, &ae) || ae.Document != 10 || !ae.Whole || ae.Line != 8221 {
		t.Fatalf("nine documents at the per-document limit: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "document 10, line 8221: ") {
		t.Errorf("message %q", err)
	}
	var ok AliasBudget
	if err := CheckYAML([]byte(strings.Repeat("---\n"+doc, 8)), &ok); err != nil {
		t.Fatalf("eight documents at the per-document limit: %v", err)
	}
	// A stream yaml.v3 cannot parse is refused when it may hold aliases,
	// and left to its reader otherwise.
	if err := CheckYAML([]byte("a: *b\n"), &AliasBudget{}); err == nil || !strings.HasPrefix(err.Error(), "document 1: ") {
		t.Errorf("an unknown alias: %v", err)
	}
	if err := CheckYAML([]byte("a: [b\n"), &AliasBudget{}); err != nil {
		t.Errorf("broken YAML without aliases: %v", err)
	}
}

func TestMayHaveAlias(t *testing.T) {
	for doc, want := range map[string]bool{
		"a: *b\n":                         true,
		"*a\n":                            true,
		"a: [x,*b]\n":                     true,
		"m:\n  <<: *b\n":                  true,
		"s: \"*/5 * * * *\"\n":            true, // inside quotes, but not alone: yes errs on the safe side
		"verbs: ['*']\n":                  false,
		"resources: [\"*\"]\n":            false,
		"- '*'\n- \"*\"\n":                false,
		"a: b\n":                          false,
		"":                                false,
		"x: '*\"\n":                       true,
		"apiGroups: ['*']\nb: '*'":        false,
		"k: \"*\"\nj: *a\n":               true,
		"trailing: *":                     true,
		"'*":                              true,
		"glob: 'a*b'\n":                   true,
		"l: '*'\nm: '**'\n":               true,
		"n: '*' # a comment with * in it": true,
	} {
		if got := MayHaveAlias([]byte(doc)); got != want {
			t.Errorf("%q: %v, want %v", doc, got, want)
		}
	}
}
