package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// semver is a parsed MAJOR.MINOR.PATCH version with an optional
// pre-release; build metadata is ignored.
type semver struct {
	Major, Minor, Patch int
	Pre                 string
	V                   bool // written with a leading v
}

func (v semver) minorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// parseSemver parses "v1.37.2", "1.37.2", "v1.38.0-rc.1".
func parseSemver(s string) (semver, bool) {
	var v semver
	if rest, ok := strings.CutPrefix(s, "v"); ok {
		v.V = true
		s = rest
	}
	s, _, _ = strings.Cut(s, "+")
	s, v.Pre, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return semver{}, false
	}
	nums := make([]int, 3)
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return semver{}, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return semver{}, false
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, true
}

// KubernetesMinor returns "v1.37" for "v1.37.2", or "" when unparsable.
func KubernetesMinor(version string) string {
	v, ok := parseSemver(version)
	if !ok {
		return ""
	}
	return "v" + v.minorString()
}
