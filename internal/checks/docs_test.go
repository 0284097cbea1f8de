package checks

import (
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"
)

// TestExplain: --explain's text (internal/cli tests it through the command;
// here the wrapping's limits): a line of exactly 78 characters stays whole,
// one of 79 wraps, a word longer than the width is a line of its own, and an
// empty text gives no line.
func TestExplain(t *testing.T) {
	x37, y38, y39, z := strings.Repeat("x", 37), strings.Repeat("y", 38), strings.Repeat("y", 39), "z"
	long := strings.Repeat("w", 80)
	d := Doc{ID: "HC999", Name: "test-check", Severity: finding.Warning, Title: "A title",
		Why:   x37 + " " + y38 + " " + z,                // "  " + 37 + 1 + 38 = 78: one line, then z
		Fix:   x37 + "  " + y39 + "\n" + long + " " + z, // 79: y39 wraps; runs of blanks are one
		Guide: "§ 1.2"}
	want := "HC999 test-check (warning)\n\nA title\n\n" +
		"Why:\n  " + x37 + " " + y38 + "\n  z\n\n" +
		"Fix:\n  " + x37 + "\n  " + y39 + "\n  " + long + "\n  z\n\n" +
		"Guide: § 1.2\n" +
		"Suppress: annotation hybridctl.dev/ignore: \"HC999\", or --skip test-check\n"
	if got := Explain(d); got != want {
		t.Errorf("Explain:\n%s\nwant:\n%s", got, want)
	}
}

// TestMarkdownTriedOn: the corpus lines of docs/checks.md at the limit of
// six objects shown (six: all of them; seven: six and "1 more"), a check
// the corpus never triggered, and an entry without Misses (no "Does not
// catch" line). TestDocs compares the real catalogue, whose counts are
// whatever the corpus gives.
func TestMarkdownTriedOn(t *testing.T) {
	hits := func(n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, "p/f.yaml Pod ns/p"+string(rune('0'+i)))
		}
		return out
	}
	docs := []Doc{
		{ID: "HC901", Name: "six", Severity: finding.Error, Title: "Six", Why: "w", Fix: "f", Guide: "g", Misses: "m1"},
		{ID: "HC902", Name: "seven", Severity: finding.Info, Title: "Seven", Why: "w", Fix: "f", Guide: "g"},
		{ID: "HC903", Name: "none", Severity: finding.Warning, Title: "None", Why: "w", Fix: "f", Guide: "g", Misses: "m3"},
	}
	corpus := &CorpusStats{Projects: 2, Manifests: 3, Workloads: 4, Hits: map[string][]string{"HC901": hits(6), "HC902": hits(7)}}
	md := Markdown(docs, corpus)
	for _, want := range []string{
		"a corpus of 3 real-world manifests from 2 public projects (4 workloads,",
		"| [HC902](#hc902) | `seven` | info | Seven |\n",
		"\n## HC901\n\n**`six`** · error · Six\n\nw\n\n**Fix:** f\n\n**Guide:** g\n" +
			"\n**Tried on** the real-world corpus: reported 6 object(s): `p/f.yaml Pod ns/p1`, `p/f.yaml Pod ns/p2`, `p/f.yaml Pod ns/p3`, `p/f.yaml Pod ns/p4`, `p/f.yaml Pod ns/p5`, `p/f.yaml Pod ns/p6`.\n" +
			"\n**Does not catch:** m1.\n\n## HC902\n",
		"\n**Tried on** the real-world corpus: reported 7 object(s): `p/f.yaml Pod ns/p1`, `p/f.yaml Pod ns/p2`, `p/f.yaml Pod ns/p3`, `p/f.yaml Pod ns/p4`, `p/f.yaml Pod ns/p5`, `p/f.yaml Pod ns/p6`, and 1 more.\n\n## HC903\n",
		"\n## HC903\n\n**`none`** · warning · None\n\nw\n\n**Fix:** f\n\n**Guide:** g\n\n**Tried on** the real-world corpus: reported nothing there",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q; it is:\n%s", want, md)
		}
	}
	if strings.Count(md, "**Does not catch:**") != 2 {
		t.Errorf("want a Does not catch line for HC901 and HC903 only:\n%s", md)
	}
	if plain := Markdown(docs, nil); strings.Contains(plain, "corpus") {
		t.Errorf("Markdown without a corpus mentions it:\n%s", plain)
	}
}
