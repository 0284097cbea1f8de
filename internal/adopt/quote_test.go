package adopt

import (
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/termtext"
)

// TestQuoteReadsBack: a value from the cluster is written so that YAML
// reads it back unchanged and the file holds no rune a terminal acts on.
func TestQuoteReadsBack(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "new\nline\ttab",
		"evil\x1b[1A\x1b[2K\x1b]0;pwned\a\x1b]52;c;ZXZpbA==\a\rfake\u009b2J\u0085",
		"del\x7f", "bidi\u202eevil\u2066", "sep\u2028\u2029", "é ü 日本 😀",
	} {
		out := q(s)
		if !termtext.IsSafe(out) {
			t.Errorf("q(%q) = %s: a rune a terminal acts on", s, out)
		}
		var back string
		if err := yaml.Unmarshal([]byte("v: "+out), &struct{ V *string }{&back}); err != nil {
			t.Errorf("q(%q) = %s: %v", s, out, err)
			continue
		}
		if back != s {
			t.Errorf("q(%q) = %s reads back as %q", s, out, back)
		}
	}
}
