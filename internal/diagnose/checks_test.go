package diagnose

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"

	"github.com/hybridctl/hybridctl/internal/checks"
)

// The guide's k8s-lab-node-1 (Hands-on: ip -d link, ip route, ip neigh,
// bridge fdb) gathered by the Linux node script: nothing wrong.
func TestLinuxGuideNodeClean(t *testing.T) {
	f := parseLinuxT(t, "k8s-lab-node-1", hostfactstest.Fixture(t, hostfactstest.NodeLinux))
	fs, sk := Evaluate(f, calicoLab(t), nil, labExpect(), nil)
	expectExactly(t, fs)
	if len(sk) != 0 {
		t.Errorf("skipped: %+v", sk)
	}
}

// edit replaces old with new in a recorded output, failing when old is
// not there (a fixture that changed under a test).
func edit(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture has no %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// cut removes a section.
func cut(t *testing.T, s, name string) string {
	t.Helper()
	b := "@@" + hostfactstest.Marker + " begin " + name + "\n"
	e := "@@" + hostfactstest.Marker + " end " + name + " 0\n"
	i, j := strings.Index(s, b), strings.Index(s, e)
	if i < 0 || j < 0 {
		t.Fatalf("fixture has no section %q", name)
	}
	return s[:i] + s[j+len(e):]
}

func TestLinuxNearMisses(t *testing.T) {
	base := hostfactstest.Fixture(t, hostfactstest.NodeLinux)
	cases := []struct {
		name string
		out  func(string) string
		mod  func(*hostfacts.Node)
		want []want
	}{
		{name: "stopped containerd", out: func(s string) string {
			s = edit(t, s, "Id=containerd.service\nLoadState=loaded\nActiveState=active\nSubState=running", "Id=containerd.service\nLoadState=loaded\nActiveState=inactive\nSubState=dead")
			s = edit(t, s, "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin crictl\n{", "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin crictl\nE1202 time=\"...\" level=fatal msg=\"validate service connection: dial unix /run/containerd/containerd.sock: connect: no such file or directory\"\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end crictl 1\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin ignored\n{")
			return s
		}, want: []want{
			{"HC501", finding.Error, []string{"containerd is not running on k8s-lab-node-1 (inactive/dead)"}},
			{"HC502", finding.Error, []string{"containerd does not answer crictl info", "the containerd service is inactive/dead", "containerd.sock: connect: no such file"}},
		}},
		{name: "kubelet not enabled", out: func(s string) string {
			return edit(t, s, "SubState=running\nUnitFileState=enabled\n\nId=containerd", "SubState=running\nUnitFileState=disabled\n\nId=containerd")
		}, want: []want{{"HC501", finding.Warning, []string{"kubelet runs but does not start at boot", "disabled"}}}},
		{name: "kubelet not installed", out: func(s string) string {
			return edit(t, s, "Id=kubelet.service\nLoadState=loaded\nActiveState=active", "Id=kubelet.service\nLoadState=not-found\nActiveState=inactive")
		}, want: []want{{"HC501", finding.Error, []string{"kubelet is not installed"}}}},
		{name: "deleted CNI config", out: func(s string) string { return cut(t, s, "cni-file /etc/cni/net.d/10-calico.conflist") },
			want: []want{{"HC506", finding.Error, []string{"no CNI configuration in /etc/cni/net.d on k8s-lab-node-1"}}}},
		{name: "no CNI directory", out: func(s string) string {
			s = cut(t, s, "cni-file /etc/cni/net.d/10-calico.conflist")
			return edit(t, s, "10-calico.conflist\ncalico-kubeconfig\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end cni-dir 0", "/etc/cni/net.d: no such directory\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end cni-dir 2")
		}, want: []want{{"HC506", finding.Error, []string{"no CNI configuration on k8s-lab-node-1: /etc/cni/net.d: no such directory"}}}},
		{name: "truncated CNI config", out: func(s string) string {
			return edit(t, s, `{"name": "k8s-pod-network", "cniVersion": "0.3.1", "plugins": [`, `{"name": "k8s-pod-network", "cniVersion": "0.3.1", "plug`)
		}, want: []want{
			{"HC506", finding.Error, []string{"10-calico.conflist on k8s-lab-node-1 is not a valid CNI configuration"}},
			{"HC506", finding.Error, []string{"no CNI configuration in /etc/cni/net.d"}},
		}},
		{name: "a leftover flannel configuration sorts first", out: func(s string) string {
			return edit(t, s, "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin links", "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin cni-file /etc/cni/net.d/05-flannel.conflist\n{\"name\":\"cbr0\",\"plugins\":[{\"type\":\"flannel\"},{\"type\":\"portmap\"}]}\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end cni-file /etc/cni/net.d/05-flannel.conflist 0\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin links")
		}, want: []want{{"HC506", finding.Warning, []string{"05-flannel.conflist", "not the cluster's calico network"}}}},
		{name: "a missing FDB entry", out: func(s string) string {
			return edit(t, s, `{"mac":"66:05:38:46:ab:ea","dst":"192.168.10.26","flags":["self"],"state":"permanent"},`, "")
		}, want: []want{{"HC508", finding.Error, []string{"no FDB entry on vxlan.calico for k8s-lab-node-2's VTEP MAC 66:05:38:46:ab:ea (want dst 192.168.10.26)", "cluster: block 172.21.172.0/26 is affine to k8s-lab-node-2"}}}},
		{name: "an FDB entry to the wrong node", out: func(s string) string {
			return edit(t, s, `{"mac":"66:05:38:46:ab:ea","dst":"192.168.10.26"`, `{"mac":"66:05:38:46:ab:ea","dst":"192.168.10.27"`)
		}, want: []want{{"HC508", finding.Error, []string{"sends to 192.168.10.27, but k8s-lab-node-2's address is 192.168.10.26", "node: 66:05:38:46:ab:ea dst 192.168.10.27 dev vxlan.calico"}}}},
		{name: "a neighbour entry whose MAC disagrees", out: func(s string) string {
			return edit(t, s, `{"dst":"172.21.41.1","lladdr":"00:15:5d:eb:90:ae"`, `{"dst":"172.21.41.1","lladdr":"00:15:5d:eb:90:af"`)
		}, want: []want{{"HC508", finding.Error, []string{"has MAC 00:15:5d:eb:90:af, but k8s-lab-win-1's VTEP MAC is 00:15:5d:eb:90:ae"}}}},
		{name: "a missing route", out: func(s string) string {
			return edit(t, s, `{"dst":"172.21.41.0/26","gateway":"172.21.41.1","dev":"vxlan.calico","protocol":"80","flags":["onlink"]},`, "")
		}, want: []want{{"HC508", finding.Error, []string{"no route to k8s-lab-win-1's block 172.21.41.0/26 (want 172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink)"}}}},
		{name: "a route via the wrong tunnel address", out: func(s string) string {
			return edit(t, s, `"dst":"172.21.41.0/26","gateway":"172.21.41.1"`, `"dst":"172.21.41.0/26","gateway":"172.21.41.2"`)
		}, want: []want{{"HC508", finding.Error, []string{"routes k8s-lab-win-1's block 172.21.41.0/26 via 172.21.41.2 dev vxlan.calico, but k8s-lab-win-1's tunnel address is 172.21.41.1", "node: 172.21.41.0/26 via 172.21.41.2 dev vxlan.calico onlink"}}}},
		{name: "a stale route, neighbour and FDB entry of a node that left", out: func(s string) string {
			s = edit(t, s, `{"dst":"172.21.211.0/26","dev":"*"`, `{"dst":"172.21.99.0/26","gateway":"172.21.99.0","dev":"vxlan.calico","protocol":"80","flags":["onlink"]},{"dst":"172.21.211.0/26","dev":"*"`)
			s = edit(t, s, `[{"dst":"172.21.70.192"`, `[{"dst":"172.21.99.0","lladdr":"66:aa:aa:aa:aa:aa","state":["PERMANENT"]},{"dst":"172.21.70.192"`)
			return edit(t, s, `[{"mac":"66:05:38:46:ab:ea"`, `[{"mac":"66:aa:aa:aa:aa:aa","dst":"192.168.10.99","flags":["self"],"state":"permanent"},{"mac":"66:05:38:46:ab:ea"`)
		}, want: []want{
			{"HC508", finding.Warning, []string{"stale route on k8s-lab-node-1: 172.21.99.0/26 via 172.21.99.0 dev vxlan.calico onlink"}},
			{"HC508", finding.Warning, []string{"stale neighbour entry", "172.21.99.0 lladdr 66:aa:aa:aa:aa:aa"}},
			{"HC508", finding.Warning, []string{"stale FDB entry", "66:aa:aa:aa:aa:aa dst 192.168.10.99"}},
		}},
		{name: "its own VTEP MAC disagrees with its annotation", out: func(s string) string {
			return edit(t, s, `"address":"66:ee:f4:61:98:50"`, `"address":"66:ee:f4:61:98:51"`)
		}, want: []want{{"HC508", finding.Error, []string{"vxlan.calico has MAC 66:ee:f4:61:98:51, but the cluster records 66:ee:f4:61:98:50"}}}},
		{name: "flannel's Linux port", out: func(s string) string {
			s = edit(t, s, `"port":4789`, `"port":8472`)
			return edit(t, s, "00000000:12B5", "00000000:2118")
		}, want: []want{{"HC507", finding.Error, []string{"uses UDP port 8472; the cluster's VXLAN port is 4789 (Windows nodes only speak 4789)"}}}},
		{name: "no UDP socket on 4789", out: func(s string) string { return edit(t, s, "00000000:12B5", "00000000:0035") },
			want: []want{{"HC507", finding.Warning, []string{"no UDP socket is bound to port 4789"}}}},
		{name: "vxlan.calico down with another VNI", out: func(s string) string {
			s = edit(t, s, `"ifname":"vxlan.calico","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"]`, `"ifname":"vxlan.calico","flags":["BROADCAST","MULTICAST"]`)
			return edit(t, s, `"id":4096`, `"id":1`)
		}, want: []want{
			{"HC507", finding.Error, []string{"vxlan.calico on k8s-lab-node-1 is down"}},
			{"HC507", finding.Error, []string{"has VNI 1; the cluster's is 4096"}},
		}},
		{name: "no vxlan.calico", mod: func(f *hostfacts.Node) { f.Linux.Links = f.Linux.Links[:2] },
			want: []want{{"HC507", finding.Error, []string{"k8s-lab-node-1 has no vxlan.calico device"}}}},
		{name: "the API unreachable", out: func(s string) string {
			return edit(t, s, "192.168.10.23   RAW\nconnected\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end api 0", "192.168.10.23   RAW\nbash: connect: Connection refused\nbash: line 1: /dev/tcp/k8s-lab-api.example.com/6443: Connection refused\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end api 1")
		}, want: []want{{"HC504", finding.Error, []string{"k8s-lab-node-1 cannot open a TCP connection to the API at k8s-lab-api.example.com:6443", "Connection refused"}}}},
		{name: "x509 in the kubelet's log a minute ago", out: func(s string) string {
			return edit(t, s, "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end kubelet-log 0", `1796173140.000000 k8s-lab-node-1 kubelet[812]: E1202 00:59:00.000000     812 reflector.go:158] "Unhandled Error" err="failed to list *v1.Node: Get \"https://k8s-lab-api.example.com:6443/api/v1/nodes\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T00:59:00Z is before 2026-12-02T01:04:00Z"`+"\n@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end kubelet-log 0")
		}, want: []want{{"HC503", finding.Warning, []string{"shows the clock (x509", "1 line(s)", "certificate has expired or is not yet valid"}}}},
		{name: "the lost connection 16 minutes ago is old news", mod: func(f *hostfacts.Node) {
			f.KubeletLog[0].Time = f.Clock.Node.Add(-RecentLog - time.Second)
		}},
		{name: "the lost connection 14 minutes ago counts", mod: func(f *hostfacts.Node) {
			f.KubeletLog[0].Time = f.Clock.Node.Add(-RecentLog + time.Minute)
		}, want: []want{{"HC503", finding.Warning, []string{"the connection to the API was lost", "http2: client connection lost"}}}},
		{name: "clock 6 minutes ahead", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(-6*time.Minute), 200*time.Millisecond) },
			want: []want{{"HC505", finding.Error, []string{"is 6m0s ahead of this machine's", "beyond the 30s limit"}}}},
		{name: "clock 2 minutes behind", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(2*time.Minute), 200*time.Millisecond) },
			want: []want{{"HC505", finding.Error, []string{"is 2m0s behind this machine's", "NTPSynchronized=yes"}}}},
		{name: "clock 31s ahead", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(-31*time.Second), 200*time.Millisecond) },
			want: []want{{"HC505", finding.Error, []string{"31s ahead"}}}},
		{name: "clock 29s behind", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(29*time.Second), 200*time.Millisecond) }},
		{name: "clock 32s off, explained by a 4 s round trip", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(32*time.Second), 4*time.Second) }},
		{name: "clock 31s off in a 1 s round trip", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(31*time.Second), time.Second) },
			want: []want{{"HC505", finding.Error, []string{"31s behind"}}}},
		{name: "clock 30s off", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(-30*time.Second), 0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := base
			if c.out != nil {
				out = c.out(out)
			}
			f := parseLinuxT(t, "k8s-lab-node-1", out)
			if c.mod != nil {
				c.mod(f)
			}
			fs, _ := Evaluate(f, calicoLab(t), nil, labExpect(), nil)
			expectExactly(t, fs, c.want...)
		})
	}
}

