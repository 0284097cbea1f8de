package hostfacts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Clock limits, one set for every check of a host's clock.
const (
	// MaxClockSkew is how far a host's clock may be from this machine's:
	// beyond it, an error. The kubelet's certificates are backdated by
	// 5 minutes, but a clock already 30 s off says time synchronisation
	// is not working, and kubeadm join's bootstrap token and a Lease's
	// renewals fail long before the 5 minutes.
	MaxClockSkew = 30 * time.Second
	// MaxClockRoundTrip bounds the clock command's round trip: a sample
	// that took longer (a host or link so slow that one `date` takes
	// 10 s) is unknown, not believed. It keeps the uncertainty (half the
	// round trip) at most 5 s, well inside MaxClockSkew.
	MaxClockRoundTrip = 10 * time.Second
)

// Runner runs a script on one host the OS's way (transport.Client does:
// sh through sudo -n on Linux, PowerShell on Windows).
type Runner interface {
	Run(ctx context.Context, script string) (*transport.Result, error)
}

// ClockCommand is the command that samples a host's clock on its own, so
// that the round trip around it is short: nanoseconds since the epoch on
// Linux, milliseconds on Windows.
func ClockCommand(os engine.OS) string {
	if os == engine.Windows {
		return "[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()"
	}
	return "date +%s%N"
}

// Clock is one sample of a host's clock against this machine's.
type Clock struct {
	// Sampled is false when there is no usable sample (Detail says why).
	Sampled bool
	Detail  string
	// Node is the host's time; Before and After are this machine's just
	// before the command was sent and just after its answer arrived.
	Node, Before, After time.Time
	// Synced is the host's own view of its time synchronisation
	// (timedatectl NTPSynchronized on Linux), "" when unknown.
	Synced string
}

// SampleClock runs ClockCommand on the host through r, taking this
// machine's time before and after. An error, an answer that is not a
// number, or a round trip over MaxClockRoundTrip leave it not Sampled,
// with Detail saying why.
func SampleClock(ctx context.Context, r Runner, os engine.OS) Clock {
	before := time.Now()
	res, err := r.Run(ctx, ClockCommand(os))
	after := time.Now()
	if err != nil {
		return Clock{Detail: err.Error()}
	}
	return parseClock(os, string(res.Stdout), before, after)
}

// parseClock is SampleClock's reading of the host's answer.
func parseClock(os engine.OS, answer string, before, after time.Time) Clock {
	out := strings.TrimSpace(answer)
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil || n <= 0 {
		return Clock{Detail: fmt.Sprintf("the clock command printed %q, not a time", oneLine(out, 80))}
	}
	if rtt := after.Sub(before); rtt > MaxClockRoundTrip {
		return Clock{Detail: fmt.Sprintf("the clock command took %s to answer, more than the %s a sample may take", rtt.Round(time.Millisecond), MaxClockRoundTrip)}
	}
	t := time.Unix(0, n)
	if os == engine.Windows {
		t = time.UnixMilli(n)
	}
	return Clock{Sampled: true, Node: t.UTC(), Before: before, After: after}
}

// Skew is the host's clock minus this machine's at the middle of the
// round trip, and the uncertainty (half the round trip): the host read its
// clock somewhere between Before and After.
func (c Clock) Skew() (skew, uncertainty time.Duration) {
	half := c.After.Sub(c.Before) / 2
	mid := c.Before.Add(half)
	return c.Node.Sub(mid), half
}

// Verdict is what a sample says of a clock against a limit.
type Verdict int

// Verdicts.
const (
	// ClockUnknown: no sample, or one whose uncertainty is larger than the
	// limit (it could hide a clock off by more).
	ClockUnknown Verdict = iota
	// ClockWithin: the skew, less the uncertainty, is at most the limit.
	ClockWithin
	// ClockBeyond: the skew is beyond the limit even with the whole
	// uncertainty taken off.
	ClockBeyond
)

// Judge compares the sample with limit (MaxClockSkew unless a caller's
// own). certain is the part of the skew the round trip cannot explain
// (|skew| - uncertainty, not below 0).
func (c Clock) Judge(limit time.Duration) (v Verdict, certain time.Duration) {
	if !c.Sampled {
		return ClockUnknown, 0
	}
	skew, unc := c.Skew()
	if unc > limit {
		return ClockUnknown, 0
	}
	certain = max(skew.Abs()-unc, 0)
	if certain > limit {
		return ClockBeyond, certain
	}
	return ClockWithin, certain
}

// oneLine shortens s to its first line, at most n bytes (messages quote
// it with %q, which escapes control characters).
func oneLine(s string, n int) string {
	s, _, cut := strings.Cut(s, "\n")
	if len(s) > n {
		s, cut = s[:n], true
	}
	if cut {
		s += "..."
	}
	return s
}
