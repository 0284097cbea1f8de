package preflight

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

var (
	linuxWorker = engine.Host{Name: "k8s-lab-node-1", Role: engine.RoleWorker, OS: engine.Linux}
	controlPl   = engine.Host{Name: "k8s-lab-master-1", Role: engine.RoleControlPlane, OS: engine.Linux}
	winWorker   = engine.Host{Name: "k8s-lab-win-1", Role: engine.RoleWorker, OS: engine.Windows}
	labExpect   = Expect{LinuxID: "ubuntu", LinuxVersionID: "26.04", WindowsBuilds: map[string]string{"k8s-lab-win-1": "10.0.26100"},
		APIName: "k8s-lab-api.example.com", APIAddresses: []string{"192.168.10.23"}}
)

func checks(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+":"+f.Check)
	}
	slices.Sort(out)
	return out
}

func TestCheckHost(t *testing.T) {
	good := func() *hostfacts.Host {
		return &hostfacts.Host{OSID: "ubuntu", OSVersionID: "26.04", ProductUUID: "u", MachineID: "m", SwapKnown: true, TimeSynced: "yes",
			Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{22: true}}
	}
	tests := []struct {
		name  string
		host  engine.Host
		facts func() *hostfacts.Host
		x     Expect
		want  []string
	}{
		{"clean Linux worker", linuxWorker, good, labExpect, nil},
		{"swap on", linuxWorker, func() *hostfacts.Host { f := good(); f.SwapDevices = []string{"/swap.img"}; return f }, labExpect, []string{"error:swap"}},
		{"other distribution", linuxWorker, func() *hostfacts.Host { f := good(); f.OSID, f.OSVersionID = "debian", "11"; return f }, labExpect, []string{"warning:os-version"}},
		{"clock not synced", linuxWorker, func() *hostfacts.Host { f := good(); f.TimeSynced = "no"; return f }, labExpect, []string{"warning:time-sync"}},
		{"clock far off", linuxWorker, func() *hostfacts.Host { f := good(); f.Clock = clockAt(-2 * time.Minute); return f }, labExpect, []string{"warning:clock-skew"}},
		{"clock a bit off", linuxWorker, func() *hostfacts.Host { f := good(); f.Clock = clockAt(20 * time.Second); return f }, labExpect, []string{"warning:clock-skew"}},
		{"API name missing", linuxWorker, func() *hostfacts.Host { f := good(); f.Resolved = nil; return f }, labExpect, []string{"warning:api-name-resolves"}},
		{"API name wrong", linuxWorker, func() *hostfacts.Host { f := good(); f.Resolved = []string{"192.168.10.99"}; return f }, labExpect, []string{"warning:api-name-resolves"}},
		{"kubelet port busy on worker", linuxWorker, func() *hostfacts.Host { f := good(); f.Listening[10250] = true; return f }, labExpect, []string{"error:port-free"}},
		{"etcd port busy on control plane", controlPl, func() *hostfacts.Host { f := good(); f.Listening[2379] = true; f.Listening[6443] = true; return f }, labExpect, []string{"error:port-free", "error:port-free"}},
		{"etcd port on worker is fine", linuxWorker, func() *hostfacts.Host { f := good(); f.Listening[2379] = true; return f }, labExpect, nil},
		{"re-run: ports in use expected", controlPl, func() *hostfacts.Host { f := good(); f.Listening[6443] = true; return f }, Expect{AlreadyInstalled: true}, nil},
		{"joined node: its own ports", controlPl, func() *hostfacts.Host {
			f := good()
			f.Listening[6443], f.Listening[10250], f.KubeletConfigured = true, true, true
			return f
		}, labExpect, nil},
		{"product_uuid unreadable", linuxWorker, func() *hostfacts.Host { f := good(); f.ProductUUID = ""; return f }, labExpect, []string{"warning:facts-readable"}},
		{"Windows 2025 as specified", winWorker, func() *hostfacts.Host {
			return &hostfacts.Host{WindowsBuild: "26100", WindowsInstallationType: "Server Core", ProductUUID: "u", MachineID: "m", TimeSynced: "yes", Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}, AutoUpdate: "off", LanguageMode: "FullLanguage"}
		}, labExpect, nil},
		{"Windows 2022 where 2025 is specified", winWorker, func() *hostfacts.Host {
			return &hostfacts.Host{WindowsBuild: "20348", ProductUUID: "u", MachineID: "m", TimeSynced: "yes", Clock: clockAt(0), Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}, AutoUpdate: "off", LanguageMode: "FullLanguage"}
		}, labExpect, []string{"error:windows-build"}},
		{"Windows on local clock", winWorker, func() *hostfacts.Host {
			return &hostfacts.Host{WindowsBuild: "26100", ProductUUID: "u", MachineID: "m", TimeSynced: "no", TimeSource: "Local CMOS Clock", Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}, AutoUpdate: "off", LanguageMode: "FullLanguage", Clock: clockAt(0)}
		}, labExpect, []string{"warning:time-sync"}},
		{"clock not measured", linuxWorker, func() *hostfacts.Host { f := good(); f.Clock = hostfacts.Clock{Detail: "no answer"}; return f }, labExpect, []string{"warning:clock-skew"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts()
			f.Host = tc.host.Name
			got := CheckHost(f, tc.host, tc.x)
			if !slices.Equal(checks(got), tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for _, g := range got {
				if g.Host != tc.host.Name || g.Message == "" {
					t.Errorf("finding lacks host or message: %+v", g)
				}
			}
		})
	}
}