// The guide's k8s-lab-win-1: services, the Calico HNS network with its three
// RemoteSubnetRoutes, and a kubelet log line from 30 s ago showing the
// connection lost when the vSwitch came up.
func TestWindowsGuideNode(t *testing.T) {
	f := parseWindowsT(t, "k8s-lab-win-1", hostfactstest.Fixture(t, hostfactstest.NodeWindows))
	n, ok := f.Windows.NetworkNamed("Calico")
	if !ok || len(n.Routes) != 3 || n.VSID != 4096 || n.DrMAC != "00:15:5d:eb:90:ae" {
		t.Fatalf("Calico network parsed as %+v", n)
	}
	if s := f.Services["hns"]; !s.Found || s.StartType != "Manual" {
		t.Fatalf("hns: %+v", s)
	}
	fs, sk := Evaluate(f, calicoLab(t), nil, labExpect(), nil)
	expectExactly(t, fs, want{"HC503", finding.Warning, []string{"the connection to the API was lost", "wsarecv"}})
	if len(sk) != 0 {
		t.Errorf("skipped: %+v", sk)
	}
}

// containerd's log tail is kept for --collect; a log that does not exist
// (the Calico CNI plugin's, before any pod ran) is no file and no finding.
func TestWindowsLogsCollected(t *testing.T) {
	f := parseWindowsT(t, "k8s-lab-win-1", hostfactstest.Fixture(t, hostfactstest.NodeWindows))
	raw := map[string]string{}
	for _, r := range f.Raw {
		raw[r.Name] = string(r.Data)
	}
	if got := raw["containerd.log.tail"]; !strings.Contains(got, "containerd successfully booted") || !strings.HasSuffix(got, "\n") {
		t.Errorf("containerd.log.tail = %q", got)
	}
	if _, ok := raw["calico-cni.log.tail"]; ok {
		t.Errorf("calico-cni.log.tail kept from a failed probe")
	}
	w := parseWindowsT(t, "k8s-lab-win-1", edit(t, hostfactstest.Fixture(t, hostfactstest.NodeWindows),
		`"calicoCNILog":{"ok":false,"error":"C:\\var\\log\\calico\\cni\\cni.log does not exist"}`,
		`"calicoCNILog":{"ok":true,"value":["2026-12-02 00:59:00.000 [INFO][1234] plugin.go 100: Calico CNI ADD"]}`))
	found := false
	for _, r := range w.Raw {
		found = found || (r.Name == "calico-cni.log.tail" && strings.Contains(string(r.Data), "Calico CNI ADD"))
	}
	if !found {
		t.Errorf("calico-cni.log.tail not kept: %+v", w.Raw)
	}
}

