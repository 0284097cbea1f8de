package preflight

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

var (
	linuxWorker = provision.Host{Name: "k8s-lab-node-1", Role: provision.RoleWorker, OS: provision.Linux}
	controlPl   = provision.Host{Name: "k8s-lab-master-1", Role: provision.RoleControlPlane, OS: provision.Linux}
	winWorker   = provision.Host{Name: "k8s-lab-win-1", Role: provision.RoleWorker, OS: provision.Windows}
	labExpect   = Expect{LinuxID: "ubuntu", LinuxVersionID: "26.04", WindowsBuilds: map[string]string{"k8s-lab-win-1": "10.0.26100"},
		APIName: "k8s-lab-api.example.com", APIAddresses: []string{"192.168.10.23"}}
)

func fixture(t *testing.T, name string, h provision.Host) *Facts {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(h, string(data))
}

func TestParseLinux(t *testing.T) {
	f := fixture(t, "linux-ubuntu-26.04.txt", linuxWorker)
	if f.OSID != "ubuntu" || f.OSVersionID != "26.04" || f.OSPrettyName != "Ubuntu 26.04 LTS" {
		t.Errorf("os-release: %q %q %q", f.OSID, f.OSVersionID, f.OSPrettyName)
	}
	if f.ProductUUID != "4c4c4544-0042-3510-8051-b7c04f4e3732" || f.MachineID != "a1b2c3d4e5f60718293a4b5c6d7e8f90" {
		t.Errorf("ids: %q %q", f.ProductUUID, f.MachineID)
	}
	if !f.SwapKnown || !slices.Equal(f.SwapDevices, []string{"/swap.img"}) {
		t.Errorf("swap: %v %v", f.SwapKnown, f.SwapDevices)
	}
	if f.TimeSynced != "yes" || f.HostEpoch != 1795000000 || !slices.Equal(f.Resolved, []string{"192.168.10.23"}) {
		t.Errorf("time/resolve: %q %d %v", f.TimeSynced, f.HostEpoch, f.Resolved)
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

func TestParseWindows(t *testing.T) {
	f := fixture(t, "windows-server-2025.txt", winWorker)
	if f.WindowsBuild != "26100" || f.WindowsUBR != "33438" || f.WindowsInstallationType != "Server Core" || f.WindowsProductName != "Windows Server 2025 Datacenter" {
		t.Errorf("windows: %+v", f)
	}
	if f.TimeSynced != "yes" || f.TimeSource != "router.example.com,0x8" {
		t.Errorf("w32tm: %q %q", f.TimeSynced, f.TimeSource)
	}
	if f.Hostname != "k8s-lab-win-1.example.com" || !f.Listening[5985] || f.Listening[10250] {
		t.Errorf("hostname/listen: %q %v", f.Hostname, f.Listening)
	}
}

func checks(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+":"+f.Check)
	}
	slices.Sort(out)
	return out
}

func TestCheckHost(t *testing.T) {
	good := func() *Facts {
		return &Facts{OSID: "ubuntu", OSVersionID: "26.04", ProductUUID: "u", MachineID: "m", SwapKnown: true, TimeSynced: "yes",
			ClockSkewKnown: true, Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{22: true}}
	}
	tests := []struct {
		name  string
		host  provision.Host
		facts func() *Facts
		x     Expect
		want  []string
	}{
		{"clean Linux worker", linuxWorker, good, labExpect, nil},
		{"swap on", linuxWorker, func() *Facts { f := good(); f.SwapDevices = []string{"/swap.img"}; return f }, labExpect, []string{"error:swap"}},
		{"other distribution", linuxWorker, func() *Facts { f := good(); f.OSID, f.OSVersionID = "debian", "12"; return f }, labExpect, []string{"warning:os-version"}},
		{"clock not synced", linuxWorker, func() *Facts { f := good(); f.TimeSynced = "no"; return f }, labExpect, []string{"error:time-sync"}},
		{"clock far off", linuxWorker, func() *Facts { f := good(); f.ClockSkew = -2 * time.Minute; return f }, labExpect, []string{"error:clock-skew"}},
		{"clock a bit off", linuxWorker, func() *Facts { f := good(); f.ClockSkew = 20 * time.Second; return f }, labExpect, []string{"warning:clock-skew"}},
		{"API name missing", linuxWorker, func() *Facts { f := good(); f.Resolved = nil; return f }, labExpect, []string{"error:api-name-resolves"}},
		{"API name wrong", linuxWorker, func() *Facts { f := good(); f.Resolved = []string{"192.168.10.99"}; return f }, labExpect, []string{"error:api-name-resolves"}},
		{"kubelet port busy on worker", linuxWorker, func() *Facts { f := good(); f.Listening[10250] = true; return f }, labExpect, []string{"error:port-free"}},
		{"etcd port busy on control plane", controlPl, func() *Facts { f := good(); f.Listening[2379] = true; f.Listening[6443] = true; return f }, labExpect, []string{"error:port-free", "error:port-free"}},
		{"etcd port on worker is fine", linuxWorker, func() *Facts { f := good(); f.Listening[2379] = true; return f }, labExpect, nil},
		{"re-run: ports in use expected", controlPl, func() *Facts { f := good(); f.Listening[6443] = true; return f }, Expect{AlreadyInstalled: true}, nil},
		{"joined node: its own ports", controlPl, func() *Facts {
			f := good()
			f.Listening[6443], f.Listening[10250], f.KubeletConfigured = true, true, true
			return f
		}, labExpect, nil},
		{"product_uuid unreadable", linuxWorker, func() *Facts { f := good(); f.ProductUUID = ""; return f }, labExpect, []string{"warning:facts-readable"}},
		{"Windows 2025 as specified", winWorker, func() *Facts {
			return &Facts{WindowsBuild: "26100", WindowsInstallationType: "Server Core", ProductUUID: "u", MachineID: "m", TimeSynced: "yes", Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}}
		}, labExpect, nil},
		{"Windows 2022 where 2025 is specified", winWorker, func() *Facts {
			return &Facts{WindowsBuild: "20348", ProductUUID: "u", MachineID: "m", TimeSynced: "yes", Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}}
		}, labExpect, []string{"error:windows-build"}},
		{"Windows on local clock", winWorker, func() *Facts {
			return &Facts{WindowsBuild: "26100", ProductUUID: "u", MachineID: "m", TimeSynced: "no", TimeSource: "Local CMOS Clock", Resolved: []string{"192.168.10.23"}, Listening: map[int]bool{}}
		}, labExpect, []string{"error:time-sync"}},
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
	facts := []*Facts{
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
	fs := []Finding{{Check: CheckSwap, Severity: SeverityError}, {Check: CheckPortFree, Severity: SeverityError}, {Check: CheckOSVersion, Severity: SeverityWarning}}
	errs, warns := Apply(fs, []string{"swap"})
	if len(errs) != 1 || errs[0].Check != CheckPortFree || len(warns) != 2 {
		t.Errorf("errs %v warns %v", errs, warns)
	}
	if errs, _ := Apply(fs, []string{"all"}); len(errs) != 0 {
		t.Error("all ignores everything")
	}
}

