package hostfacts_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// The guide's k8s-lab-node-1 (Hands-on: ip -d link, ip route, ip neigh,
// bridge fdb) as the Linux node script prints it.
func TestParseNodeLinux(t *testing.T) {
	f, err := hostfacts.ParseNodeLinux("k8s-lab-node-1", []byte(hostfactstest.Fixture(t, hostfactstest.NodeLinux)), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := f.Linux.LinkNamed("vxlan.calico")
	if !ok || l.MAC != "66:ee:f4:61:98:50" || l.VNI != 4096 || l.Port != 4789 || !l.Up {
		t.Fatalf("vxlan.calico parsed as %+v", l)
	}
	if len(f.Linux.FDB) != 3 || len(f.Linux.Neigh) != 3 || !f.Linux.UDPPorts[4789] {
		t.Fatalf("fdb %v neigh %v udp %v", f.Linux.FDB, f.Linux.Neigh, f.Linux.UDPPorts)
	}
	if k := f.Services["kubelet"]; !k.Found || !k.Running || f.OS != engine.Linux || f.Node != "k8s-lab-node-1" {
		t.Errorf("kubelet %+v, node %q %q", k, f.Node, f.OS)
	}
	// crictl info's configuration (registry credentials) is never kept.
	for _, r := range f.Raw {
		if strings.Contains(string(r.Data), "s3cr3t-registry-password") {
			t.Errorf("raw %s keeps the registry password", r.Name)
		}
	}
}

func TestParseNodeLinuxWithoutSections(t *testing.T) {
	m := hostfactstest.Marker
	if _, err := hostfacts.ParseNodeLinux("n", []byte("sh: 1: Syntax error\n"), m); err == nil || !strings.Contains(err.Error(), "n: the gathering script printed no sections") {
		t.Errorf("output without sections: %v", err)
	}
	dup := "@@" + m + " begin api\nconnected\n@@" + m + " end api 0\n@@" + m + " begin api\n"
	if _, err := hostfacts.ParseNodeLinux("n", []byte(dup), m); err == nil || !strings.Contains(err.Error(), `section "api" appears twice`) {
		t.Errorf("a section twice: %v", err)
	}
}

// checkNode fails unless what parsed is a whole Node of its own name and
// OS: the checks read its maps and network state without nil tests.
func checkNode(t *testing.T, f *hostfacts.Node, name string, os engine.OS) {
	t.Helper()
	if f.Node != name || f.OS != os || f.Services == nil {
		t.Fatalf("node %q %q, services %v", f.Node, f.OS, f.Services)
	}
	if os == engine.Linux && (f.Linux == nil || f.Linux.Addrs == nil || f.Linux.UDPPorts == nil) {
		t.Fatalf("Linux network state %+v", f.Linux)
	}
	if os == engine.Windows && f.Windows == nil {
		t.Fatal("no Windows network state")
	}
}

// FuzzParseNodeLinux feeds arbitrary output to the Linux node script's
// parser: no panic, no hang, whatever a node prints. The seeds are the
// recorded output and the kept corpus in testdata/fuzz/FuzzParseNodeLinux.
// (node diagnose's FuzzEvaluateLinux runs the checks over what parses.)
func FuzzParseNodeLinux(f *testing.F) {
	m := hostfactstest.Marker
	f.Add([]byte(hostfactstest.Fixture(f, hostfactstest.NodeLinux)))
	f.Add([]byte("@@" + m + " begin links\n[{\"ifname\":\"vxlan.calico\",\"linkinfo\":{\"info_kind\":\"vxlan\"}}]\n@@" + m + " end links 0\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := hostfacts.ParseNodeLinux("k8s-lab-node-1", out, m)
		if err != nil {
			return
		}
		checkNode(t, facts, "k8s-lab-node-1", engine.Linux)
	})
}

// FuzzParseNodeWindows does the same for the Windows node script's JSON.
func FuzzParseNodeWindows(f *testing.F) {
	f.Add([]byte(hostfactstest.Fixture(f, hostfactstest.NodeWindows)))
	f.Add([]byte(`{"hns":{"ok":true,"value":{"name":"Calico","subnets":null,"policies":{"Type":"RemoteSubnetRoute","DestinationPrefix":"300.1.1.1/99"}}}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := hostfacts.ParseNodeWindows("k8s-lab-win-1", out)
		if err != nil {
			return
		}
		checkNode(t, facts, "k8s-lab-win-1", engine.Windows)
	})
}

// section is one section of the node script's output with its exit status.
func section(name string, rc int, out string) string {
	return hostfacts.BeginLine(hostfactstest.Marker, name) + "\n" + out + "\n" + hostfacts.EndLine(hostfactstest.Marker, name, rc) + "\n"
}

func parseNodeLinux(t *testing.T, out string) *hostfacts.Node {
	t.Helper()
	f, err := hostfacts.ParseNodeLinux("n", []byte(out), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestParseNodeLinuxExitStatus: each probe on both sides of what its exit
// status means (0, a failure, 127 for a tool that is not there).
func TestParseNodeLinuxExitStatus(t *testing.T) {
	const ns = "1796173200123456789"
	status := `{"status":{"conditions":[{"type":"RuntimeReady","status":true}]},"config":{"registry":"s3cr3t"}}`
	for _, tc := range []struct {
		name, out string
		check     func(f *hostfacts.Node) bool
	}{
		{"clock", section("clock", 0, ns), func(f *hostfacts.Node) bool {
			return f.Clock.Sampled && f.Clock.Node.Equal(time.Unix(0, 1796173200123456789))
		}},
		{"clock failed", section("clock", 1, ns), func(f *hostfacts.Node) bool { return !f.Clock.Sampled && f.Clock.Detail == ns }},
		{"clock not a number", section("clock", 0, "soon"), func(f *hostfacts.Node) bool { return !f.Clock.Sampled && f.Clock.Detail == "soon" }},
		{"time synchronised", section("time-sync", 0, "NTPSynchronized=yes"), func(f *hostfacts.Node) bool { return f.Clock.Synced == "yes" }},
		{"timedatectl failed", section("time-sync", 1, "NTPSynchronized=yes"), func(f *hostfacts.Node) bool { return f.Clock.Synced == "" }},
		{"another property", section("time-sync", 0, "NTP=yes"), func(f *hostfacts.Node) bool { return f.Clock.Synced == "" }},
		{"crictl answered", section("crictl", 0, status), func(f *hostfacts.Node) bool {
			return f.CRI == hostfacts.Probe{Ran: true, OK: true, Detail: "crictl info answered"} && len(f.CRIConditions) == 1 &&
				len(f.Raw) == 1 && f.Raw[0].Name == "crictl-info-status.json" && !strings.Contains(string(f.Raw[0].Data), "s3cr3t")
		}},
		{"crictl answered nonsense", section("crictl", 0, "{"), func(f *hostfacts.Node) bool {
			return f.CRI.Ran && f.CRI.OK && strings.HasPrefix(f.CRI.Detail, "crictl info answered, but: ") && f.CRIConditions == nil
		}},
		{"crictl failed", section("crictl", 1, "a\nb\nconnection refused"), func(f *hostfacts.Node) bool {
			return f.CRI == hostfacts.Probe{Ran: true, OK: false, Detail: "a\nb\nconnection refused"} && f.CRIConditions == nil
		}},
		{"no crictl", section("crictl", 127, "crictl: not found"), func(f *hostfacts.Node) bool { return !f.CRI.Ran && !f.CRI.OK }},
		{"journal read", section("kubelet-log", 0, "1796173200.000000 n kubelet[1]: ok"), func(f *hostfacts.Node) bool {
			return f.KubeletLogError == "" && len(f.KubeletLog) == 1
		}},
		{"journal failed", section("kubelet-log", 1, "x\nNo journal files were found."), func(f *hostfacts.Node) bool {
			return f.KubeletLogError == "x\nNo journal files were found."
		}},
		{"API connected", section("api", 0, "connected"), func(f *hostfacts.Node) bool { return f.API.Ran && f.API.OK }},
		{"API answered otherwise", section("api", 0, "refused"), func(f *hostfacts.Node) bool { return f.API.Ran && !f.API.OK }},
		{"API refused", section("api", 1, "connected? no"), func(f *hostfacts.Node) bool { return f.API.Ran && !f.API.OK }},
		{"no tool for the API", section("api", 127, ""), func(f *hostfacts.Node) bool { return !f.API.Ran && !f.API.OK }},
		{"CNI directory", section("cni-dir", 0, "10-calico.conflist"), func(f *hostfacts.Node) bool { return f.CNIError == "" }},
		{"no CNI directory", section("cni-dir", 2, "/etc/cni/net.d: no such directory"), func(f *hostfacts.Node) bool {
			return f.CNIError == "/etc/cni/net.d: no such directory"
		}},
	} {
		if f := parseNodeLinux(t, tc.out); !tc.check(f) {
			t.Errorf("%s: clock %+v, CRI %+v, API %+v, log error %q, CNI error %q", tc.name, f.Clock, f.CRI, f.API, f.KubeletLogError, f.CNIError)
		}
	}
}

// TestParseNodeLinuxRawNames: what --collect names each section's file:
// letters, digits and ._-/ kept (each range at both ends), anything else
// and "..", a dash.
func TestParseNodeLinuxRawNames(t *testing.T) {
	f := parseNodeLinux(t, section("azAZ09._-x", 0, "")+section("`{@[:", 0, "")+section("neigh vxlan.calico", 0, "")+
		section("/../up/", 0, "")+section("///", 0, ""))
	var got []string
	for _, r := range f.Raw {
		got = append(got, r.Name)
	}
	want := []string{"azAZ09._-x.txt", "-----.txt", "neigh-vxlan.calico.txt", "-/up.txt", "section.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("raw names %q, want %q", got, want)
	}
}

// TestParseNodeLinuxTables: each table the overlay checks read, with the
// entries a parser must keep beside the ones it must drop (a default
// route, an unparsable destination, a device's own FDB entries, a prefix
// length out of range), and the values read exactly.
func TestParseNodeLinuxTables(t *testing.T) {
	f := parseNodeLinux(t, section("links", 0, `[{"ifname":"vxlan.calico","address":"66:EE:F4:61:98:50","flags":["BROADCAST","UP","LOWER_UP"],"mtu":1450,"linkinfo":{"info_kind":"vxlan","info_data":{"id":4096,"port":4789,"local":"192.168.10.21"}}},`+
		`{"ifname":"eth0","address":"52:54:00:aa:bb:cc","flags":["BROADCAST"],"mtu":1500,"linkinfo":{"info_kind":"","info_data":{"id":7,"port":9}}}]`)+
		section("addrs", 0, `[{"ifname":"eth0","addr_info":[{"local":"192.168.10.21","prefixlen":24},{"local":"10.0.0.1","prefixlen":32},{"local":"10.0.0.4","prefixlen":0},{"local":"10.0.0.2","prefixlen":33},{"local":"10.0.0.3","prefixlen":-1},{"local":"x","prefixlen":8}]}]`)+
		section("routes", 0, `[{"dst":"default","gateway":"192.168.10.1","dev":"eth0"},{"dst":"172.21.41.0/26","gateway":"172.21.41.0","dev":"vxlan.calico","flags":["onlink"],"protocol":"bird"},`+
			`{"dst":"172.21.211.5","dev":"cali1"},{"dst":"172.21.0.7/16","dev":"eth0"},{"dst":"nonsense","dev":"eth0"}]`)+
		section("neigh vxlan.calico", 0, `[{"dst":"172.21.41.0","lladdr":"66-EE-F4-61-98-51","state":["PERMANENT","NOARP"]},{"dst":"?","lladdr":"x"}]`)+
		section("fdb vxlan.calico", 0, `[{"mac":"66:ee:f4:61:98:51","dst":"192.168.10.31"},{"mac":"66:ee:f4:61:98:50"}]`)+
		section("udp", 0, "  sl  local_address rem_address   st\n   0: 00000000:12B5 00000000:0000 07\n   1: 00000000:0035 00000000:0000 07\n   2 00000000:0016 x\n   3: 00000000\n   4: 00000000:ZZZZ 0\n   5: 00000000:1F90\n"))
	n := f.Linux
	wantLinks := []hostfacts.Link{
		{Name: "vxlan.calico", Kind: "vxlan", MAC: "66:ee:f4:61:98:50", Up: true, MTU: 1450, VNI: 4096, Port: 4789, Local: "192.168.10.21"},
		{Name: "eth0", MAC: "52:54:00:aa:bb:cc", MTU: 1500},
	}
	if !reflect.DeepEqual(n.Links, wantLinks) {
		t.Errorf("links %+v", n.Links)
	}
	if got := n.Addrs["eth0"]; !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("192.168.10.21/24"), netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.4/0")}) {
		t.Errorf("addresses %v", got)
	}
	var routes []string
	for _, r := range n.Routes {
		routes = append(routes, r.Raw+" proto "+r.Protocol)
	}
	if want := []string{"172.21.41.0/26 via 172.21.41.0 dev vxlan.calico onlink proto bird", "172.21.211.5/32 dev cali1 proto ", "172.21.0.0/16 dev eth0 proto "}; !slices.Equal(routes, want) {
		t.Errorf("routes %q, want %q", routes, want)
	}
	if r := n.Routes[0]; !r.OnLink || r.Gateway != netip.MustParseAddr("172.21.41.0") || r.Dev != "vxlan.calico" || n.Routes[1].Gateway.IsValid() || n.Routes[1].OnLink {
		t.Errorf("route fields %+v %+v", r, n.Routes[1])
	}
	if want := []hostfacts.Neigh{{Dst: netip.MustParseAddr("172.21.41.0"), MAC: "66:ee:f4:61:98:51", Dev: "vxlan.calico", State: "PERMANENT,NOARP"}}; !reflect.DeepEqual(n.Neigh, want) {
		t.Errorf("neighbours %+v", n.Neigh)
	}
	if want := []hostfacts.FDB{{MAC: "66:ee:f4:61:98:51", Dst: netip.MustParseAddr("192.168.10.31"), Dev: "vxlan.calico"}}; !reflect.DeepEqual(n.FDB, want) {
		t.Errorf("FDB %+v", n.FDB)
	}
	if !reflect.DeepEqual(n.UDPPorts, map[int]bool{4789: true, 53: true, 8080: true}) {
		t.Errorf("UDP ports %v", n.UDPPorts)
	}
	// Unreadable tables leave nothing behind, and say so for the links.
	f = parseNodeLinux(t, section("links", 0, "{")+section("addrs", 0, "{")+section("routes", 0, "{")+section("neigh d", 0, "{")+section("fdb d", 0, "{"))
	if n := f.Linux; n.Links != nil || len(n.Addrs) != 0 || n.Routes != nil || n.Neigh != nil || n.FDB != nil {
		t.Errorf("unreadable tables: %+v", n)
	}
}

// TestParseNodeLinuxJournalAndCNI: journal lines with and without a time
// it believes (both ends of its range), and CNI files valid or not.
func TestParseNodeLinuxJournalAndCNI(t *testing.T) {
	f := parseNodeLinux(t, section("kubelet-log", 0, "-- Boot 1 --\n1796173200.500000 n kubelet[1]: E1 started\n\n0 n kubelet[1]: zero\n"+
		"100000000000 n kubelet[1]: too late\n99999999999 n kubelet[1]: last\nno time here\r\n"+
		"1796173200 n kubelet[1]: whole\n1796173200.123456789 n kubelet[1]: nine digits\n1796173200.1234567891 n kubelet[1]: ten digits\n1796173200.1e3 n kubelet[1]: a float\n")+
		section("cni-file /etc/cni/net.d/10-calico.conflist", 0, `{"name":"k8s-pod-network","plugins":[{"type":"calico"},{"type":""},{"type":"portmap"}]}`)+
		section("cni-file /etc/cni/net.d/05-one.conf", 0, `{"name":"one","type":"bridge"}`)+
		section("cni-file /etc/cni/net.d/06-nameless.conf", 0, `{"type":"bridge"}`)+
		section("cni-file /etc/cni/net.d/07-typeless.conflist", 0, `{"name":"x","plugins":[{"type":""}]}`)+
		section("cni-file /etc/cni/net.d/08-not-json.conf", 0, `name: x`))
	want := []hostfacts.LogLine{
		{Time: time.Unix(1796173200, 500000000).UTC(), Text: "E1 started"},
		{Text: "0 n kubelet[1]: zero"},
		{Text: "100000000000 n kubelet[1]: too late"},
		{Time: time.Unix(99999999999, 0).UTC(), Text: "last"},
		{Text: "no time here"},
		{Time: time.Unix(1796173200, 0).UTC(), Text: "whole"},
		{Time: time.Unix(1796173200, 123456789).UTC(), Text: "nine digits"},
		{Text: "1796173200.1234567891 n kubelet[1]: ten digits"},
		{Text: "1796173200.1e3 n kubelet[1]: a float"},
	}
	if !reflect.DeepEqual(f.KubeletLog, want) {
		t.Errorf("journal %+v", f.KubeletLog)
	}
	var cni []string
	for _, c := range f.CNIFiles {
		cni = append(cni, fmt.Sprintf("%s %v %s %q %s", c.Name, c.Valid, c.NetworkName, c.Types, c.Problem))
	}
	if want := []string{
		`10-calico.conflist true k8s-pod-network ["calico" "portmap"] `,
		`05-one.conf true one ["bridge"] `,
		`06-nameless.conf false  ["bridge"] has no network name`,
		`07-typeless.conflist false x [] names no plugin type`,
	}; len(cni) != 5 || !slices.Equal(cni[:4], want) || !strings.HasPrefix(cni[4], "08-not-json.conf false  [] not JSON: ") {
		t.Errorf("CNI files\n%s", strings.Join(cni, "\n"))
	}
	// A failed probe keeps the last five lines of what it printed.
	f = parseNodeLinux(t, section("crictl", 1, "1\n2\n\n3\n4\n5\n6\n"))
	if f.CRI.Detail != "2\n3\n4\n5\n6" {
		t.Errorf("six lines: %q", f.CRI.Detail)
	}
	f = parseNodeLinux(t, section("crictl", 1, "1\n2\n3\n4\n5"))
	if f.CRI.Detail != "1\n2\n3\n4\n5" {
		t.Errorf("five lines: %q", f.CRI.Detail)
	}
}

// TestNormMAC: six pairs in either spelling are written one way; anything
// else is only lower-cased.
func TestNormMAC(t *testing.T) {
	for in, want := range map[string]string{
		"66-EE-F4-61-98-50":    "66:ee:f4:61:98:50",
		" 66:ee:f4:61:98:50 ":  "66:ee:f4:61:98:50",
		"66-EE-F4-61-98":       "66-ee-f4-61-98",
		"66-EE-F4-61-98-5":     "66-ee-f4-61-98-5",
		"66-EE-F4-61-98-5G":    "66-ee-f4-61-98-5g",
		"66-EE-F4-61-98-50-00": "66-ee-f4-61-98-50-00",
	} {
		if got := hostfacts.NormMAC(in); got != want {
			t.Errorf("NormMAC(%q) = %q, want %q", in, got, want)
		}
	}
}

func parseNodeWindows(t *testing.T, out string) *hostfacts.Node {
	t.Helper()
	f, err := hostfacts.ParseNodeWindows("w", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestParseNodeWindowsShapes: the object is the last line (after a BOM
// and PowerShell's warnings); PowerShell's three spellings of a list (an
// array, one object unrolled, null) read alike; what is not the object is
// an error naming the node.
func TestParseNodeWindowsShapes(t *testing.T) {
	one := `{"services":{"ok":true,"value":{"name":"Kubelet","status":"Running","startType":"Automatic"}}}`
	f := parseNodeWindows(t, "\xef\xbb\xbfWARNING: something\r\n"+one+"\r\n")
	if s := f.Services["kubelet"]; s != (hostfacts.Service{Name: "Kubelet", Found: true, Running: true, State: "Running", StartType: "Automatic"}) || len(f.Services) != 1 {
		t.Errorf("one service unrolled: %+v", f.Services)
	}
	if f := parseNodeWindows(t, "WARNING: x\n"+one); len(f.Services) != 1 {
		t.Errorf("after a warning line ending in LF: %+v", f.Services)
	}
	f = parseNodeWindows(t, `{"services":{"ok":true,"value":[{"name":"kubelet","status":"Stopped"},{"name":"containerd","status":"Running"}]}}`)
	if len(f.Services) != 2 || f.Services["kubelet"].Running || !f.Services["containerd"].Running {
		t.Errorf("two services: %+v", f.Services)
	}
	f = parseNodeWindows(t, `{"services":{"ok":true,"value":null},"hns":{"ok":true,"value":null}}`)
	if len(f.Services) != 0 || f.Windows == nil || f.Windows.Networks != nil {
		t.Errorf("null lists: %+v %+v", f.Services, f.Windows)
	}
	for _, bad := range []string{`{"services":{"ok":true,"value":"kubelet"}}`, `{"services":{"ok":true,"value":[1]}}`, "{\n", "[]"} {
		if _, err := hostfacts.ParseNodeWindows("w", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "w: the Windows gathering script's output is not the expected JSON") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestParseNodeWindowsProbes: each probe that failed says why, and one
// that answered is read; HNS policies are matched without regard to case
// and only remote subnet routes are routes; the firewall rule is enabled
// only when it says True.
func TestParseNodeWindowsProbes(t *testing.T) {
	f := parseNodeWindows(t, `{"clock":{"ok":false,"error":"no clock"},"services":{"ok":false,"error":"access denied"},`+
		`"cri":{"ok":false,"error":"crictl.exe not found"},"kubeletLog":{"ok":false,"error":"no log file"},`+
		`"api":{"ok":false,"error":"connection refused"},"cni":{"ok":false,"error":"no directory"},"hns":{"ok":false,"error":"HNS is not running"},`+
		`"firewall":{"ok":true,"value":{"enabled":"False","direction":"Inbound","action":"Allow"}}}`)
	if f.Clock.Sampled || f.Clock.Detail != "no clock" || len(f.Services) != 0 || f.CRI.Ran || f.CRI.Detail != "crictl.exe not found" ||
		f.KubeletLogError != "no log file" || f.API.OK || f.API.Detail != "connection refused" || f.CNIError != "no directory" ||
		f.Windows.Error != "HNS is not running" || f.Windows.Firewall == nil || f.Windows.Firewall.Enabled {
		t.Errorf("failed probes: clock %+v, CRI %+v, API %+v, log %q, CNI %q, HNS %q, firewall %+v", f.Clock, f.CRI, f.API, f.KubeletLogError, f.CNIError, f.Windows.Error, f.Windows.Firewall)
	}
	f = parseNodeWindows(t, `{"clock":{"ok":true,"value":1796173200123},"api":{"ok":true,"value":"refused"},`+
		`"cri":{"ok":true,"value":{"ran":true,"ok":false,"detail":"a\nb\nc\nd\ne\nf"}},"firewall":{"ok":true,"value":null},`+
		`"cni":{"ok":true,"value":{"name":"10-calico.conflist","content":"{\"name\":\"Calico\",\"plugins\":[{\"type\":\"calico\"}]}"}},`+
		`"hns":{"ok":true,"value":{"name":"Calico","type":"Overlay","drMacAddress":"00-15-5D-EB-90-AE","subnets":[{"addressPrefix":"172.21.41.0/26","gatewayAddress":"172.21.41.1","policies":{"Type":"vsid","VSID":4096}},{"addressPrefix":"bad","gatewayAddress":"bad"}],`+
		`"policies":[{"Type":"remotesubnetroute","DestinationPrefix":"172.21.211.0/26","ProviderAddress":"192.168.10.21","DistributedRouterMacAddress":"66-EE-F4-61-98-50","IsolationId":4096},{"Type":"ACL","DestinationPrefix":"0.0.0.0/0"}]}}}`)
	if !f.Clock.Sampled || !f.Clock.Node.Equal(time.UnixMilli(1796173200123)) || f.API.OK || f.API.Detail != "refused" ||
		f.CRI != (hostfacts.Probe{Ran: true, Detail: "b\nc\nd\ne\nf"}) || f.Windows.Firewall != nil {
		t.Errorf("answers: clock %+v, API %+v, CRI %+v, firewall %+v", f.Clock, f.API, f.CRI, f.Windows.Firewall)
	}
	if len(f.CNIFiles) != 1 || !f.CNIFiles[0].Valid || f.CNIFiles[0].NetworkName != "Calico" {
		t.Errorf("CNI %+v", f.CNIFiles)
	}
	want := hostfacts.HNSNetwork{Name: "Calico", Type: "Overlay", DrMAC: "00:15:5d:eb:90:ae", VSID: 4096,
		Subnets:  []netip.Prefix{netip.MustParsePrefix("172.21.41.0/26")},
		Gateways: []netip.Addr{netip.MustParseAddr("172.21.41.1")},
		Routes: []hostfacts.RemoteSubnetRoute{{Prefix: netip.MustParsePrefix("172.21.211.0/26"), Provider: netip.MustParseAddr("192.168.10.21"),
			MAC: "66:ee:f4:61:98:50", VSID: 4096}}}
	if n, ok := f.Windows.NetworkNamed("calico"); !ok || !reflect.DeepEqual(n, want) {
		t.Errorf("HNS network %+v", n)
	}
	if _, ok := f.Windows.NetworkNamed("External"); ok {
		t.Error("a network that is not there")
	}
}

// TestParseNodeWindowsKlogTimes: klog's header has no year: it is the
// node clock's, or the year before for a date more than a day after the
// clock (exactly a day after is still this year's); the node's UTC offset is taken off; a line klog did not write
// has no time.
func TestParseNodeWindowsKlogTimes(t *testing.T) {
	const clock = 1796173200000 // 2026-12-02 01:00:00 UTC
	log := func(lines ...string) string {
		b, _ := json.Marshal(lines)
		return fmt.Sprintf(`{"clock":{"ok":true,"value":%d},"utcOffsetMinutes":{"ok":true,"value":60},"kubeletLog":{"ok":true,"value":%s}}`, clock, b)
	}
	f := parseNodeWindows(t, log("E1202 01:30:00.000000    812 a.go:1] in an hour (local)", "W1203 02:00:00.000000 x", "I1203 02:00:00.000001 x",
		"", "X1202 01:00:00.000000 x", "E1202 01:00:00", "E1302 01:00:00.000000 x", "E1202 01:45:00.000000"))
	want := []time.Time{
		time.Date(2026, 12, 2, 0, 30, 0, 0, time.UTC),
		time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC),
		time.Date(2025, 12, 3, 1, 0, 0, 1000, time.UTC),
		{}, {}, {},
		time.Date(2026, 12, 2, 0, 45, 0, 0, time.UTC), // the header alone, 21 bytes
	}
	var got []time.Time
	for _, l := range f.KubeletLog {
		got = append(got, l.Time)
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d (the empty one dropped)", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("line %q: %s, want %s", f.KubeletLog[i].Text, got[i], want[i])
		}
	}
	// Without the node's clock there is no year to give a line.
	f = parseNodeWindows(t, `{"kubeletLog":{"ok":true,"value":["E1202 01:30:00.000000 x"]}}`)
	if len(f.KubeletLog) != 1 || !f.KubeletLog[0].Time.IsZero() {
		t.Errorf("no clock: %+v", f.KubeletLog)
	}
}
