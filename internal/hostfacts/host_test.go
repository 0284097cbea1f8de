package hostfacts_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

var (
	linuxWorker = engine.Host{Name: "k8s-lab-node-1", Role: engine.RoleWorker, OS: engine.Linux}
	winWorker   = engine.Host{Name: "k8s-lab-win-1", Role: engine.RoleWorker, OS: engine.Windows}
)

// hostFixture parses a host script fixture as host h's.
func hostFixture(t *testing.T, name string, h engine.Host) *hostfacts.Host {
	t.Helper()
	f, err := hostfacts.ParseHost(h, hostfactstest.Fixture(t, name), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseHostLinux(t *testing.T) {
	f := hostFixture(t, hostfactstest.HostUbuntu, linuxWorker)
	if f.OSID != "ubuntu" || f.OSVersionID != "26.04" || f.OSPrettyName != "Ubuntu 26.04 LTS" {
		t.Errorf("os-release: %q %q %q", f.OSID, f.OSVersionID, f.OSPrettyName)
	}
	if f.ProductUUID != "4c4c4544-0042-3510-8051-b7c04f4e3732" || f.MachineID != "a1b2c3d4e5f60718293a4b5c6d7e8f90" {
		t.Errorf("ids: %q %q", f.ProductUUID, f.MachineID)
	}
	if !f.SwapKnown || !slices.Equal(f.SwapDevices, []string{"/swap.img"}) {
		t.Errorf("swap: %v %v", f.SwapKnown, f.SwapDevices)
	}
	if f.ContainerdCandidate != "2.2.1-0ubuntu1" {
		t.Errorf("containerd candidate %q", f.ContainerdCandidate)
	}
	if f.TimeSynced != "yes" || !slices.Equal(f.Resolved, []string{"192.168.10.23"}) {
		t.Errorf("time/resolve: %q %v", f.TimeSynced, f.Resolved)
	}
	// 0x35=53 and 0x16=22 listen on v4, 0x280A=10250 on v6; the
	// established connection on 22 is not a listener.
	var ports []int
	for p := range f.Listening {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	if !slices.Equal(ports, []int{22, 53, 10250}) {
		t.Errorf("listening: %v", ports)
	}
}

func TestParseHostWindows(t *testing.T) {
	f := hostFixture(t, hostfactstest.HostWindows, winWorker)
	if f.WindowsBuild != "26100" || f.WindowsUBR != "33438" || f.WindowsInstallationType != "Server Core" || f.WindowsProductName != "Windows Server 2025 Datacenter" {
		t.Errorf("windows: %+v", f)
	}
	if f.TimeSynced != "yes" || f.TimeSource != "router.example.com,0x8" {
		t.Errorf("w32tm: %q %q", f.TimeSynced, f.TimeSource)
	}
	if f.Hostname != "k8s-lab-win-1.example.com" || !f.Listening[5985] || f.Listening[10250] {
		t.Errorf("hostname/listen: %q %v", f.Hostname, f.Listening)
	}
	if f.AutoUpdate != "off" || f.AUOptions != "" || f.RebootPending != nil || f.LanguageMode != "FullLanguage" {
		t.Errorf("update policy %q %q, reboot pending %q, language mode %q", f.AutoUpdate, f.AUOptions, f.RebootPending, f.LanguageMode)
	}
}

// TestGatherHostOverSSH runs the real Linux host script on this machine
// through a loopback SSH server and compares with what Go reads directly.
func TestGatherHostOverSSH(t *testing.T) {
	c, _ := hostfactstest.Dial(t, engine.Linux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := hostfacts.GatherHost(ctx, c, linuxWorker, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Listening[port] {
		t.Errorf("port %d we listen on is not seen as listening: %v", port, f.Listening)
	}
	if !slices.Contains(f.Resolved, "127.0.0.1") {
		t.Errorf("localhost resolved to %v", f.Resolved)
	}
	if osr, err := os.ReadFile("/etc/os-release"); err == nil {
		if id := hostfacts.ParseOSRelease(string(osr))["ID"]; id == "" || f.OSID != id {
			t.Errorf("OS ID %q, /etc/os-release says %q", f.OSID, id)
		}
	}
	if mid, err := os.ReadFile("/etc/machine-id"); err == nil && f.MachineID != strings.TrimSpace(string(mid)) {
		t.Errorf("machine id %q", f.MachineID)
	}
	if skew, unc := f.Clock.Skew(); !f.Clock.Sampled || skew.Abs() > unc+50*time.Millisecond {
		t.Errorf("clock skew against ourselves: %s ± %s (%+v)", skew, unc, f.Clock)
	}
	if _, err := os.Stat("/proc/swaps"); err == nil && !f.SwapKnown {
		t.Error("swap state unknown although /proc/swaps exists")
	}
	// The containerd apt-get would install, as apt-cache says it here.
	if out, err := exec.CommandContext(ctx, "apt-cache", "policy", "containerd").Output(); err == nil {
		want := ""
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Candidate: "); ok {
				want = v
			}
		}
		if f.ContainerdCandidate != want {
			t.Errorf("containerd candidate %q, apt-cache policy says %q", f.ContainerdCandidate, want)
		}
	} else if f.ContainerdCandidate != "" {
		t.Errorf("containerd candidate %q without apt-cache", f.ContainerdCandidate)
	}
}

// TestGatherHostRefusesAFlood: a host whose fact script prints more
// than the transport keeps whole (its hostname command answers with 40 MiB
// here, through the loopback sshd) fails the gathering with a message that
// says how much it sent; exactly what the transport keeps whole is still
// parsed.
func TestGatherHostRefusesAFlood(t *testing.T) {
	c, srv := hostfactstest.Dial(t, engine.Linux)
	srv.Shim("hostname", "#!/bin/sh\nhead -c 41943040 /dev/zero\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := hostfacts.GatherHost(ctx, c, linuxWorker, "localhost")
	// 40 MiB of hostname and the rest of the facts.
	sent := regexp.MustCompile(`gathering facts: ` + linuxWorker.Name + ` sent 40\.[01] MiB \(([0-9]+) bytes\) on standard output`)
	var m []string
	if err != nil {
		m = sent.FindStringSubmatch(err.Error())
	}
	if m == nil || len(m[1]) != 8 || m[1] < "41943040" || !strings.Contains(err.Error(), "more than the 2.0 MiB hybridctl reads whole") {
		t.Fatalf("err = %v", err)
	}
	// A long but acceptable answer (1.5 MiB of name) is read.
	srv.Shim("hostname", "#!/bin/sh\nhead -c 1572864 /dev/zero | tr '\\0' x; echo\n")
	f, err := hostfacts.GatherHost(ctx, c, linuxWorker, "localhost")
	if err != nil || len(f.Hostname) != 1572864 {
		t.Fatalf("1.5 MiB: %d bytes of hostname, %v", len(f.Hostname), err)
	}
}

// TestParseHostNearMisses: the parsers on the inputs next to the usual ones.
func TestParseHostNearMisses(t *testing.T) {
	osr := hostfacts.ParseOSRelease("EMPTY=\"\"\nONE=\"x\"\nESC=\"a \\\"q\\\" \\\\ \\$HOME \\`date\\` \\n\"\n" +
		"TRAIL=\"ends in \\\"\nSINGLE='it \\\"stays\\\"'\n")
	for k, want := range map[string]string{"EMPTY": "", "ONE": "x", "ESC": `a "q" \ $HOME ` + "`date`" + ` \n`, "TRAIL": `ends in \`, "SINGLE": `it \"stays\"`} {
		if got, ok := osr[k]; !ok || got != want {
			t.Errorf("%s: got %q (%v), want %q", k, got, ok, want)
		}
	}
	// The local address is the second field and the state the fourth,
	// however few fields follow; an address without a host part still has
	// its port after the colon.
	ports := hostfacts.ParseProcNetTCP("0: 00000000:0016 00000000:0000 0A\n1: :01BB 00000000:0000 0A 0\n2: 00000000:0050 00000000:0000\n")
	if !ports[22] || !ports[443] || ports[80] || len(ports) != 2 {
		t.Errorf("listening: %v", ports)
	}

	h := linuxWorker
	if f := hostfactstest.ParseHost(t, h, "### kubelet-conf\n### other\n"); f.KubeletConfigured {
		t.Error("an empty kubelet-conf section: not configured")
	}
	if f := hostfactstest.ParseHost(t, h, "### kubelet-conf\npresent\n"); !f.KubeletConfigured {
		t.Error("kubelet-conf present: configured")
	}
	if _, err := hostfacts.ParseHost(h, "### hybridctl kubelet-conf\npresent\n", hostfactstest.Marker); err == nil || !strings.Contains(err.Error(), "no section") {
		t.Errorf("the old fixed marker is not a section: %v", err)
	}
	if _, err := hostfacts.ParseHost(h, hostfactstest.Sections("### machine-id\na\n### machine-id\nb\n"), hostfactstest.Marker); err == nil || !strings.Contains(err.Error(), `k8s-lab-node-1: reading the facts script's output: section "machine-id" appears twice`) {
		t.Errorf("a section twice: %v", err)
	}
	// A section line longer than the scanner's first buffer (64 KiB) does
	// not end the output: the sections after it are read.
	long := "### os-release\nPRETTY_NAME=\"" + strings.Repeat("x", 100_000) + "\"\nID=ubuntu\n### machine-id\nABC\n"
	if f := hostfactstest.ParseHost(t, h, long); f.OSID != "ubuntu" || f.MachineID != "abc" || len(f.OSPrettyName) != 100_000 {
		t.Errorf("after a long line: ID %q, machine id %q, name of %d characters", f.OSID, f.MachineID, len(f.OSPrettyName))
	}
}

// TestGatherHostClockSkew: the clock is sampled by its own command, compared
// with the middle of its round trip, half the round trip its uncertainty;
// a host whose clock command prints no time has no sample.
func TestGatherHostClockSkew(t *testing.T) {
	ctx := context.Background()
	sections := func(time.Time) string { return "### hostname\nnode-1\n" }
	f, err := hostfacts.GatherHost(ctx, hostfactstest.Runner{Clock: func(time.Time) string { return "\n" }, Out: sections}, linuxWorker, "api")
	if err != nil {
		t.Fatal(err)
	}
	if f.Clock.Sampled || !strings.Contains(f.Clock.Detail, "not a time") || f.Hostname != "node-1" {
		t.Errorf("no time: %+v, host name %q", f.Clock, f.Hostname)
	}
	// A round trip of 2 s whose host clock is read in its middle, exactly
	// in sync: the skew is within the uncertainty, not off by the round
	// trip. (A round trip stretched by a paused machine is tried again.)
	for try := 0; ; try++ {
		f, err = hostfacts.GatherHost(ctx, hostfactstest.Runner{Delay: 2 * time.Second, Out: sections, Clock: func(t0 time.Time) string {
			return strconv.FormatInt(t0.Add(time.Second).UnixNano(), 10)
		}}, linuxWorker, "api")
		if err != nil {
			t.Fatal(err)
		}
		skew, unc := f.Clock.Skew()
		if unc > 1250*time.Millisecond && try < 3 {
			continue
		}
		if !f.Clock.Sampled || skew.Abs() > 250*time.Millisecond || unc < time.Second {
			t.Errorf("in sync over a 2 s round trip: %s ± %s (%+v)", skew, unc, f.Clock)
		}
		break
	}
	// An output without a section of this run is not believed.
	if _, err := hostfacts.GatherHost(ctx, hostfactstest.Runner{Out: func(time.Time) string { return "" }}, linuxWorker, "api"); err == nil || !strings.Contains(err.Error(), "gathering facts: k8s-lab-node-1: reading the facts script's output: no section") {
		t.Errorf("no sections: %v", err)
	}
}

// TestParseHostWindowsState: the update policy, the pending reboot and the
// language mode as the gathering script prints them, with the near misses
// of each (a NoAutoUpdate that is not exactly 1, a line that only looks
// like a reboot source, a section that never came).
func TestParseHostWindowsState(t *testing.T) {
	const head = "### windows\nCurrentBuild=26100\n"
	for _, tc := range []struct {
		name, out          string
		autoUpdate, auOpts string
		pending            []string
		languageMode       string
	}{
		{"manual", head + "### wu-policy\nNoAutoUpdate=1\nAUOptions=\n### language-mode\nFullLanguage\n", "off", "", nil, "FullLanguage"},
		{"no policy", head + "### wu-policy\nNoAutoUpdate=\nAUOptions=\n", "on", "", nil, ""},
		{"automatic by policy", head + "### wu-policy\r\nNoAutoUpdate=0\r\nAUOptions=4\r\n", "on", "4", nil, ""},
		{"near miss: 10 is not 1", head + "### wu-policy\nNoAutoUpdate=10\n", "on", "", nil, ""},
		{"section missing", head, "", "", nil, ""},
		{"both reboots pending", head + "### reboot-pending\nComponent Based Servicing\r\nWindows Update\n### language-mode\nConstrainedLanguage\n", "", "", []string{"Component Based Servicing", "Windows Update"}, "ConstrainedLanguage"},
		{"near miss: other text", head + "### reboot-pending\nComponent Based Servicing pending\nTrue\n", "", "", nil, ""},
	} {
		f := hostfactstest.ParseHost(t, winWorker, tc.out)
		if f.AutoUpdate != tc.autoUpdate || f.AUOptions != tc.auOpts || !slices.Equal(f.RebootPending, tc.pending) || f.LanguageMode != tc.languageMode {
			t.Errorf("%s: got %q %q %q %q, want %q %q %q %q", tc.name, f.AutoUpdate, f.AUOptions, f.RebootPending, f.LanguageMode,
				tc.autoUpdate, tc.auOpts, tc.pending, tc.languageMode)
		}
	}
	// A Linux host's output with these sections sets none of them.
	f := hostfactstest.ParseHost(t, linuxWorker, "### wu-policy\nNoAutoUpdate=1\n### language-mode\nFullLanguage\n")
	if f.AutoUpdate != "" || f.LanguageMode != "" {
		t.Errorf("Linux: %q %q", f.AutoUpdate, f.LanguageMode)
	}
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add(`PRETTY_NAME="Ubuntu 26.04 LTS"` + "\nID=ubuntu\nVERSION_ID=\"26.04\"\nNAME=\"a \\\"q\\\" \\\\ b\"\n# c\n")
	f.Add("=\n\"\n'a'\nX='\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = hostfacts.ParseOSRelease(s)
	})
}

// FuzzParseHost: whatever a host prints, ParseHost neither panics nor
// hangs. The seeds are the fixtures and the kept corpus
// (testdata/fuzz/FuzzParseHost).
func FuzzParseHost(f *testing.F) {
	f.Add(hostfactstest.Fixture(f, hostfactstest.HostUbuntu), false)
	f.Add(hostfactstest.Fixture(f, hostfactstest.HostWindows), true)
	f.Add(hostfactstest.Sections("### swaps\nFilename\n\n### tcp\n 0: :::: 0A\n"), false)
	f.Add("ID=\"unterminated\nVERSION_ID='x'\n=\n", false)
	f.Fuzz(func(t *testing.T, out string, windows bool) {
		h := engine.Host{Name: "h", Role: engine.RoleWorker, OS: engine.Linux}
		if windows {
			h.OS = engine.Windows
		}
		fa, err := hostfacts.ParseHost(h, out, hostfactstest.Marker)
		if err != nil {
			return
		}
		if fa.Host != "h" || fa.OS != h.OS || fa.Listening == nil {
			t.Fatalf("the host's identity is lost: %q %q %v", fa.Host, fa.OS, fa.Listening)
		}
	})
}

// TestHostWindowsResolveLiteral: an IPv4 literal as the API host is printed as
// it is (Resolve-DnsName would look for an A record of it and find none);
// a name, and text that only starts like an address, are resolved.
func TestHostWindowsResolveLiteral(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"192.168.10.23", "s resolve; '192.168.10.23'\n"},
		{"k8s-lab-api.example.com", "s resolve; (Resolve-DnsName -Name 'k8s-lab-api.example.com' -Type A -DnsOnly).IPAddress\n"},
		{"192.168.10.23.example.com", "s resolve; (Resolve-DnsName -Name '192.168.10.23.example.com' -Type A -DnsOnly).IPAddress\n"},
		{"fd00::23", "s resolve; (Resolve-DnsName -Name 'fd00::23' -Type A -DnsOnly).IPAddress\n"},
	} {
		if s := hostfacts.HostWindowsScript(hostfactstest.Marker, tc.host); !strings.Contains(s, tc.want) {
			t.Errorf("%s: the script lacks %q", tc.host, tc.want)
		}
	}
}

// TestParseHostValueNearMisses: each Linux value the checks read on both
// sides of what is believed (one word, not a line with spaces), each
// capability bit alone, and each Windows time source that means "not
// synchronised" beside one that does.
func TestParseHostValueNearMisses(t *testing.T) {
	for _, tc := range []struct {
		name, out            string
		container, candidate string
		capsKnown            bool
		resource, sysTime    bool
	}{
		{"one word each", "### container\nlxc\n### containerd-candidate\n2.2.1-0ubuntu1\n### capbnd\n0000000000000000\n", "lxc", "2.2.1-0ubuntu1", true, false, false},
		{"text with spaces", "### container\nnot a container\n### containerd-candidate\nnot installed\n", "", "", false, false, false},
		{"a tab", "### container\nlxc\tx\n### containerd-candidate\n2.0\tx\n", "", "", false, false, false},
		{"CAP_SYS_RESOURCE alone", "### capbnd\n0000000001000000\n", "", "", true, true, false},
		{"CAP_SYS_TIME alone", "### capbnd\n0000000002000000\n", "", "", true, false, true},
		{"not hexadecimal", "### capbnd\nxyz\n", "", "", false, false, false},
	} {
		f := hostfactstest.ParseHost(t, linuxWorker, tc.out)
		if f.Container != tc.container || f.ContainerdCandidate != tc.candidate || f.CapsKnown != tc.capsKnown || f.CapSysResource != tc.resource || f.CapSysTime != tc.sysTime {
			t.Errorf("%s: container %q, candidate %q, caps %v %v %v", tc.name, f.Container, f.ContainerdCandidate, f.CapsKnown, f.CapSysResource, f.CapSysTime)
		}
	}
	for source, want := range map[string]string{
		"Local CMOS Clock":          "no",
		"Free-running System Clock": "no",
		"time.windows.com,0x9":      "yes",
		"":                          "",
	} {
		f := hostfactstest.ParseHost(t, winWorker, "### w32tm\nLeap Indicator: 0(no warning)\nSource: "+source+"\n")
		if f.TimeSynced != want || f.TimeSource != source {
			t.Errorf("source %q: synced %q (%q), want %q", source, f.TimeSynced, f.TimeSource, want)
		}
	}
}
