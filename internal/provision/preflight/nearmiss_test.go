package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Near-miss cases for the checks and the parsers, one on each side of every
// limit (written for the mutants gremlins found alive; docs/testing.md).

// preparedOK are the facts of a Linux worker that passes every check.
func preparedOK() *hostfacts.Host {
	return &hostfacts.Host{Host: linuxWorker.Name, OSID: "ubuntu", OSVersionID: "26.04", ProductUUID: "u", MachineID: "m", SwapKnown: true,
		TimeSynced: "yes", Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}}
}

func messages(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+": ["+f.Check+"] "+f.Message)
	}
	return out
}

// TestClockSkewLimits: over the one limit (hostfacts.MaxClockSkew, 30 s)
// an error, over half of it a warning, at each limit not yet; the part of
// the skew the round trip explains does not count; an unmeasured skew, or
// one within an uncertainty larger than the limit, is a warning.
func TestClockSkewLimits(t *testing.T) {
	for _, tc := range []struct {
		c    hostfacts.Clock
		want string // "" no finding
	}{
		{clockAt(15 * time.Second), ""},
		{clockAt(15*time.Second + time.Millisecond), "warning: [clock-skew] the clock is 15.001s off this machine's, more than half the 30s limit"},
		{clockAt(-16 * time.Second), "warning: [clock-skew] the clock is -16s off this machine's, more than half the 30s limit"},
		{clockAt(30 * time.Second), "warning: [clock-skew] the clock is 30s off this machine's, more than half the 30s limit"},
		{clockAt(30*time.Second + time.Millisecond), "error: [clock-skew] the clock is 30.001s off this machine's, beyond the 30s limit"},
		{clockAt(-31 * time.Second), "error: [clock-skew] the clock is -31s off this machine's, beyond the 30s limit"},
		{roundTrip(31*time.Second, 2*time.Second), "warning: [clock-skew] the clock is 31s off this machine's (±1s), more than half the 30s limit"},
		{roundTrip(31*time.Second, 1998*time.Millisecond), "error: [clock-skew] the clock is 31s off this machine's (±999ms), beyond the 30s limit"},
		{roundTrip(16*time.Second, 2*time.Second), ""},
		{roundTrip(0, 2*hostfacts.MaxClockSkew+2*time.Millisecond), "warning: [clock-skew] could not measure the clock against this machine's: the sample's uncertainty (±30.001s) is larger than the 30s limit"},
		{hostfacts.Clock{Detail: `the clock command printed "x", not a time`}, `warning: [clock-skew] could not measure the clock against this machine's: the clock command printed "x", not a time`},
	} {
		f := preparedOK()
		f.Clock = tc.c
		got := messages(CheckPrepared(f, linuxWorker, labExpect))
		var want []string
		if tc.want != "" {
			want = []string{tc.want}
		}
		if !slices.Equal(got, want) {
			skew, unc := tc.c.Skew()
			t.Errorf("skew %v ± %v: got %q, want %q", skew, unc, got, want)
		}
	}
}

// roundTrip is a clock sample skew off this machine's in a round trip of
// rtt.
func roundTrip(skew, rtt time.Duration) hostfacts.Clock {
	c := clockAt(skew)
	c.Before, c.After = c.Before.Add(-rtt/2), c.After.Add(rtt/2)
	return c
}

// TestAPINameNearMisses: with no control-plane addresses to compare, any
// resolution passes; with them, one matching address among others passes.
func TestAPINameNearMisses(t *testing.T) {
	x := Expect{APIName: "k8s-lab-api.example.com"}
	for _, tc := range []struct {
		addrs, resolved []string
		want            string
	}{
		{nil, []string{"10.0.0.9"}, ""},
		{nil, nil, "error: [api-name-resolves] k8s-lab-api.example.com does not resolve on the host"},
		{[]string{"192.168.10.23", "192.168.10.24"}, []string{"10.0.0.9", "192.168.10.24"}, ""},
		{[]string{"192.168.10.23"}, []string{"10.0.0.9", "10.0.0.8"}, "error: [api-name-resolves] k8s-lab-api.example.com resolves to 10.0.0.9, 10.0.0.8, want 192.168.10.23"},
	} {
		f := preparedOK()
		f.Resolved = tc.resolved
		x.APIAddresses = tc.addrs
		got := strings.Join(messages(CheckPrepared(f, linuxWorker, x)), "\n")
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("addresses %v, resolved %v: got %q, want %q", tc.addrs, tc.resolved, got, tc.want)
		}
	}
}

