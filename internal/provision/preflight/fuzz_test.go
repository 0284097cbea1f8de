package preflight

import (
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// FuzzCheckHost: whatever a host prints, the checks over what parses
// neither panic nor hang. (hostfacts's FuzzParseHost keeps the parser's
// corpus.)
func FuzzCheckHost(f *testing.F) {
	f.Add(hostfactstest.Fixture(f, hostfactstest.HostUbuntu), false)
	f.Add(hostfactstest.Fixture(f, hostfactstest.HostWindows), true)
	f.Add(hostfactstest.Sections("### swaps\nFilename\n\n### tcp\n 0: :::: 0A\n"), false)
	f.Fuzz(func(t *testing.T, out string, windows bool) {
		h := engine.Host{Name: "h", Role: engine.RoleWorker, OS: engine.Linux}
		if windows {
			h.OS = engine.Windows
		}
		fa, err := hostfacts.ParseHost(h, out, hostfactstest.Marker)
		if err != nil {
			return
		}
		_ = CheckHost(fa, h, labExpect)
		_ = CheckCluster([]*hostfacts.Host{fa, fa})
	})
}
