package transport

import "testing"

// TestShellQuoteExact: a word of only safe characters (the ends of every
// range, and each listed punctuation character) is left as it is; any
// other character, or the empty word, gets single quotes.
func TestShellQuoteExact(t *testing.T) {
	for in, want := range map[string]string{
		"azAZ09":              "azAZ09",
		"-_./=:,+@%":          "-_./=:,+@%",
		"/var/lib/kubelet":    "/var/lib/kubelet",
		"":                    "''",
		"`":                   "'`'",
		"{":                   "'{'",
		"[":                   "'['",
		"a b":                 "'a b'",
		"it's":                `'it'\''s'`,
		"$HOME":               "'$HOME'",
		"ü":                   "'ü'",
		"10.0.26100;reboot":   "'10.0.26100;reboot'",
		"k8s-lab-api.example": "k8s-lab-api.example",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValidText: a NUL byte anywhere (first, last) or invalid UTF-8 is
// refused before anything is sent.
func TestValidText(t *testing.T) {
	for in, ok := range map[string]bool{"ls -l": true, "": true, "ünïcødé": true, "\x00ls": false, "ls\x00": false, "l\x00s": false, "\xffls": false} {
		if err := validText(in); (err == nil) != ok {
			t.Errorf("validText(%q) = %v, want ok %v", in, err, ok)
		}
	}
}
