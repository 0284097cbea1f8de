package release

import (
	"fmt"
	"slices"
	"strings"
)

// Platform is one GOOS/GOARCH a release ships.
type Platform struct {
	OS, Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Exe is the binary's file name on the platform.
func (p Platform) Exe() string {
	if p.OS == "windows" {
		return "hybridctl.exe"
	}
	return "hybridctl"
}

// ArchiveExt is the archive format: zip on Windows, tar.gz elsewhere.
func (p Platform) ArchiveExt() string {
	if p.OS == "windows" {
		return ".zip"
	}
	return ".tar.gz"
}

// Platforms is the ordered list of platforms a release builds.
func Platforms() []Platform {
	return []Platform{
		{"linux", "amd64"},
		{"linux", "arm64"},
		{"darwin", "amd64"},
		{"darwin", "arm64"},
		{"windows", "amd64"},
	}
}

// ParsePlatforms reads a comma-separated list (linux/amd64,windows/amd64).
// Only the platforms of Platforms are accepted; the result is in that
// list's order, without duplicates. An empty list means every platform.
func ParsePlatforms(list string) ([]Platform, error) {
	all := Platforms()
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	want := map[Platform]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		os, arch, ok := strings.Cut(s, "/")
		p := Platform{os, arch}
		if !ok || !slices.Contains(all, p) {
			var names []string
			for _, q := range all {
				names = append(names, q.String())
			}
			return nil, fmt.Errorf("--platforms: %q is not a release platform (want a comma-separated list of %s)", s, strings.Join(names, ", "))
		}
		want[p] = true
	}
	var out []Platform
	for _, p := range all {
		if want[p] {
			out = append(out, p)
		}
	}
	return out, nil
}