func TestCheckCluster(t *testing.T) {
	facts := []*hostfacts.Host{
		{Host: "a", ProductUUID: "u1", MachineID: "m1"},
		{Host: "b", ProductUUID: "u1", MachineID: "m2"}, // cloned VM, new machine-id
		{Host: "c", ProductUUID: "u3", MachineID: "m1"},
		{Host: "d", ProductUUID: "", MachineID: ""}, // unknown: not a duplicate
		{Host: "e", ProductUUID: "", MachineID: ""},
	}
	got := CheckCluster(facts)
	var s []string
	for _, f := range got {
		s = append(s, f.Check+"@"+f.Host)
	}
	slices.Sort(s)
	want := []string{"machine-id-unique@a", "machine-id-unique@c", "product-uuid-unique@a", "product-uuid-unique@b"}
	if !slices.Equal(s, want) {
		t.Errorf("got %v, want %v", s, want)
	}
	if !strings.Contains(got[0].Message, "a, b") {
		t.Errorf("message must name the hosts sharing it: %s", got[0].Message)
	}
}

func TestApplyIgnore(t *testing.T) {
	fs := []Finding{{Check: CheckSwap, Severity: finding.Error}, {Check: CheckPortFree, Severity: finding.Error}, {Check: CheckOSVersion, Severity: finding.Warning}}
	errs, warns := Apply(fs, []string{"swap"})
	if len(errs) != 1 || errs[0].Check != CheckPortFree || len(warns) != 2 {
		t.Errorf("errs %v warns %v", errs, warns)
	}
	if errs, _ := Apply(fs, []string{"all"}); len(errs) != 0 {
		t.Error("all ignores everything")
	}
}

