package hostfacts_test

import (
	"strings"
	"testing"

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
