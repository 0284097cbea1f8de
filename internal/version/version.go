// Package version says which hybridctl this is. A release build
// (hack/release.sh) stamps the version, the commit and the build date into
// the three variables below with -ldflags -X; a binary built otherwise (go
// install, go build) takes what the Go toolchain recorded in it: the module
// version and, from a git checkout, the VCS revision and commit time.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set only by the linker (-X github.com/hybridctl/hybridctl/internal/version.version=...);
// nothing assigns them at run time.
var (
	version string // v1.2.3, or v0.0.0-20261206051700-6c0c693abcd0 between tags
	commit  string // the full commit hash
	date    string // the commit time, RFC 3339 in UTC (the release's SOURCE_DATE_EPOCH)
)

// Devel is the version of a binary that carries no version at all (go
// build in a checkout without VCS information).
const Devel = "(devel)"

// Info is one binary's identity.
type Info struct {
	// Version is the release's version, the module version go install
	// recorded, or Devel.
	Version string
	// Commit is the commit the binary was built from, when known.
	Commit string
	// Date is when that commit was made (a release's build date), when known.
	Date string
	// Modified is true when the Go toolchain recorded uncommitted changes.
	Modified bool
	// GoVersion and Platform (GOOS/GOARCH) are the toolchain's.
	GoVersion string
	Platform  string
}

// Get returns the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(version, commit, date, bi)
}

// from combines the stamped values with the build information: a stamped
// value always wins.
func from(version, commit, date string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.Date == "" {
					in.Date = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true" && commit == ""
			}
		}
	}
	if in.Version == "" {
		in.Version = Devel
	}
	return in
}
