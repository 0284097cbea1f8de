package version

import (
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	goinstall := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/hybridctl/hybridctl", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	cases := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{"stamped wins over the build information", "v1.5.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-12-01T00:00:00Z", goinstall,
			Info{Version: "v1.5.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", Date: "2026-12-01T00:00:00Z"}},
		{"go install: the module version and VCS settings", "", "", "", goinstall,
			Info{Version: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-11-30T10:00:00Z", Modified: true}},
		{"only the version stamped", "v1.5.0", "", "", goinstall,
			Info{Version: "v1.5.0", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-11-30T10:00:00Z", Modified: true}},
		{"nothing at all", "", "", "", nil, Info{Version: Devel}},
		{"go build without VCS", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: ""}}, Info{Version: Devel}},
		{"vcs.modified false", "", "", "", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "false"}}}, Info{Version: Devel}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := from(c.version, c.commit, c.date, c.bi)
			if got.GoVersion == "" || got.Platform == "" {
				t.Errorf("GoVersion %q, Platform %q: want both set", got.GoVersion, got.Platform)
			}
			got.GoVersion, got.Platform = "", ""
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestGetUnstamped(t *testing.T) {
	// A test binary is not stamped: Get falls back to the build information.
	if version != "" || commit != "" || date != "" {
		t.Fatalf("the test binary is stamped: %q %q %q", version, commit, date)
	}
	if got := Get(); got.Version == "" {
		t.Errorf("Get().Version is empty: want the module version or %q", Devel)
	}
}
