package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestConflist(t *testing.T) {
	data, err := conflist("172.21.1.0/24", 1450)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []struct {
			Type         string `json:"type"`
			MTU          int    `json:"mtu"`
			ForceAddress bool   `json:"forceAddress"`
			IPAM         struct {
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
	// A node back with another podCIDR: the bridge takes the new gateway.
	if !p.ForceAddress {
		t.Fatalf("the bridge plugin would keep an old gateway address: %s", data)
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

// node is a Node with a podCIDR (none when empty) and an InternalIP (none
// when empty).
func node(name, cidr, ip string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if cidr != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	if ip != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return n
}

func TestDesired(t *testing.T) {
	ns := []*corev1.Node{
		node("w2", "10.244.2.0/24", "192.168.10.26"),
		node("self", "10.244.0.0/24", "192.168.10.23"),
		node("w1", "10.244.1.0/24", "192.168.10.24"),
		node("no-cidr", "", "192.168.10.30"),
		node("no-ip", "10.244.9.0/24", ""),
		node("v6", "fd00::/64", "192.168.10.31"),
	}
	old := node("legacy", "", "192.168.10.32")
	old.Spec.PodCIDR = "10.244.5.0/24" // only the singular field
	ns = append(ns, old)
	own, peers := desired("self", ns)
	if own == nil || own.String() != "10.244.0.0/24" {
		t.Fatalf("own = %v", own)
	}
	var got []string
	for _, p := range peers {
		got = append(got, p.node+" "+p.cidr.String()+" via "+p.via.String())
	}
	want := "w1 10.244.1.0/24 via 192.168.10.24,w2 10.244.2.0/24 via 192.168.10.26,legacy 10.244.5.0/24 via 192.168.10.32"
	if strings.Join(got, ",") != want {
		t.Fatalf("peers\n%s\nwant\n%s", strings.Join(got, ","), want)
	}
	if own, _ := desired("gone", ns); own != nil {
		t.Fatalf("a node that is not listed has %v", own)
	}
}

// TestChanged: a podCIDR or InternalIP change matters; a status heartbeat
// does not.
func TestChanged(t *testing.T) {
	a := node("w1", "10.244.1.0/24", "192.168.10.24")
	b := a.DeepCopy()
	b.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	b.ResourceVersion = "2"
	if changed(a, b) {
		t.Error("a heartbeat counts as a change")
	}
	c := a.DeepCopy()
	c.Spec.PodCIDR, c.Spec.PodCIDRs = "10.244.3.0/24", []string{"10.244.3.0/24"}
	d := a.DeepCopy()
	d.Status.Addresses[1].Address = "192.168.10.25"
	e := node("w1", "", "192.168.10.24")
	f := node("w1", "10.244.1.0/24", "")
	for i, x := range []*corev1.Node{c, d, e, f} {
		if !changed(a, x) || !changed(x, a) {
			t.Errorf("change %d not seen", i)
		}
	}
	if !changed(a, "not a node") {
		t.Error("an unexpected object is not taken as a change")
	}
}

// containerdReloads applies containerd's rule for its CNI directory's
// watcher (internal/cri/server/cni_conf_syncer.go in containerd 2.2):
// create and chmod events are ignored, any other event reloads.
func containerdReloads(ev fsnotify.Event) bool {
	return !ev.Has(fsnotify.Chmod) && !ev.Has(fsnotify.Create)
}

// events collects the watcher's events until quiet for 200 ms.
func events(t *testing.T, w *fsnotify.Watcher) []fsnotify.Event {
	t.Helper()
	var out []fsnotify.Event
	for {
		select {
		case ev := <-w.Events:
			out = append(out, ev)
		case err := <-w.Errors:
			t.Fatal(err)
		case <-time.After(200 * time.Millisecond):
			return out
		}
	}
}

func reloads(evs []fsnotify.Event) bool {
	for _, ev := range evs {
		if containerdReloads(ev) {
			return true
		}
	}
	return false
}

// TestWriteConfContainerdSeesIt: every write of the configuration reaches
// containerd's watcher as an event it reloads on; the file is complete and
// 0644, nothing else is left in the directory; an unchanged configuration
// is not written again, but a new agent writes it once whatever is on
// disk, so a configuration moved back by hand (a create event, which
// containerd ignores) is loaded once podnet runs again.
func TestWriteConfContainerdSeesIt(t *testing.T) {
	dir := t.TempDir()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	_, cidr, _ := net.ParseCIDR("10.244.1.0/24")
	_, moved, _ := net.ParseCIDR("10.244.3.0/24")
	path := filepath.Join(dir, confName)
	want := func(c *net.IPNet) {
		t.Helper()
		b, err := os.ReadFile(path)
		exp, _ := conflist(c.String(), 0)
		if err != nil || string(b) != string(exp) {
			t.Fatalf("%s: %q, %v; want the configuration for %s", path, b, err, c)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s is %v", path, fi.Mode())
		}
		left, _ := os.ReadDir(dir)
		if len(left) != 1 {
			t.Fatalf("the directory holds %v", left)
		}
	}

	a := &agent{config: config{confDir: dir}}
	if err := a.writeConf(t.Context(), cidr); err != nil {
		t.Fatal(err)
	}
	want(cidr)
	if evs := events(t, w); !reloads(evs) {
		t.Fatalf("the first write gives containerd nothing to reload on: %v", evs)
	}
	if err := a.writeConf(t.Context(), cidr); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, w); len(evs) != 0 {
		t.Fatalf("an unchanged configuration was written again: %v", evs)
	}
	// The node is back with another podCIDR.
	if err := a.writeConf(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	want(moved)
	if evs := events(t, w); !reloads(evs) {
		t.Fatalf("the new podCIDR gives containerd nothing to reload on: %v", evs)
	}

	// Moved away and back by hand: containerd sees only a create.
	aside := filepath.Join(t.TempDir(), confName)
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	events(t, w)
	if err := os.Rename(aside, path); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, w); reloads(evs) {
		t.Fatalf("moving the file back gave a reload event (%v): the test's model of containerd is wrong", evs)
	}
	// The same agent finds it as it wrote it: nothing to do.
	if err := a.writeConf(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	if evs := events(t, w); len(evs) != 0 {
		t.Fatalf("an unchanged configuration was written again: %v", evs)
	}
	// A new agent (podnet restarted) writes it once.
	b := &agent{config: config{confDir: dir}}
	if err := b.writeConf(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	want(moved)
	if evs := events(t, w); !reloads(evs) {
		t.Fatalf("a restarted agent gives containerd nothing to reload on: %v", evs)
	}
	// Changed by hand: written again.
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	events(t, w)
	if err := b.writeConf(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	want(moved)

	// A directory it cannot write: an error naming the file, nothing left.
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		c := &agent{config: config{confDir: ro}}
		if err := c.writeConf(t.Context(), cidr); err == nil || !strings.Contains(err.Error(), filepath.Join(ro, confName)) {
			t.Errorf("a read-only directory: %v", err)
		}
	}
}

// inNetns runs the test against a network namespace of its own: a netlink
// handle on it, with a bridge lab0 holding 192.168.10.23/24 (the node's
// own address; no dummy module here, bridges are built in).
func inNetns(t *testing.T) *netlink.Handle {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a network namespace; not with -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (a network namespace), as the lab does")
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.New() // also switches this thread into it
	if err != nil {
		t.Fatal(err)
	}
	if err := netns.Set(orig); err != nil {
		panic(err) // never return this thread to the pool in the test's namespace
	}
	orig.Close()
	runtime.UnlockOSThread()
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	la := netlink.NewLinkAttrs()
	la.Name = "lab0"
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil {
		t.Fatal(err)
	}
	link, err := h.LinkByName("lab0")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("192.168.10.23/24")
	if err := h.AddrAdd(link, addr); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	return h
}

// owned are the routes podnet owns in h's namespace: destination -> gateway.
func owned(t *testing.T, h *netlink.Handle) map[string]string {
	t.Helper()
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProto}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range rs {
		m[r.Dst.String()] = r.Gw.String()
	}
	return m
}

func sameRoutes(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestSyncRoutes programs routes in a network namespace of its own: added
// for new peers, left alone when right, replaced when a node's address
// changes, removed when the node is gone; routes podnet does not own stay.
func TestSyncRoutes(t *testing.T) {
	h := inNetns(t)
	// A route podnet does not own, to the same kind of destination.
	_, other, _ := net.ParseCIDR("10.99.0.0/24")
	if err := h.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("192.168.10.99")}); err != nil {
		t.Fatal(err)
	}
	cidr := func(s string) *net.IPNet { _, n, _ := net.ParseCIDR(s); return n }
	check := func(step string, want map[string]string) {
		t.Helper()
		if got := owned(t, h); !sameRoutes(got, want) {
			t.Fatalf("%s: routes %v, want %v", step, got, want)
		}
	}

	peers := []peer{
		{node: "k8s-lab-node-1", cidr: cidr("172.21.1.0/24"), via: net.ParseIP("192.168.10.24").To4()},
		{node: "k8s-lab-node-2", cidr: cidr("172.21.2.0/24"), via: net.ParseIP("192.168.10.26").To4()},
	}
	if err := syncRoutes(t.Context(), h, peers); err != nil {
		t.Fatal(err)
	}
	check("first sync", map[string]string{"172.21.1.0/24": "192.168.10.24", "172.21.2.0/24": "192.168.10.26"})
	if err := syncRoutes(t.Context(), h, peers); err != nil {
		t.Fatal(err)
	}
	check("same again", map[string]string{"172.21.1.0/24": "192.168.10.24", "172.21.2.0/24": "192.168.10.26"})
	// node-2 moves; node-1 leaves.
	moved := []peer{{node: "k8s-lab-node-2", cidr: cidr("172.21.2.0/24"), via: net.ParseIP("192.168.10.27").To4()}}
	if err := syncRoutes(t.Context(), h, moved); err != nil {
		t.Fatal(err)
	}
	check("moved and left", map[string]string{"172.21.2.0/24": "192.168.10.27"})
	// A peer that is not reachable on any link is an error, and the
	// others are still programmed.
	bad := append(moved, peer{node: "far", cidr: cidr("172.21.3.0/24"), via: net.ParseIP("203.0.113.9").To4()})
	if err := syncRoutes(t.Context(), h, bad); err == nil {
		t.Fatal("a route via an unreachable gateway was accepted")
	}
	check("one bad peer", map[string]string{"172.21.2.0/24": "192.168.10.27"})
	rs, err := h.RouteList(nil, netlink.FAMILY_V4)
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

// TestWatchFollowsNodeChurn runs the agent against a real API server
// (internal/testenv) in a network namespace of its own, with a resync of
// an hour, so that only the watch can make it act: the configuration and
// routes follow nodes that join, leave and join again with another
// podCIDR, within seconds.
func TestWatchFollowsNodeChurn(t *testing.T) {
	h := inNetns(t)
	env := testenv.StartT(t, testenv.Options{})
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	dir := t.TempDir()
	a := &agent{config: config{node: "self", confDir: dir, resync: time.Hour}, nl: h}
	done := make(chan error, 1)
	go func() { done <- watch(ctx, cs, a) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	}()

	create := func(n *corev1.Node) {
		t.Helper()
		c, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Status.Addresses = n.Status.Addresses
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(name string) {
		t.Helper()
		if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	conf := func() string {
		b, err := os.ReadFile(filepath.Join(dir, confName))
		if errors.Is(err, os.ErrNotExist) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Plugins []struct {
				IPAM struct {
					Ranges [][]map[string]string `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("the configuration on disk: %v\n%s", err, b)
		}
		return c.Plugins[0].IPAM.Ranges[0][0]["subnet"]
	}
	await := func(step, subnet string, routes map[string]string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, gotRoutes := conf(), owned(t, h)
			if got == subnet && sameRoutes(gotRoutes, routes) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 15 s the configuration is for %q (want %q), the routes %v (want %v)", step, got, subnet, gotRoutes, routes)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	create(node("self", "", "192.168.10.23")) // joined, no podCIDR yet
	create(node("w1", "10.244.1.0/24", "192.168.10.24"))
	await("a peer joins before the node has a podCIDR", "", map[string]string{"10.244.1.0/24": "192.168.10.24"})
	// The node itself leaves and joins again, now with a podCIDR.
	remove("self")
	create(node("self", "10.244.0.0/24", "192.168.10.23"))
	await("the node gets a podCIDR", "10.244.0.0/24", map[string]string{"10.244.1.0/24": "192.168.10.24"})
	create(node("w2", "10.244.2.0/24", "192.168.10.26"))
	await("a second peer joins", "10.244.0.0/24", map[string]string{"10.244.1.0/24": "192.168.10.24", "10.244.2.0/24": "192.168.10.26"})
	// w2 is reset: deleted, then joins again with another podCIDR (a
	// Node's podCIDR never changes in place).
	remove("w2")
	await("a peer leaves: its route goes", "10.244.0.0/24", map[string]string{"10.244.1.0/24": "192.168.10.24"})
	create(node("w2", "10.244.3.0/24", "192.168.10.26"))
	await("the peer is back with another podCIDR", "10.244.0.0/24", map[string]string{"10.244.1.0/24": "192.168.10.24", "10.244.3.0/24": "192.168.10.26"})
	// The node itself is reset and comes back with another podCIDR.
	remove("self")
	create(node("self", "10.244.4.0/24", "192.168.10.23"))
	await("the node is back with another podCIDR", "10.244.4.0/24", map[string]string{"10.244.1.0/24": "192.168.10.24", "10.244.3.0/24": "192.168.10.26"})
}
