package preflight

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// testMarker is the marker of the fixtures in testdata.
const testMarker = "hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b"

// wire writes sections given as "### NAME" lines, each followed by its
// content, in hostfacts's protocol with marker, as the scripts print them.
func wire(marker, s string) string { return hostfactstest.Wire(marker, "### ", s) }

// parse parses sections written as for wire.
func parse(t testing.TB, h engine.Host, s string) *Facts {
	t.Helper()
	f, err := Parse(h, wire(testMarker, s), testMarker)
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

// scriptMarker is the marker a gathering script was written with.
var scriptMarker = regexp.MustCompile(`(?:m=|\$hfM = )'([A-Za-z0-9-]+)'`)

// fakeRunner answers the clock command with clock(t0) (this machine's time
// when nil) and the gathering script with out(t0), sections written as for
// wire and put in the protocol with the script's own marker, after delay.
type fakeRunner struct {
	delay time.Duration
	clock func(t0 time.Time) string
	out   func(t0 time.Time) string
}

func (r fakeRunner) Run(ctx context.Context, script string) (*transport.Result, error) {
	t0 := time.Now()
	time.Sleep(r.delay)
	if script == hostfacts.ClockCommand(engine.Linux) || script == hostfacts.ClockCommand(engine.Windows) {
		if r.clock == nil {
			return &transport.Result{Stdout: []byte(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")}, nil
		}
		return &transport.Result{Stdout: []byte(r.clock(t0))}, nil
	}
	m := scriptMarker.FindStringSubmatch(script)
	if m == nil {
		return nil, &transport.CommandError{Host: "fake", Command: script, ExitCode: 2}
	}
	return &transport.Result{Stdout: []byte(wire(m[1], r.out(t0)))}, nil
}