// dialLoopback connects to a fresh loopback SSH server.
func dialLoopback(t *testing.T) (*transport.Client, *sshtest.Server) {
	t.Helper()
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, transport.Config{Host: "loopback", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// TestGatherOverSSH runs the real Linux gathering script on this machine
// through a loopback SSH server and compares with what Go reads directly.
func TestGatherOverSSH(t *testing.T) {
	c, _ := dialLoopback(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := Gather(ctx, c, linuxWorker, "localhost")
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
		if id := ParseOSRelease(string(osr))["ID"]; id == "" || f.OSID != id {
			t.Errorf("OS ID %q, /etc/os-release says %q", f.OSID, id)
		}
	}
	if mid, err := os.ReadFile("/etc/machine-id"); err == nil && f.MachineID != strings.TrimSpace(string(mid)) {
		t.Errorf("machine id %q", f.MachineID)
	}
	if !f.ClockSkewKnown || f.ClockSkew > 2*time.Second || f.ClockSkew < -2*time.Second {
		t.Errorf("clock skew against ourselves: %v (known %v)", f.ClockSkew, f.ClockSkewKnown)
	}
	if _, err := os.Stat("/proc/swaps"); err == nil && !f.SwapKnown {
		t.Error("swap state unknown although /proc/swaps exists")
	}
}

// TestPreflightPhasesClonedHosts runs the preflight phases through the
// engine on two "hosts" that are in fact the same machine — exactly the
// cloned-template case the guide warns about: the machine id is shared.
func TestPreflightPhasesClonedHosts(t *testing.T) {
	if _, err := os.Stat("/etc/machine-id"); err != nil {
		t.Skip("this machine has no /etc/machine-id")
	}
	c, _ := dialLoopback(t)
	hosts := []provision.Host{
		{Name: "clone-a", Role: provision.RoleWorker, OS: provision.Linux},
		{Name: "clone-b", Role: provision.RoleWorker, OS: provision.Linux},
	}
	runner := func(context.Context, string) (Runner, error) { return c, nil }
	phases := Phases(runner, hosts, Expect{APIName: "localhost", AlreadyInstalled: true}, []string{CheckTimeSync, CheckOSVersion})
	var events []provision.Event
	rep := provision.ReporterFunc(func(e provision.Event) { events = append(events, e) })
	e, err := provision.New(phases, hosts, provision.Options{Reporter: rep, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = e.Run(ctx)
	pes := provision.PhaseErrors(err)
	if len(pes) != 1 || pes[0].Phase != "preflight-cluster" || !strings.Contains(err.Error(), "machine-id-unique") ||
		!strings.Contains(err.Error(), "clone-a, clone-b") {
		t.Fatalf("want the shared machine id reported, got %v", err)
	}
	warned := false
	for _, ev := range events {
		if ev.Type == provision.EventWarning && ev.Host == "clone-a" {
			warned = true
		}
	}
	if !warned {
		t.Error("ignored or unknown checks should be reported as warnings")
	}
}