func TestWindowsNearMisses(t *testing.T) {
	base := hostfactstest.Fixture(t, hostfactstest.NodeWindows)
	lost := want{"HC503", finding.Warning, []string{"the connection to the API was lost"}}
	cases := []struct {
		name string
		out  func(string) string
		mod  func(*hostfacts.Node)
		want []want
	}{
		{name: "a RemoteSubnetRoute whose MAC disagrees with node-1's VTEP", out: func(s string) string {
			return edit(t, s, `"ProviderAddress":"192.168.10.24","DistributedRouterMacAddress":"66-ee-f4-61-98-50"`, `"ProviderAddress":"192.168.10.24","DistributedRouterMacAddress":"66-ee-f4-61-98-51"`)
		}, want: []want{lost, {"HC508", finding.Error, []string{
			"the RemoteSubnetRoute for k8s-lab-node-1's block 172.21.211.0/26 on k8s-lab-win-1 has MAC 66:ee:f4:61:98:51, but k8s-lab-node-1's VTEP MAC is 66:ee:f4:61:98:50",
			"node: RemoteSubnetRoute 172.21.211.0/26 ProviderAddress 192.168.10.24 DistributedRouterMacAddress 66:ee:f4:61:98:51",
			"cluster: block 172.21.211.0/26 is affine to k8s-lab-node-1 (address 192.168.10.24), whose VXLAN tunnel address is 172.21.211.0 and VTEP MAC 66:ee:f4:61:98:50"}}}},
		{name: "a RemoteSubnetRoute to the wrong address", out: func(s string) string {
			return edit(t, s, `"DestinationPrefix":"172.21.172.0/26","IsolationId":4096,"ProviderAddress":"192.168.10.26"`, `"DestinationPrefix":"172.21.172.0/26","IsolationId":4096,"ProviderAddress":"192.168.10.62"`)
		}, want: []want{lost, {"HC508", finding.Error, []string{"sends to 192.168.10.62, but k8s-lab-node-2's address is 192.168.10.26"}}}},
		{name: "no RemoteSubnetRoute for the master", out: func(s string) string {
			return edit(t, s, `{"Type":"RemoteSubnetRoute","DestinationPrefix":"172.21.70.192/26","IsolationId":4096,"ProviderAddress":"192.168.10.23","DistributedRouterMacAddress":"66-79-81-e0-1a-7d"},`, "")
		}, want: []want{lost, {"HC508", finding.Error, []string{"no RemoteSubnetRoute for k8s-lab-master-1's block 172.21.70.192/26 (want provider 192.168.10.23, MAC 66:79:81:e0:1a:7d)"}}}},
		{name: "a stale RemoteSubnetRoute", out: func(s string) string {
			return edit(t, s, `"policies":[{"Type":"RemoteSubnetRoute"`, `"policies":[{"Type":"RemoteSubnetRoute","DestinationPrefix":"172.21.5.64/26","IsolationId":4096,"ProviderAddress":"192.168.10.40","DistributedRouterMacAddress":"66-00-00-00-00-01"},{"Type":"RemoteSubnetRoute"`)
		}, want: []want{lost, {"HC508", finding.Warning, []string{"stale RemoteSubnetRoute on k8s-lab-win-1: 172.21.5.64/26 via 192.168.10.40"}}}},
		{name: "containerd stopped, with the Service Control Manager's reason", out: func(s string) string {
			s = edit(t, s, `{"name":"containerd","status":"Running","startType":"Automatic"}`, `{"name":"containerd","status":"Stopped","startType":"Automatic"}`)
			return edit(t, s, `"serviceEvents":{"ok":true,"value":null}`, `"serviceEvents":{"ok":true,"value":{"id":7034,"time":"2026-12-02T00:58:00.0000000Z","service":"containerd","message":"The containerd service terminated unexpectedly.  It has done this 3 time(s)."}}`)
		}, want: []want{lost, {"HC501", finding.Error, []string{"containerd is not running on k8s-lab-win-1 (Stopped)", "logged 1 failure(s)", "event 7034 (terminated unexpectedly): The containerd service terminated unexpectedly. It has done this 3 time(s)."}}}},
		{name: "a 7036 state-change event is no failure", out: func(s string) string {
			return edit(t, s, `"serviceEvents":{"ok":true,"value":null}`, `"serviceEvents":{"ok":true,"value":[{"id":7036,"time":"2026-12-02T00:58:00Z","service":"kubelet","message":"The kubelet service entered the running state."}]}`)
		}, want: []want{lost}},
		{name: "hns disabled", out: func(s string) string {
			return edit(t, s, `{"name":"hns","status":"Running","startType":"Manual"}`, `{"name":"hns","status":"Stopped","startType":"Disabled"}`)
		}, want: []want{lost, {"HC501", finding.Error, []string{"hns is Disabled on k8s-lab-win-1"}}}},
		{name: "vmcompute stopped on demand is normal", out: func(s string) string {
			return edit(t, s, `{"name":"vmcompute","status":"Running","startType":"Manual"}`, `{"name":"vmcompute","status":"Stopped","startType":"Manual"}`)
		}, want: []want{lost}},
		{name: "no Containers feature", out: func(s string) string {
			return edit(t, s, `{"name":"vmcompute","status":"Running","startType":"Manual"},`, "")
		}, want: []want{lost, {"HC501", finding.Error, []string{"the vmcompute service does not exist", "Containers feature"}}}},
		{name: "no firewall rule for 4789", out: func(s string) string {
			return edit(t, s, `"firewall":{"ok":true,"value":{"enabled":"True","direction":"Inbound","action":"Allow"}}`, `"firewall":{"ok":true,"value":null}`)
		}, want: []want{lost, {"HC507", finding.Warning, []string{"no OverlayTraffic4789UDP firewall rule"}}}},
		{name: "the firewall rule disabled", out: func(s string) string {
			return edit(t, s, `"enabled":"True"`, `"enabled":"False"`)
		}, want: []want{lost, {"HC507", finding.Warning, []string{"does not let VXLAN in (enabled false"}}}},
		{name: "no Calico HNS network", out: func(s string) string { return edit(t, s, `"name":"Calico"`, `"name":"nat"`) },
			want: []want{lost, {"HC507", finding.Error, []string{"k8s-lab-win-1 has no HNS network named Calico; it has: External (Overlay), nat (Overlay)"}}}},
		{name: "the Calico network's DrPort MAC disagrees with the annotation", out: func(s string) string {
			return edit(t, s, `"00-15-5D-EB-90-AE"`, `"00-15-5D-EB-90-AF"`)
		}, want: []want{lost, {"HC508", finding.Error, []string{"distributed router MAC of Calico on k8s-lab-win-1 is 00:15:5d:eb:90:af, but the cluster records 00:15:5d:eb:90:ae"}}}},
		{name: "no CNI directory", out: func(s string) string {
			return edit(t, s, `"cni":{"ok":true,"value":{"name":"10-calico.conf"`, `"cni":{"ok":false,"error":"C:\\etc\\cni\\net.d does not exist","value":{"name":"x"`)
		}, want: []want{lost, {"HC506", finding.Error, []string{`no CNI configuration on k8s-lab-win-1: C:\etc\cni\net.d does not exist`}}}},
		{name: "crictl does not answer", out: func(s string) string {
			return edit(t, s, `"cri":{"ok":true,"value":{"ran":true,"ok":true,"detail":"crictl info answered"`, `"cri":{"ok":true,"value":{"ran":true,"ok":false,"detail":"validate service connection: open //./pipe/containerd-containerd: The system cannot find the file specified."`)
		}, want: []want{lost, {"HC502", finding.Error, []string{"containerd does not answer crictl info on k8s-lab-win-1", "pipe/containerd-containerd"}}}},
		{name: "the API unreachable", out: func(s string) string {
			return edit(t, s, `"api":{"ok":true,"value":"connected"}`, `"api":{"ok":false,"error":"no answer within 5 s"}`)
		}, want: []want{lost, {"HC504", finding.Error, []string{"cannot open a TCP connection to the API at k8s-lab-api.example.com:6443: no answer within 5 s"}}}},
		{name: "the log's local time read as UTC is 3 hours off", out: func(s string) string {
			return edit(t, s, `"utcOffsetMinutes":{"ok":true,"value":180}`, `"utcOffsetMinutes":{"ok":true,"value":0}`)
		}},
		{name: "clock 2 minutes behind", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(2*time.Minute), time.Second) },
			want: []want{lost, {"HC505", finding.Error, []string{"2m0s behind"}}}},
		{name: "clock 6 minutes ahead", mod: func(f *hostfacts.Node) { bracket(f, f.Clock.Node.Add(-6*time.Minute), time.Second) },
			want: []want{lost, {"HC505", finding.Error, []string{"6m0s ahead"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := base
			if c.out != nil {
				out = c.out(out)
			}
			f := parseWindowsT(t, "k8s-lab-win-1", out)
			if c.mod != nil {
				c.mod(f)
			}
			fs, _ := Evaluate(f, calicoLab(t), nil, labExpect(), nil)
			expectExactly(t, fs, c.want...)
		})
	}
}