// TestOSVersionExpectations: the ID and the version are each compared, and
// an empty expectation accepts any.
func TestOSVersionExpectations(t *testing.T) {
	for _, tc := range []struct {
		id, version string
		x           Expect
		warn        bool
	}{
		{"fedora", "26.04", labExpect, true}, // right version, wrong distribution
		{"ubuntu", "26.10", labExpect, true},
		{"ubuntu", "26.04", labExpect, false},
		{"rocky", "9", Expect{}, false},
		{"rocky", "9", Expect{LinuxVersionID: "9"}, false},
		{"rocky", "9", Expect{LinuxID: "rocky"}, false},
		{"rocky", "10", Expect{LinuxVersionID: "9"}, true},
		{"", "", Expect{}, true}, // unreadable
	} {
		f := preparedOK()
		f.OSID, f.OSVersionID, f.OSPrettyName = tc.id, tc.version, tc.id+" "+tc.version
		got := findingsOf(CheckHost(f, linuxWorker, tc.x), CheckOSVersion)
		if (len(got) == 1) != tc.warn || len(got) > 1 {
			t.Errorf("%s %s against %+v: %v", tc.id, tc.version, tc.x, got)
		}
	}
	f := preparedOK()
	f.OSID, f.OSVersionID, f.OSPrettyName = "fedora", "26.04", "Fedora Linux 26.04"
	if got, want := findingsOf(CheckHost(f, linuxWorker, labExpect), CheckOSVersion),
		[]string{"warning: Fedora Linux 26.04 (fedora 26.04), the procedure is written for ubuntu 26.04"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWindowsInstallationType: Server and Server Core pass, anything else
// read (a client edition) warns, nothing read is not guessed at.
func TestWindowsInstallationType(t *testing.T) {
	for typ, warn := range map[string]bool{"Server": false, "Server Core": false, "Client": true, "Nano Server": true, "": false} {
		f := &hostfacts.Host{Host: winWorker.Name, WindowsBuild: "26100", WindowsInstallationType: typ}
		got := findingsOf(CheckHost(f, winWorker, labExpect), CheckOSVersion)
		if (len(got) == 1) != warn || len(got) > 1 {
			t.Errorf("installation type %q: %v", typ, got)
		}
		if warn && len(got) == 1 && got[0] != fmt.Sprintf("warning: installation type %q; the guide uses Windows Server (Core)", typ) {
			t.Errorf("message: %s", got[0])
		}
	}
}

// TestContainerHostMessage names the cgroup version, or says it is unknown.
func TestContainerHostMessage(t *testing.T) {
	for v, want := range map[string]string{"v1": "(cgroup v1)", "v2": "(cgroup v2)", "": "(cgroup version unknown)"} {
		f := preparedOK()
		f.Container, f.CgroupVersion = "lxc", v
		got := findingsOf(CheckHost(f, linuxWorker, labExpect), CheckContainerHost)
		if len(got) != 1 || !strings.Contains(got[0], "the host is a lxc container "+want+":") {
			t.Errorf("cgroup %q: %v", v, got)
		}
	}
}

// TestCheckClusterOrder: by check in list order, then host in the order
// the hosts were given.
func TestCheckClusterOrder(t *testing.T) {
	got := CheckCluster([]*hostfacts.Host{
		{Host: "c", ProductUUID: "u1", MachineID: "m1"},
		{Host: "a", ProductUUID: "u1", MachineID: "m1"},
		{Host: "b", ProductUUID: "u1", MachineID: "m2"},
	})
	var s []string
	for _, f := range got {
		s = append(s, f.Check+"@"+f.Host)
	}
	want := []string{"product-uuid-unique@c", "product-uuid-unique@a", "product-uuid-unique@b", "machine-id-unique@c", "machine-id-unique@a"}
	if !slices.Equal(s, want) {
		t.Errorf("got %v, want %v", s, want)
	}
}

// TestPostPrepareDefaults: an Expect without a wait or poll interval gets
// the defaults (3 min, every 10 s), as the dry run says.
func TestPostPrepareDefaults(t *testing.T) {
	for _, tc := range []struct {
		wait, poll time.Duration
		want       string
	}{
		{0, 0, "every 10s for up to 3m0s"},
		{-time.Second, -time.Second, "every 10s for up to 3m0s"},
		{time.Minute, time.Second, "every 1s for up to 1m0s"},
	} {
		x := labExpect
		x.PostPrepareWait, x.PostPreparePoll = tc.wait, tc.poll
		_, post := boundPhases(nil, []engine.Host{linuxWorker}, x, nil)
		acts, err := engine.Impl(post).(engine.DryRunner).DryRun(context.Background(), linuxWorker)
		if err != nil || len(acts) != 1 || !strings.HasSuffix(acts[0], " as errors, "+tc.want+" while the clock synchronises") {
			t.Errorf("wait %v poll %v: %q %v, want %q", tc.wait, tc.poll, acts, err, tc.want)
		}
	}
}

// TestClusterPhaseGathersWhatIsMissing: after "preflight" the cluster
// phase compares the facts it gathered; run alone (a resumed run) it
// gathers them itself, and a host it cannot reach is named.
func TestClusterPhaseGathersWhatIsMissing(t *testing.T) {
	hosts := []engine.Host{
		{Name: "node-a", Role: engine.RoleWorker, OS: engine.Linux},
		{Name: "node-b", Role: engine.RoleWorker, OS: engine.Linux},
	}
	var mu sync.Mutex
	calls := map[string]int{}
	unreachable := ""
	runner := func(_ context.Context, host string) (hostfacts.Runner, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[host]++
		if host == unreachable {
			return nil, errors.New("no route to host")
		}
		return hostfactstest.Runner{Out: func(time.Time) string {
			return "### machine-id\nid-" + host + "\n### product_uuid\nuuid-" + host + "\n"
		}}, nil
	}
	run := func(only ...string) error {
		before, _ := boundPhases(runner, hosts, Expect{}, nil)
		e, err := engine.New(before, hosts, engine.Options{Only: only})
		if err != nil {
			t.Fatal(err)
		}
		return e.Run(context.Background())
	}
	if err := run(); err != nil || calls["node-a"] != 1 || calls["node-b"] != 1 {
		t.Errorf("preflight then preflight-cluster: %v, gathered %v (once per host)", err, calls)
	}
	clear(calls)
	if err := run("preflight-cluster"); err != nil || calls["node-a"] != 1 || calls["node-b"] != 1 {
		t.Errorf("preflight-cluster alone: %v, gathered %v (once per host)", err, calls)
	}
	unreachable = "node-b"
	err := run("preflight-cluster")
	if err == nil || !strings.Contains(err.Error(), "node-b: no route to host") || strings.Contains(err.Error(), "node-a") {
		t.Errorf("an unreachable host: %v", err)
	}
}

// TestHostPhaseDryRun lists the checks and the ports of the node's role.
func TestHostPhaseDryRun(t *testing.T) {
	before, _ := boundPhases(nil, []engine.Host{controlPl}, labExpect, nil)
	acts, err := engine.Impl(before[0]).(engine.DryRunner).DryRun(context.Background(), controlPl)
	want := []string{
		"connect over SSH and read facts (read-only): OS, product_uuid, machine id, swap, time sync, clock, k8s-lab-api.example.com resolution, listening ports",
		"check os-version, swap, cgroup-version, container-host, containerd-version, facts-readable, time-sync, clock-skew, api-name-resolves, port-free " +
			"(ports 6443, 2379, 2380, 10257, 10259, 10250, 10256 must be free; time-sync, clock-skew, api-name-resolves only warn: the preparation sets them up)",
	}
	if err != nil || !slices.Equal(acts, want) {
		t.Errorf("got %q %v, want %q", acts, err, want)
	}
}