// TestPreflightPhasesClonedHosts runs the preflight phases through the
// engine on two "hosts" that are in fact the same machine — exactly the
// cloned-template case the guide warns about: the machine id is shared.
func TestPreflightPhasesClonedHosts(t *testing.T) {
	if _, err := os.Stat("/etc/machine-id"); err != nil {
		t.Skip("this machine has no /etc/machine-id")
	}
	c, _ := hostfactstest.Dial(t, engine.Linux)
	hosts := []engine.Host{
		{Name: "clone-a", Role: engine.RoleWorker, OS: engine.Linux},
		{Name: "clone-b", Role: engine.RoleWorker, OS: engine.Linux},
	}
	runner := func(context.Context, string) (hostfacts.Runner, error) { return c, nil }
	// This machine may run cgroup v1 (the lab machine does): accepted here.
	phases, _ := boundPhases(runner, hosts, Expect{APIName: "localhost", AlreadyInstalled: true, AllowCgroupV1: true}, []string{CheckTimeSync, CheckOSVersion})
	var events []engine.Event
	rep := engine.ReporterFunc(func(e engine.Event) { events = append(events, e) })
	e, err := engine.New(phases, hosts, engine.Options{Reporter: rep, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = e.Run(ctx)
	pes := engine.PhaseErrors(err)
	if len(pes) != 1 || pes[0].Phase != "preflight-cluster" || !strings.Contains(err.Error(), "machine-id-unique") ||
		!strings.Contains(err.Error(), "clone-a, clone-b") {
		t.Fatalf("want the shared machine id reported, got %v", err)
	}
	warned := false
	for _, ev := range events {
		if ev.Type == engine.EventWarning && ev.Host == "clone-a" {
			warned = true
		}
	}
	if !warned {
		t.Error("ignored or unknown checks should be reported as warnings")
	}
}

// The checks the preparation fixes are warnings before it (a fresh node on
// the local CMOS clock, with no DNS server that knows the API name, gets
// through preflight) and errors after it; the other checks do not run
// after it.
func TestSeverityBeforeAndAfterPrepare(t *testing.T) {
	fresh := &hostfacts.Host{Host: winWorker.Name, WindowsBuild: "26100", ProductUUID: "u", MachineID: "m", TimeSynced: "no",
		TimeSource: "Local CMOS Clock", Clock: clockAt(5 * time.Minute), Listening: map[int]bool{10250: true},
		AutoUpdate: "on", LanguageMode: "FullLanguage"}
	before := CheckHost(fresh, winWorker, labExpect)
	if got, want := checks(before), []string{"error:port-free", "warning:api-name-resolves", "warning:clock-skew", "warning:time-sync", "warning:windows-update"}; !slices.Equal(got, want) {
		t.Fatalf("before preparation: got %v, want %v", got, want)
	}
	for _, f := range before {
		if f.Severity == finding.Warning && !strings.Contains(f.Message, "post-prepare checks it again") {
			t.Errorf("a downgraded finding must say it is checked again: %s", f)
		}
	}
	after := CheckPrepared(fresh, winWorker, labExpect)
	if got, want := checks(after), []string{"error:api-name-resolves", "error:clock-skew", "error:time-sync", "error:windows-update"}; !slices.Equal(got, want) {
		t.Fatalf("after preparation: got %v, want %v", got, want)
	}
	synced := *fresh
	synced.TimeSynced, synced.TimeSource, synced.Clock, synced.Resolved = "yes", "ntp.example.com,0x8", clockAt(0), []string{"192.168.10.23"}
	synced.AutoUpdate = "off"
	if got := CheckPrepared(&synced, winWorker, labExpect); len(got) != 0 {
		t.Errorf("a prepared node: %v", got)
	}
	errs, _ := Apply(after, []string{CheckTimeSync, CheckClockSkew, CheckWindowsUpdate})
	if len(errs) != 1 || errs[0].Check != CheckAPIName {
		t.Errorf("--ignore-preflight-errors applies to post-prepare too: %v", errs)
	}
}

func TestChecksList(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks() {
		if seen[c.Name()] || c.Name() != strings.ToLower(c.Name()) || c.Doc == "" || c.Severity == "" || c.check == nil {
			t.Errorf("check %q: duplicate, not lower case, or without doc, severity or function", c.Name())
		}
		seen[c.Name()] = true
	}
	if seen[IgnoreAll] {
		t.Errorf("%q is reserved for --ignore-preflight-errors", IgnoreAll)
	}
	// Every finding a check can produce carries its own name.
	f := &hostfacts.Host{Host: "x", SwapKnown: true, SwapDevices: []string{"/s"}, TimeSynced: "no", Clock: clockAt(time.Hour),
		Listening: map[int]bool{10250: true}}
	for _, fd := range CheckPrepared(f, linuxWorker, labExpect) {
		if !seen[fd.Check] {
			t.Errorf("finding of an unlisted check: %v", fd)
		}
	}
	if got := NodeChecks(winWorker, ScopeNode, ScopePrepared); slices.Contains(got, CheckSwap) || !slices.Contains(got, CheckWindowsBuild) {
		t.Errorf("Windows node checks: %v", got)
	}
	if got := NodeChecks(linuxWorker, ScopeNode, ScopePrepared); !slices.Contains(got, CheckSwap) || slices.Contains(got, CheckWindowsBuild) {
		t.Errorf("Linux node checks: %v", got)
	}
}

func TestValidateIgnore(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []string
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"swap", "Clock-Skew"}, []string{"swap", "clock-skew"}, ""},
		{[]string{"swap", "swap"}, []string{"swap"}, ""},
		{[]string{"all"}, []string{"all"}, ""},
		{[]string{"ALL"}, []string{"all"}, ""},
		{[]string{"swapp"}, nil, `unknown preflight check "swapp"; did you mean "swap"?`},
		{[]string{"time-synk"}, nil, `did you mean "time-sync"?`},
		{[]string{"api-name"}, nil, `unknown preflight check "api-name" (known:`},
		{[]string{"all", "swap"}, nil, `"all" ignores every check`},
		{[]string{""}, nil, "empty check name"},
		{[]string{"Swap", "portfree"}, nil, `did you mean "port-free"?`},
	} {
		got, err := ValidateIgnore(tc.in)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && !slices.Equal(got, tc.want):
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	// Every listed name is accepted.
	if _, err := ValidateIgnore(Names()); err != nil {
		t.Error(err)
	}
}

