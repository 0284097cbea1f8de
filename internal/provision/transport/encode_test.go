package transport

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodePowerShellKnownValue(t *testing.T) {
	// powershell -EncodedCommand of "dir" is the base64 of d\0i\0r\0,
	// the example in PowerShell's own help (powershell -?).
	if got := EncodePowerShell("dir"); got != "ZABpAHIA" {
		t.Errorf("EncodePowerShell(dir) = %s, want ZABpAHIA", got)
	}
	// A character outside the BMP becomes a surrogate pair (4 bytes).
	raw, _ := base64.StdEncoding.DecodeString(EncodePowerShell("𝄞"))
	if len(raw) != 4 || raw[0] != 0x34 || raw[1] != 0xd8 || raw[2] != 0x1e || raw[3] != 0xdd {
		t.Errorf("surrogate pair: % x", raw)
	}
}

func TestPowerShellCommandHasOnlySafeCharacters(t *testing.T) {
	cmd := PowerShellCommand(`Write-Output "a'b" ; & | < > ^ % ! $env:PATH` + "\r\n`")
	enc := strings.TrimPrefix(cmd, "powershell -NoProfile -NonInteractive -EncodedCommand ")
	for _, r := range enc {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=') {
			t.Fatalf("unsafe character %q in %s", r, enc)
		}
	}
}

func TestPSQuote(t *testing.T) {
	tests := map[string]string{
		`C:\k\join.yaml`: `'C:\k\join.yaml'`,
		`it's`:           `'it''s'`,
		"a\u2019b":       "'a\u2019\u2019b'",
		`$env:x "q"`:     `'$env:x "q"'`,
	}
	for in, want := range tests {
		if got := PSQuote(in); got != want {
			t.Errorf("PSQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPowerShellEncoding(f *testing.F) {
	for _, s := range []string{"", "dir", "it's \"quoted\"", "ünï ✓ 𝄞", "a\r\nb\x00c", "$(Get-Date) `n", "bad \xff\xfe byte", "\xed\xa0\x80 lone surrogate"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// PowerShell reads UTF-16: a byte that is not UTF-8 is sent as
		// U+FFFD, one per byte (Go's []rune conversion); valid text
		// round-trips exactly. Invalid inputs are tested, not skipped.
		want := string([]rune(s))
		if utf8.ValidString(s) && want != s {
			t.Fatalf("valid %q changed by the rune conversion", s)
		}
		enc := EncodePowerShell(s)
		dec, err := DecodePowerShell(enc)
		if err != nil {
			t.Fatal(err)
		}
		if dec != want {
			t.Fatalf("round trip %q -> %q, want %q", s, dec, want)
		}
		if !utf8.ValidString(dec) {
			t.Fatalf("decoded %q is not valid UTF-8", dec)
		}
	})
}

func FuzzDecodePowerShell(f *testing.F) {
	for _, s := range []string{"", "ZABpAHIA", "ZABpAHI", "!!", "NNge3Q=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = DecodePowerShell(s) // must not panic
	})
}