// The hybridctl lab: bridge + host-local on spec.podCIDR and a route to
// each other node's podCIDR via its address (podnet, protocol 201).
const labRoutes = `[{"dst":"default","gateway":"192.168.10.1","dev":"host0","protocol":"static","flags":[]},` +
	`{"dst":"172.21.0.0/24","gateway":"192.168.10.23","dev":"host0","protocol":"201","flags":[]},` +
	`{"dst":"172.21.1.0/24","dev":"cni0","protocol":"kernel","scope":"link","prefsrc":"172.21.1.1","flags":[]},` +
	`{"dst":"172.21.2.0/24","gateway":"192.168.10.26","dev":"host0","protocol":"201","flags":[]},` +
	`{"dst":"192.168.10.0/24","dev":"host0","protocol":"kernel","scope":"link","prefsrc":"192.168.10.24","flags":[]}]`

func routesLab(t *testing.T) *Cluster {
	var nodes = labNodes(t)[:3] // the Linux lab: no Windows node
	for i := range nodes {
		delete(nodes[i].Annotations, AnnotCalicoTunnelAddr)
		delete(nodes[i].Annotations, AnnotCalicoTunnelMAC)
	}
	c := buildCluster(nodes, nil, "")
	if c.Source != SourceRoutes {
		t.Fatalf("source %s", c.Source)
	}
	return c
}