// TestDocTable keeps docs/apply.md's preflight table equal to Checks().
func TestDocTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/apply.md")
	if err != nil {
		t.Fatal(err)
	}
	table := DocTable()
	if !strings.Contains(string(doc), "\n"+table+"\n") {
		t.Errorf("docs/apply.md's preflight table is stale; replace it with:\n\n%s", table)
	}
	for _, n := range Names() {
		if !strings.Contains(table, "| `"+n+"` |") {
			t.Errorf("table lacks %s", n)
		}
	}
}

// windowsFactsShim is a powershell stand-in that decodes the command with
// the repository's stand-in (powershell-real) and answers the clock command
// with this machine's clock, the gathering script with the Windows fixture
// in the script's own marker and a time source that is the local CMOS
// clock for the first $SYNC_AFTER gatherings, then the NTP server (w32tm
// synchronising after prepare.ps1 configured it).
const windowsFactsShim = `#!/bin/sh
script=$(powershell-real "$@") || exit $?
case "$script" in
*'[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()'*) echo $(($(date +%s%N) / 1000000)); exit 0 ;;
esac
n=$(cat "$SHIM_DIR/calls" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$SHIM_DIR/calls"
m=$(printf '%s\n' "$script" | sed -n "s/^[$]hfM = '\\([A-Za-z0-9-]*\\)'.*/\\1/p")
src='router.example.com,0x8'; [ "$n" -le "$SYNC_AFTER" ] && src='Local CMOS Clock'
sed -e "s/^Source: .*/Source: $src\r/" -e "s/` + hostfactstest.Marker + `/$m/" "$FIXTURE"
`

// TestPostPrepareWaitsForTheClock runs post-prepare through the engine
// over SSH: the clock synchronises on the third look, within the wait; with
// a wait too short for that, the phase fails after one look, naming
// time-sync.
func TestPostPrepareWaitsForTheClock(t *testing.T) {
	fixturePath := filepath.Join(t.TempDir(), hostfactstest.HostWindows)
	if err := os.WriteFile(fixturePath, []byte(hostfactstest.Fixture(t, hostfactstest.HostWindows)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		wait    time.Duration
		wantErr bool
		calls   string
	}{
		{"synchronises within the wait", 20 * time.Second, false, "3"},
		{"does not within the wait", time.Millisecond, true, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, srv := hostfactstest.Dial(t, engine.Windows)
			real, err := os.ReadFile(filepath.Join(srv.Dir, "bin", "powershell"))
			if err != nil {
				t.Fatal(err)
			}
			srv.Shim("powershell-real", string(real))
			srv.Shim("powershell", "#!/bin/sh\nSYNC_AFTER=2 FIXTURE="+fixturePath+" exec sh \"$SHIM_DIR/bin/facts.sh\" \"$@\"\n")
			if err := os.WriteFile(filepath.Join(srv.Dir, "bin", "facts.sh"), []byte(windowsFactsShim), 0o755); err != nil {
				t.Fatal(err)
			}
			hosts := []engine.Host{winWorker}
			x := labExpect
			x.PostPrepareWait, x.PostPreparePoll = tc.wait, 100*time.Millisecond
			runner := func(context.Context, string) (hostfacts.Runner, error) { return c, nil }
			_, post := boundPhases(runner, hosts, x, nil)
			e, err := engine.New([]engine.Phase{post}, hosts, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = e.Run(ctx)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil && (!strings.Contains(err.Error(), "[time-sync] k8s-lab-win-1") || !strings.Contains(err.Error(), "Local CMOS Clock")) {
				t.Errorf("the failure must name the check, host and source: %v", err)
			}
			calls, _ := os.ReadFile(filepath.Join(srv.Dir, "calls"))
			if got := strings.TrimSpace(string(calls)); got != tc.calls {
				t.Errorf("gathered %s times, want %s", got, tc.calls)
			}
		})
	}
}
