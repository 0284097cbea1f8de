package inventory

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
)

const testMarker = "hybridctl-9a8b7c6d5e4f3a2b1c0d9e8f"

// wire writes sections given as "### hybridctl NAME" lines, each followed by its
// content, in hostfacts's protocol with marker, as the scripts print them.
func wire(marker, s string) string { return hostfactstest.Wire(marker, "### hybridctl ", s) }

// parse parses sections written as for wire.
func parse(t *testing.T, s string) *Facts {
	t.Helper()
	f, err := Parse(wire(testMarker, s), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// scriptMarker is the marker a facts script was written with.
var scriptMarker = regexp.MustCompile(`(?:m=|\$hfM = )'([A-Za-z0-9-]+)'`)

// TestParseRefuses: output without this run's sections, without the end
// section, with the end section cut short, or with a section twice.
func TestParseRefuses(t *testing.T) {
	m := testMarker
	for _, tc := range []struct{ name, out, want string }{
		{"the old fixed marker", "### hybridctl kubelet-conf\npresent\n### hybridctl end\n", "no section"},
		{"no end section", wire(m, "### hybridctl kubelet-conf\npresent\n"), "ended early"},
		{"the end section cut short", wire(m, "### hybridctl kubelet-conf\npresent\n") + hostfacts.BeginLine(m, "end") + "\n", "ended early"},
		{"a section twice", wire(m, "### hybridctl swaps\n\n### hybridctl swaps\n/swap\n### hybridctl end\n"), `section "swaps" appears twice`},
	} {
		if _, err := Parse(tc.out, m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse(wire(m, "### hybridctl end\n"), m); err != nil {
		t.Errorf("only the end section: %v", err)
	}
}