func TestLabRoutes(t *testing.T) {
	base := hostfactstest.Fixture(t, hostfactstest.NodeLinux)
	base = strings.Replace(base, base[strings.Index(base, "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin routes\n"):strings.Index(base, "@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b end routes 0")],
		"@@hybridctl-5f2c0d9e8a7b6c5d4e3f2a1b begin routes\n"+labRoutes+"\n", 1)
	cases := []struct {
		name string
		out  func(string) string
		want []want
	}{
		{name: "clean"},
		{name: "a removed route", out: func(s string) string {
			return edit(t, s, `{"dst":"172.21.2.0/24","gateway":"192.168.10.26","dev":"host0","protocol":"201","flags":[]},`, "")
		}, want: []want{{"HC508", finding.Error, []string{"k8s-lab-node-1 has no route to k8s-lab-node-2's pod network 172.21.2.0/24 (want 172.21.2.0/24 via 192.168.10.26)", "cluster: Node k8s-lab-node-2 has podCIDR 172.21.2.0/24 and InternalIP 192.168.10.26"}}}},
		{name: "a route via an old address", out: func(s string) string {
			return edit(t, s, `"dst":"172.21.2.0/24","gateway":"192.168.10.26"`, `"dst":"172.21.2.0/24","gateway":"192.168.10.36"`)
		}, want: []want{{"HC508", finding.Error, []string{"routes k8s-lab-node-2's pod network 172.21.2.0/24 via 192.168.10.36, but k8s-lab-node-2's address is 192.168.10.26", "node: 172.21.2.0/24 via 192.168.10.36 dev host0"}}}},
		{name: "a stale route of a deleted node", out: func(s string) string {
			return edit(t, s, `{"dst":"192.168.10.0/24"`, `{"dst":"172.21.7.0/24","gateway":"192.168.10.40","dev":"host0","protocol":"201","flags":[]},{"dst":"192.168.10.0/24"`)
		}, want: []want{{"HC508", finding.Warning, []string{"stale route on k8s-lab-node-1: 172.21.7.0/24 via 192.168.10.40 dev host0 matches no Node's podCIDR"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := base
			if c.out != nil {
				out = c.out(out)
			}
			f := parseLinuxT(t, "k8s-lab-node-1", out)
			fs, sk := Evaluate(f, routesLab(t), nil, labExpect(), nil)
			expectExactly(t, fs, c.want...)
			// No VXLAN in the lab: HC507 says so, and is not "incomplete".
			if len(sk) != 1 || sk[0].Check != "HC507" || sk[0].Incomplete || !strings.Contains(sk[0].Reason, "plain routes") {
				t.Errorf("skipped: %+v", sk)
			}
		})
	}
}

func TestClusterSources(t *testing.T) {
	nodes := labNodes(t)
	c := calicoLab(t)
	n1, _ := c.Node("k8s-lab-node-1")
	if c.Source != SourceCalico || n1.MAC != "66:ee:f4:61:98:50" || n1.Tunnel.String() != "172.21.211.0" || n1.Address.String() != "192.168.10.24" ||
		len(n1.Blocks) != 1 || n1.Blocks[0].String() != "172.21.211.0/26" || len(n1.Problems) != 0 {
		t.Fatalf("calico: %+v", n1)
	}
	// Deleted and pending affinities do not count; with none left, the
	// view falls back to the Nodes.
	affs := labAffinities()
	for i := range affs {
		if i%2 == 0 {
			affs[i].Deleted = true
		} else {
			affs[i].State = "pendingDeletion"
		}
	}
	if got := buildCluster(labNodes(t), affs, "x").Source; got != SourceRoutes {
		t.Errorf("only deleted/pending affinities: source %s", got)
	}
	// One deleted block of node-2 besides its live one is ignored.
	affs = append(labAffinities(), affinity{Node: "k8s-lab-node-2", CIDR: "172.21.9.0/26", State: "confirmed", Deleted: true})
	if n2, _ := buildCluster(labNodes(t), affs, "x").Node("k8s-lab-node-2"); len(n2.Blocks) != 1 {
		t.Errorf("deleted block kept: %v", n2.Blocks)
	}
	// A Node without its MAC annotation is reported, not guessed.
	delete(nodes[2].Annotations, AnnotCalicoTunnelMAC)
	if n, _ := buildCluster(nodes, labAffinities(), "x").Node(nodes[2].Name); len(n.Problems) != 1 || !strings.Contains(n.Problems[0], AnnotCalicoTunnelMAC) {
		t.Errorf("problems: %v", n.Problems)
	}
	// flannel: backend-data's VtepMAC, public-ip, spec.podCIDR.
	nodes = labNodes(t)[:3]
	for i := range nodes {
		nodes[i].Annotations = map[string]string{AnnotFlannelBackend: `{"VNI":1,"VtepMAC":"2A:11:22:33:44:0` + string(rune('0'+i)) + `"}`,
			AnnotFlannelType: "vxlan", AnnotFlannelPublicIP: nodes[i].Status.Addresses[0].Address}
	}
	fl := buildCluster(nodes, nil, "")
	fn, _ := fl.Node("k8s-lab-node-1")
	if fl.Source != SourceFlannel || fl.Device != "flannel.1" || fn.MAC != "2a:11:22:33:44:01" || fn.Tunnel != netip.MustParseAddr("172.21.1.0") || fn.Address.String() != "192.168.10.24" {
		t.Fatalf("flannel: %+v %+v", fl, fn)
	}
}

func TestResolveChecks(t *testing.T) {
	got, err := Resolve([]string{"HC508", "clock-skew", " hc501 "})
	if err != nil || len(got) != 3 || !got["HC508"] || !got["HC505"] || !got["HC501"] {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := Resolve([]string{"clock-skwe"}); err == nil || !strings.Contains(err.Error(), `"clock-skwe"`) || !strings.Contains(err.Error(), "HC505 clock-skew") {
		t.Errorf("unknown check: %v", err)
	}
	// The IDs are unique, in order, and outside doctor's catalogue.
	seen := map[string]bool{}
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		seen[d.ID], seen[d.Name] = true, true
	}
	prev := ""
	for _, c := range Checks() {
		if seen[c.ID] || seen[c.Name] || c.ID <= prev || c.Fix == "" || c.Why == "" || c.Title == "" {
			t.Errorf("check %s %s: duplicate, out of order or undocumented", c.ID, c.Name)
		}
		seen[c.ID], seen[c.Name], prev = true, true, c.ID
	}
}

// TestClockUnknown: a sample whose uncertainty is larger than the limit
// hides a clock that may be off by more; HC505 skips it as incomplete
// rather than calling it fine. At the limit it is judged.
func TestClockUnknown(t *testing.T) {
	f := parseLinuxT(t, "k8s-lab-node-1", hostfactstest.Fixture(t, hostfactstest.NodeLinux))
	bracket(f, f.Clock.Node, 2*hostfacts.MaxClockSkew+2*time.Millisecond)
	fs, sk := Evaluate(f, calicoLab(t), nil, labExpect(), map[string]bool{"HC505": true})
	expectExactly(t, fs)
	if len(sk) != 1 || sk[0].Check != "HC505" || !sk[0].Incomplete || !strings.Contains(sk[0].Reason, "larger than the 30s limit") {
		t.Errorf("skipped: %+v", sk)
	}
	bracket(f, f.Clock.Node.Add(-31*time.Second), 2*hostfacts.MaxClockSkew)
	fs, sk = Evaluate(f, calicoLab(t), nil, labExpect(), map[string]bool{"HC505": true})
	expectExactly(t, fs)
	if len(sk) != 0 {
		t.Errorf("an uncertainty at the limit: skipped %+v", sk)
	}
	f.Clock = hostfacts.Clock{Detail: "the clock command printed \"x\", not a time"}
	_, sk = Evaluate(f, calicoLab(t), nil, labExpect(), map[string]bool{"HC505": true})
	if len(sk) != 1 || !sk[0].Incomplete || !strings.Contains(sk[0].Reason, "not a time") {
		t.Errorf("no sample: skipped %+v", sk)
	}
}

func TestOnlySelectedChecksRun(t *testing.T) {
	f := parseLinuxT(t, "k8s-lab-node-1", edit(t, hostfactstest.Fixture(t, hostfactstest.NodeLinux), `"address":"66:ee:f4:61:98:50"`, `"address":"66:ee:f4:61:98:51"`))
	bracket(f, f.Clock.Node.Add(time.Hour), 0)
	fs, _ := Evaluate(f, calicoLab(t), nil, labExpect(), map[string]bool{"HC505": true})
	expectExactly(t, fs, want{"HC505", finding.Error, []string{"1h0m0s behind"}})
	// Without the cluster's view the two checks that need it are skipped as
	// incomplete; the others still run.
	fs, sk := Evaluate(f, nil, ErrNoAPI, labExpect(), nil)
	expectExactly(t, fs, want{"HC505", finding.Error, []string{"1h0m0s behind"}})
	if len(sk) != 2 || sk[0].Check != "HC507" || sk[1].Check != "HC508" || !sk[0].Incomplete || !strings.Contains(sk[1].Reason, ErrNoAPI.Error()) {
		t.Errorf("skipped: %+v", sk)
	}
}
