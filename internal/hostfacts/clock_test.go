//go:build unix

package hostfacts

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// TestSampleClockOverSSH samples this machine's own clock through the
// transport and a real SSH server (sudo -n, sh -c): the skew is within the
// uncertainty, and the command that ran is ClockCommand the transport's way.
func TestSampleClockOverSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := srv.KnownHostsFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := transport.Dial(ctx, transport.Config{Host: "node-1", Address: srv.Addr, User: "user", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 10 * time.Second, OS: engine.Linux, Sudo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	clk := SampleClock(ctx, c, engine.Linux)
	skew, unc := clk.Skew()
	if !clk.Sampled || skew.Abs() > unc+50*time.Millisecond {
		t.Errorf("this machine's own clock: %s ± %s (%+v)", skew, unc, clk)
	}
	if v, _ := clk.Judge(MaxClockSkew); v != ClockWithin {
		t.Errorf("verdict %v", v)
	}
	if cmds := srv.Commands(); len(cmds) != 1 || cmds[0] != "sudo -n -- sh -c 'set -e\ndate +%s%N'" {
		t.Errorf("commands %q", cmds)
	}

	srv.Shim("date", "#!/bin/sh\necho 'Thu Jan  1 00:00:00 UTC 1970'\n")
	if clk := SampleClock(ctx, c, engine.Linux); clk.Sampled || !strings.Contains(clk.Detail, `printed "Thu Jan  1 00:00:00 UTC 1970", not a time`) {
		t.Errorf("an answer that is no number: %+v", clk)
	}
	srv.Shim("date", "#!/bin/sh\nexit 3\n")
	if clk := SampleClock(ctx, c, engine.Linux); clk.Sampled || !strings.Contains(clk.Detail, "3") {
		t.Errorf("a failed command: %+v", clk)
	}
	cancel()
	if clk := SampleClock(ctx, c, engine.Linux); clk.Sampled || !strings.Contains(clk.Detail, "context canceled") {
		t.Errorf("a cancelled context: %+v", clk)
	}
}

func TestParseClock(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		os     engine.OS
		answer string
		rtt    time.Duration
		want   time.Time // zero: not sampled
		detail string
	}{
		{"Linux nanoseconds", engine.Linux, strconv.FormatInt(t0.UnixNano(), 10) + "\n", time.Second, t0, ""},
		{"Windows milliseconds", engine.Windows, strconv.FormatInt(t0.UnixMilli(), 10) + "\r\n", time.Second, t0, ""},
		{"round trip at the bound", engine.Linux, strconv.FormatInt(t0.UnixNano(), 10), MaxClockRoundTrip, t0, ""},
		{"round trip over the bound", engine.Linux, strconv.FormatInt(t0.UnixNano(), 10), MaxClockRoundTrip + time.Millisecond, time.Time{}, "took 10.001s to answer"},
		{"no number", engine.Linux, "%N", time.Second, time.Time{}, `printed "%N", not a time`},
		{"zero", engine.Linux, "0", time.Second, time.Time{}, "not a time"},
		{"negative", engine.Linux, "-5", time.Second, time.Time{}, "not a time"},
		{"two numbers", engine.Linux, "1 2", time.Second, time.Time{}, "not a time"},
		{"control characters", engine.Linux, "\x1b[2J", time.Second, time.Time{}, `"\x1b[2J"`},
	} {
		c := parseClock(tc.os, tc.answer, t0, t0.Add(tc.rtt))
		if tc.want.IsZero() {
			if c.Sampled || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("%s: %+v, want not sampled, %q", tc.name, c, tc.detail)
			}
			continue
		}
		if !c.Sampled || !c.Node.Equal(tc.want) || c.Before != t0 || c.After != t0.Add(tc.rtt) {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}

// TestJudge: both sides of MaxClockSkew with the uncertainty taken off,
// and an uncertainty larger than the limit is unknown, not within.
func TestJudge(t *testing.T) {
	at := func(skew, rtt time.Duration) Clock {
		local := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		return Clock{Sampled: true, Node: local.Add(skew), Before: local.Add(-rtt / 2), After: local.Add(rtt / 2)}
	}
	for _, tc := range []struct {
		name    string
		c       Clock
		want    Verdict
		certain time.Duration
	}{
		{"in sync", at(0, 100*time.Millisecond), ClockWithin, 0},
		{"30 s ahead", at(MaxClockSkew, 0), ClockWithin, MaxClockSkew},
		{"30.001 s behind", at(-MaxClockSkew-time.Millisecond, 0), ClockBeyond, MaxClockSkew + time.Millisecond},
		{"31 s ahead in a 2 s round trip", at(31*time.Second, 2*time.Second), ClockWithin, 30 * time.Second},
		{"31 s ahead in a 1.8 s round trip", at(31*time.Second, 1800*time.Millisecond), ClockBeyond, 30*time.Second + 100*time.Millisecond},
		{"uncertainty over the limit", at(0, 2*MaxClockSkew+2*time.Millisecond), ClockUnknown, 0},
		{"uncertainty at the limit", at(0, 2*MaxClockSkew), ClockWithin, 0},
		{"not sampled", Clock{Detail: "x"}, ClockUnknown, 0},
	} {
		v, certain := tc.c.Judge(MaxClockSkew)
		if v != tc.want || certain != tc.certain {
			t.Errorf("%s: %v %s, want %v %s", tc.name, v, certain, tc.want, tc.certain)
		}
	}
}

// oneLine keeps a first line of exactly n bytes whole and cuts one longer.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc..."},
		{"ab\ncd", 3, "ab..."},
		{"", 3, ""},
	} {
		if got := oneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
