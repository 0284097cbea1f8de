package render

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile values: quotes of every kind, expansions, separators, newlines.
var hostile = []string{
	"", "plain", "it's", "'", "''", `\'`, `"`, `$HOME`, "${IFS}", "$(touch /tmp/pwned)", "`id`",
	"a;b", "a&&b", "a|b", "a\nb", "a\r\nb", "\t", "a b", "*", "?", "[x]", "~", "!event", "#comment",
	"-rf", "--", "\\", "\\\\'", "x'; rm -rf / #", "x'\"$(id)\"'", "\u2018smart\u2019", "\u201a\u201b",
	"$env:PATH", "@(1,2)", "$(Get-Process)", "`$x", "a`nb", "%PATH%", "\x00nul", "é ü 日本", "\xff",
}

// unShQuote decodes a string written by ShQuote and reports whether it is
// well formed: quoted runs without a quote inside, joined only by \' .
func unShQuote(q string) (string, bool) {
	var b strings.Builder
	in := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			b.WriteByte(c)
		case c == '\'':
			in = true
		case c == '\\' && i+1 < len(q) && q[i+1] == '\'':
			b.WriteByte('\'')
			i++
		default:
			return "", false // a character outside quotes
		}
	}
	return b.String(), !in && strings.HasPrefix(q, "'")
}

// unPsQuote decodes a PowerShell single-quoted string the way PowerShell's
// tokenizer reads one (ScanStringLiteral): any of the four single-quote
// characters ends it unless the next character is one of them too, and then
// the pair stands for the second. It reports whether q is exactly one
// string literal.
func unPsQuote(q string) (string, bool) {
	rs := []rune(q)
	if len(rs) < 2 || rs[0] != '\'' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(rs); i++ {
		r := rs[i]
		if strings.ContainsRune(psSingleQuotes, r) {
			if i+1 < len(rs) && strings.ContainsRune(psSingleQuotes, rs[i+1]) {
				b.WriteRune(rs[i+1])
				i++
				continue
			}
			return b.String(), i == len(rs)-1 // the closing quote must be last
		}
		b.WriteRune(r)
	}
	return "", false // never closed
}

func TestShQuoteDecodes(t *testing.T) {
	for _, s := range hostile {
		q := ShQuote(s)
		got, ok := unShQuote(q)
		if !ok || got != s {
			t.Errorf("ShQuote(%q) = %s decodes to %q, ok=%v", s, q, got, ok)
		}
	}
}

// bash itself reads every quoted value back unchanged and runs nothing.
func TestShQuoteBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	var script strings.Builder
	var want bytes.Buffer
	for _, s := range hostile {
		if strings.ContainsRune(s, 0) {
			continue // bash strings cannot hold NUL
		}
		script.WriteString("printf '%s\\0' " + ShQuote(s) + "\n")
		want.WriteString(s + "\x00")
	}
	out, err := exec.Command(bash, "-c", script.String()).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	if !bytes.Equal(out, want.Bytes()) {
		t.Errorf("bash printed\n%q\nwant\n%q", out, want.Bytes())
	}
}

func TestPsQuote(t *testing.T) {
	for _, s := range hostile {
		if !utf8.ValidString(s) {
			continue
		}
		q := PsQuote(s)
		got, ok := unPsQuote(q)
		if !ok || got != s {
			t.Errorf("PsQuote(%q) = %s decodes to %q, ok=%v", s, q, got, ok)
		}
	}
	// Exhaustive over short strings of the characters that matter.
	alphabet := []rune{'a', '\'', '\u2018', '\u2019', '\u201a', '\u201b', '"', '$', '`', '\n', ' '}
	var gen func(prefix []rune, depth int)
	n := 0
	gen = func(prefix []rune, depth int) {
		s := string(prefix)
		n++
		if got, ok := unPsQuote(PsQuote(s)); !ok || got != s {
			t.Fatalf("PsQuote(%q) = %s decodes to %q, ok=%v", s, PsQuote(s), got, ok)
		}
		if depth == 0 {
			return
		}
		for _, r := range alphabet {
			gen(append(prefix, r), depth-1)
		}
	}
	gen(nil, 4)
	if n < 10000 {
		t.Fatalf("only %d strings tried", n)
	}
	// The decoder is strict: it rejects what PowerShell would not read as
	// one literal.
	for _, bad := range []string{`'a'b'`, `'a`, `a'`, `'it's'`, "'\u2019x'y"} {
		if _, ok := unPsQuote(bad); ok {
			t.Errorf("unPsQuote(%s) accepted a broken literal", bad)
		}
	}
}

func TestWords(t *testing.T) {
	for s, want := range map[string]string{
		"k8s-lab-node-1":       "k8s-lab-node-1",
		"user@192.168.10.24":   "user@192.168.10.24",
		"a b":                  "'a b'",
		"it's":                 `'it'\''s'`,
		"":                     "''",
		"$(id)":                "'$(id)'",
		"http://x/y?z":         "'http://x/y?z'",
		"C:/k/join.yaml":       "C:/k/join.yaml",
		"router.example.com,8": "router.example.com,8",
	} {
		if got := shWord(s); got != want {
			t.Errorf("shWord(%q) = %s, want %s", s, got, want)
		}
	}
	for s, want := range map[string]string{
		`C:\k\join.yaml`: `C:\k\join.yaml`,
		"-Force":         "'-Force'",
		"a b":            "'a b'",
		"$x":             "'$x'",
	} {
		if got := psWord(s); got != want {
			t.Errorf("psWord(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzShQuote(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := ShQuote(s)
		got, ok := unShQuote(q)
		if !ok || got != s {
			t.Fatalf("ShQuote(%q) = %s decodes to %q, ok=%v", s, q, got, ok)
		}
		if w := shWord(s); w != q && w != s {
			t.Fatalf("shWord(%q) = %s", s, w)
		}
	})
}

func FuzzPsQuote(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		q := PsQuote(s)
		got, ok := unPsQuote(q)
		if !ok || got != s {
			t.Fatalf("PsQuote(%q) = %s decodes to %q, ok=%v", s, q, got, ok)
		}
	})
}

func TestOneLine(t *testing.T) {
	for _, s := range hostile {
		got := oneLine(s)
		if strings.ContainsAny(got, "\r\n\x00\u2028\u2029\u0085") {
			t.Errorf("oneLine(%q) = %q keeps a line break", s, got)
		}
	}
	if c := comment("name\nkind: Secret"); strings.Count(c, "\n") != 1 || !strings.HasPrefix(c, "# ") {
		t.Errorf("comment with a line break in a value = %q", c)
	}
}
