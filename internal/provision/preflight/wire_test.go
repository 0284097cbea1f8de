package preflight

import (
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// wire writes sections given as "### NAME" lines, each followed by its
// content, in hostfacts's protocol with marker, as the scripts print them.
func wire(marker, s string) string { return hostfactstest.Wire(marker, "### ", s) }

// parse parses sections written as for wire.
func parse(t testing.TB, h engine.Host, s string) *hostfacts.Host {
	t.Helper()
	f, err := hostfacts.ParseHost(h, wire(hostfactstest.Marker, s), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// clockAt is a clock sample skew off this machine's, with no round trip.
func clockAt(skew time.Duration) hostfacts.Clock {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	return hostfacts.Clock{Sampled: true, Node: now.Add(skew), Before: now, After: now}
}
