package main

import (
	"encoding/json"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestConflist(t *testing.T) {
	data, err := conflist("172.21.1.0/24", 1450)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []struct {
			Type string `json:"type"`
			MTU  int    `json:"mtu"`
			IPAM struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if c.CNIVersion != "1.0.0" || len(c.Plugins) != 2 || c.Plugins[0].Type != "bridge" || c.Plugins[1].Type != "portmap" {
		t.Fatalf("conflist: %s", data)
	}
	p := c.Plugins[0]
	if p.MTU != 1450 || p.IPAM.Type != "host-local" || p.IPAM.Ranges[0][0]["subnet"] != "172.21.1.0/24" {
		t.Fatalf("bridge plugin: %+v", p)
	}
	data, _ = conflist("172.21.1.0/24", 0)
	var d struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if json.Unmarshal(data, &d) != nil || d.Plugins[0]["mtu"] != nil {
		t.Fatalf("MTU 0 must leave the plugin's default: %s", data)
	}
}

func TestFirstV4(t *testing.T) {
	if n := firstV4([]string{"fd00::/64", "garbage", "10.1.2.0/24"}); n == nil || n.String() != "10.1.2.0/24" {
		t.Fatalf("firstV4 = %v", n)
	}
	if n := firstV4([]string{"fd00::/64"}); n != nil {
		t.Fatalf("firstV4 of IPv6 only = %v", n)
	}
}

// TestSyncRoutes programs routes in a network namespace of its own: added
// for new peers, left alone when right, replaced when a node's address
// changes, removed when the node is gone; routes podnet does not own stay.
func TestSyncRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a network namespace; not with -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (a network namespace), as the lab does")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // also switches this thread into it
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(err) // never return this thread to the pool in the test's namespace
		}
		ns.Close()
	}()

	la := netlink.NewLinkAttrs()
	la.Name = "lab0"
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil { // no dummy module here; bridges are built in
		t.Fatal(err)
	}
	link, err := netlink.LinkByName("lab0")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("192.168.10.23/24")
	if err := netlink.AddrAdd(link, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	// A route podnet does not own, to the same kind of destination.
	_, other, _ := net.ParseCIDR("10.99.0.0/24")
	if err := netlink.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("192.168.10.99")}); err != nil {
		t.Fatal(err)
	}

	cidr := func(s string) *net.IPNet { _, n, _ := net.ParseCIDR(s); return n }
	owned := func() map[string]string {
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProto}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range rs {
			m[r.Dst.String()] = r.Gw.String()
		}
		return m
	}
	check := func(step string, want map[string]string) {
		t.Helper()
		got := owned()
		if len(got) != len(want) {
			t.Fatalf("%s: routes %v, want %v", step, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: routes %v, want %v", step, got, want)
			}
		}
	}

	peers := []peer{
		{node: "k8s-lab-node-1", cidr: cidr("172.21.1.0/24"), via: net.ParseIP("192.168.10.24").To4()},
		{node: "k8s-lab-node-2", cidr: cidr("172.21.2.0/24"), via: net.ParseIP("192.168.10.26").To4()},
	}
	if err := syncRoutes(peers); err != nil {
		t.Fatal(err)
	}
	check("first sync", map[string]string{"172.21.1.0/24": "192.168.10.24", "172.21.2.0/24": "192.168.10.26"})
	if err := syncRoutes(peers); err != nil {
		t.Fatal(err)
	}
	check("same again", map[string]string{"172.21.1.0/24": "192.168.10.24", "172.21.2.0/24": "192.168.10.26"})
	// node-2 moves; node-1 leaves.
	moved := []peer{{node: "k8s-lab-node-2", cidr: cidr("172.21.2.0/24"), via: net.ParseIP("192.168.10.27").To4()}}
	if err := syncRoutes(moved); err != nil {
		t.Fatal(err)
	}
	check("moved and left", map[string]string{"172.21.2.0/24": "192.168.10.27"})
	// A peer that is not reachable on any link is an error, and the
	// others are still programmed.
	bad := append(moved, peer{node: "far", cidr: cidr("172.21.3.0/24"), via: net.ParseIP("203.0.113.9").To4()})
	if err := syncRoutes(bad); err == nil {
		t.Fatal("a route via an unreachable gateway was accepted")
	}
	check("one bad peer", map[string]string{"172.21.2.0/24": "192.168.10.27"})
	rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, r := range rs {
		if r.Dst != nil && r.Dst.String() == other.String() {
			kept = true
		}
	}
	if !kept {
		t.Fatal("podnet removed a route it does not own")
	}
}
