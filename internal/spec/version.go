package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxVersionLength bounds a version: longer than any release tag, short
// enough to stay a valid image tag (kube-proxy's is VERSION-calico-hostprocess,
// at most 128 characters) and a file name in a bundle.
const MaxVersionLength = 64

// semver is a parsed MAJOR.MINOR.PATCH version with an optional
// pre-release.
type semver struct {
	Major, Minor, Patch int
	Pre                 string
	V                   bool // written with a leading v
}

func (v semver) minorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// String writes the version back as it was parsed.
func (v semver) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.V {
		s = "v" + s
	}
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// VersionError says why a string is not a release version.
type VersionError struct {
	Version string
	Reason  string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%q is not a release version (MAJOR.MINOR.PATCH with an optional pre-release such as -rc.1): %s", e.Version, e.Reason)
}

// ParseVersion parses a release version strictly, as semantic versioning
// 2.0.0 defines it without build metadata: an optional leading v, then
// MAJOR.MINOR.PATCH (decimal numbers without leading zeros), then
// optionally "-" and a pre-release of dot-separated, non-empty identifiers
// of ASCII letters, digits and "-" (a numeric identifier without leading
// zeros), and nothing else: no build metadata (+...), no white space, no
// "/", at most MaxVersionLength characters. A version so parsed is safe in
// a URL path, a file name, an image tag, a shell word and a Markdown line.
func ParseVersion(s string) (semver, error) {
	bad := func(format string, a ...any) (semver, error) {
		return semver{}, &VersionError{Version: s, Reason: fmt.Sprintf(format, a...)}
	}
	if len(s) > MaxVersionLength {
		return bad("it is %d bytes long; a version is at most %d", len(s), MaxVersionLength)
	}
	var v semver
	rest := s
	if r, ok := strings.CutPrefix(rest, "v"); ok {
		v.V, rest = true, r
	}
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		return bad("build metadata (+...) is not part of a release's name")
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("want three numbers, MAJOR.MINOR.PATCH")
	}
	nums := [3]*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return bad("want three numbers, MAJOR.MINOR.PATCH")
		}
		if len(p) > 1 && p[0] == '0' {
			return bad("the number %s has a leading zero", p)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return bad("the number %s is too large", p)
		}
		*nums[i] = n
	}
	if hasPre {
		if why := badPreRelease(pre); why != "" {
			return bad("%s", why)
		}
		v.Pre = pre
	}
	return v, nil
}

// badPreRelease says what is wrong with a pre-release (semver: dot-separated
// non-empty identifiers of [0-9A-Za-z-], numeric ones without leading
// zeros), or "" when nothing is.
func badPreRelease(pre string) string {
	for _, id := range strings.Split(pre, ".") {
		if id == "" {
			return "an empty pre-release identifier"
		}
		numeric := true
		for _, r := range id {
			switch {
			case r >= '0' && r <= '9':
			case r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
				numeric = false
			default:
				return fmt.Sprintf("%q in the pre-release (only letters, digits, '-' and '.')", r)
			}
		}
		if numeric && len(id) > 1 && id[0] == '0' {
			return fmt.Sprintf("the pre-release number %s has a leading zero", id)
		}
	}
	return ""
}

// parseSemver is ParseVersion without the reason.
func parseSemver(s string) (semver, bool) {
	v, err := ParseVersion(s)
	return v, err == nil
}

// KubernetesMinor returns "v1.37" for "v1.37.2", or "" when unparsable.
func KubernetesMinor(version string) string {
	v, ok := parseSemver(version)
	if !ok {
		return ""
	}
	return "v" + v.minorString()
}
