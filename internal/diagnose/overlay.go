package diagnose

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// FlannelLinuxPort is flannel's default VXLAN port on Linux; Windows only
// speaks 4789.
const FlannelLinuxPort = 8472

func checkVXLAN(c *Ctx) {
	f, cl := c.Facts, c.Cluster
	if cl.Source == SourceRoutes {
		c.Skip("the pod network uses plain routes ("+cl.Evidence+"): there is no VXLAN device to check", false)
		return
	}
	anyWindows := false
	for _, n := range cl.Nodes {
		anyWindows = anyWindows || n.OS == "windows"
	}
	wantVNI := 0
	wantPorts := []int{c.Expect.VXLANPort}
	if cl.Source == SourceCalico {
		wantVNI = c.Expect.VNI
	} else if !anyWindows {
		wantPorts = append(wantPorts, FlannelLinuxPort)
	}
	switch f.OS {
	case engine.Windows:
		if f.Windows == nil || f.Windows.Error != "" {
			reason := "Get-HnsNetwork failed"
			if f.Windows != nil {
				reason += ": " + oneLine(f.Windows.Error, 200)
			}
			c.Report(finding.Error, fmt.Sprintf("the HNS networks of %s could not be read (%s)", f.Node, reason), "check the hns service (HC501) and the HostNetworkingService module")
			return
		}
		n, ok := f.Windows.NetworkNamed(cl.HNSNetwork)
		if !ok {
			var names []string
			for _, n := range f.Windows.Networks {
				names = append(names, n.Name+" ("+n.Type+")")
			}
			c.Report(finding.Error, fmt.Sprintf("%s has no HNS network named %s; it has: %s", f.Node, cl.HNSNetwork, orNone(names)), "")
			return
		}
		if !strings.EqualFold(n.Type, "Overlay") {
			c.Report(finding.Error, fmt.Sprintf("the HNS network %s on %s is of type %s, not Overlay (VXLAN)", n.Name, f.Node, n.Type), "")
		}
		if wantVNI != 0 && n.VSID != 0 && n.VSID != wantVNI {
			c.Report(finding.Error, fmt.Sprintf("the HNS network %s on %s has VSID %d; the cluster's VNI is %d", n.Name, f.Node, n.VSID, wantVNI), "")
		}
		fw := f.Windows.Firewall
		switch {
		case fw == nil:
			c.Report(finding.Warning, fmt.Sprintf("%s has no OverlayTraffic4789UDP firewall rule: VXLAN from other nodes (UDP %d) may be dropped", f.Node, c.Expect.VXLANPort),
				"New-NetFirewallRule -Name OverlayTraffic4789UDP -Direction Inbound -Protocol UDP -LocalPort 4789 -Action Allow (HNS adds it with the overlay network)")
		case !fw.Enabled || !strings.EqualFold(fw.Action, "Allow") || !strings.EqualFold(fw.Direction, "Inbound"):
			c.Report(finding.Warning, fmt.Sprintf("the OverlayTraffic4789UDP firewall rule on %s does not let VXLAN in (enabled %t, %s, %s)", f.Node, fw.Enabled, fw.Direction, fw.Action),
				"Enable-NetFirewallRule -Name OverlayTraffic4789UDP")
		}
	default:
		if f.Linux == nil || len(f.Linux.Links) == 0 {
			c.Skip("the node's network devices could not be read (ip -j link)", true)
			return
		}
		l, ok := f.Linux.LinkNamed(cl.Device)
		if !ok {
			c.Report(finding.Error, fmt.Sprintf("%s has no %s device: the pod network's agent has not set up its VXLAN endpoint", f.Node, cl.Device), "")
			return
		}
		if l.Kind != "vxlan" {
			c.Report(finding.Error, fmt.Sprintf("%s on %s is a %q device, not vxlan", l.Name, f.Node, l.Kind), "")
			return
		}
		if !l.Up {
			c.Report(finding.Error, fmt.Sprintf("%s on %s is down", l.Name, f.Node), "ip link set "+l.Name+" up, or restart the pod network's agent")
		}
		if wantVNI != 0 && l.VNI != wantVNI {
			c.Report(finding.Error, fmt.Sprintf("%s on %s has VNI %d; the cluster's is %d", l.Name, f.Node, l.VNI, wantVNI), "")
		}
		portOK := false
		for _, p := range wantPorts {
			portOK = portOK || l.Port == p
		}
		if !portOK {
			msg := fmt.Sprintf("%s on %s uses UDP port %d; the cluster's VXLAN port is %d", l.Name, f.Node, l.Port, c.Expect.VXLANPort)
			if anyWindows {
				msg += " (Windows nodes only speak 4789)"
			}
			c.Report(finding.Error, msg, "")
		} else if len(f.Linux.UDPPorts) > 0 && !f.Linux.UDPPorts[l.Port] {
			c.Report(finding.Warning, fmt.Sprintf("no UDP socket is bound to port %d on %s although %s uses it: VXLAN packets from other nodes have nowhere to go", l.Port, f.Node, l.Name), "")
		}
	}
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// peers are the cluster's other nodes that have a pod block.
func peers(cl *Cluster, self string) []ClusterNode {
	var out []ClusterNode
	for _, n := range cl.Nodes {
		if n.Name != self && len(n.Blocks) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func checkOverlay(c *Ctx) {
	f, cl := c.Facts, c.Cluster
	self, ok := cl.Node(f.Node)
	if !ok {
		c.Report(finding.Error, fmt.Sprintf("the API has no Node named %s: the kubelet has not registered it (or under another name)", f.Node),
			"check the kubelet (HC501, HC503) and that the node's hostname is its name in the spec")
		return
	}
	for _, p := range self.Problems {
		c.Report(finding.Warning, fmt.Sprintf("the cluster's record of %s is incomplete (%s): other nodes cannot program their route to it", f.Node, p),
			"restart the pod network's agent on "+f.Node)
	}
	switch {
	case f.OS == engine.Windows:
		if cl.Source == SourceRoutes {
			c.Skip("a Windows node on a pod network of plain routes is not a configuration this check knows", false)
			return
		}
		overlayWindows(c, self)
	case cl.Source == SourceRoutes:
		overlayRoutes(c, self)
	default:
		overlayLinuxVXLAN(c, self)
	}
}

// clusterSays describes a peer as the cluster records it.
func clusterSays(cl *Cluster, n ClusterNode, block netip.Prefix) string {
	switch cl.Source {
	case SourceRoutes:
		return fmt.Sprintf("cluster: Node %s has podCIDR %s and InternalIP %s", n.Name, block, n.Address)
	case SourceFlannel:
		return fmt.Sprintf("cluster: Node %s has podCIDR %s, public-ip %s, VtepMAC %s", n.Name, block, n.Address, n.MAC)
	}
	return fmt.Sprintf("cluster: block %s is affine to %s (address %s), whose VXLAN tunnel address is %s and VTEP MAC %s", block, n.Name, n.Address, n.Tunnel, n.MAC)
}

func overlayRoutes(c *Ctx, self ClusterNode) {
	f, cl := c.Facts, c.Cluster
	if f.Linux == nil {
		c.Skip("the node's routes could not be read", true)
		return
	}
	known := map[netip.Prefix]bool{}
	for _, b := range self.Blocks {
		known[b] = true
	}
	for _, p := range peers(cl, f.Node) {
		for _, b := range p.Blocks {
			known[b] = true
			r, ok := findRoute(f.Linux.Routes, b)
			switch {
			case !ok:
				c.Report(finding.Error, fmt.Sprintf("%s has no route to %s's pod network %s (want %s via %s)", f.Node, p.Name, b, b, p.Address), "",
					"node: no route for "+b.String(), clusterSays(cl, p, b))
			case r.Gateway != p.Address:
				c.Report(finding.Error, fmt.Sprintf("%s routes %s's pod network %s via %s, but %s's address is %s", f.Node, p.Name, b, gw(r), p.Name, p.Address), "",
					"node: "+r.Raw, clusterSays(cl, p, b))
			}
		}
	}
	c.staleRoutes(known, "", "matches no Node's podCIDR")
}

func gw(r hostfacts.Route) string {
	if r.Gateway.IsValid() {
		return r.Gateway.String()
	}
	return "dev " + r.Dev + " (no gateway)"
}

func findRoute(rs []hostfacts.Route, dst netip.Prefix) (hostfacts.Route, bool) {
	for _, r := range rs {
		if r.Dst == dst {
			return r, true
		}
	}
	return hostfacts.Route{}, false
}

// staleRoutes reports routes into the pod network (on dev, when set) that
// go to no known block.
func (c *Ctx) staleRoutes(known map[netip.Prefix]bool, dev, why string) {
	f := c.Facts
	for _, r := range f.Linux.Routes {
		if known[r.Dst] || (dev != "" && r.Dev != dev) {
			continue
		}
		inPods := c.Expect.PodCIDR.IsValid() && c.Expect.PodCIDR.Overlaps(r.Dst) && r.Dst.Bits() >= c.Expect.PodCIDR.Bits()
		if dev == "" && (!inPods || !r.Gateway.IsValid()) {
			continue
		}
		c.Report(finding.Warning, fmt.Sprintf("stale route on %s: %s %s", f.Node, r.Raw, why),
			"restart the pod network's agent on "+f.Node+" (it removes routes it no longer needs); or ip route del "+r.Dst.String(),
			"node: "+r.Raw)
	}
}

func overlayLinuxVXLAN(c *Ctx, self ClusterNode) {
	f, cl := c.Facts, c.Cluster
	if f.Linux == nil || len(f.Linux.Links) == 0 {
		c.Skip("the node's network devices could not be read", true)
		return
	}
	dev, ok := f.Linux.LinkNamed(cl.Device)
	if !ok {
		c.Skip("there is no "+cl.Device+" device to compare (HC507 reports it)", false)
		return
	}
	if self.MAC != "" && dev.MAC != self.MAC {
		c.Report(finding.Error, fmt.Sprintf("%s's %s has MAC %s, but the cluster records %s for it: every other node sends its VXLAN traffic to the wrong MAC", f.Node, dev.Name, dev.MAC, self.MAC), "",
			fmt.Sprintf("node: %s link/ether %s", dev.Name, dev.MAC), fmt.Sprintf("cluster: Node %s VTEP MAC %s", f.Node, self.MAC))
	}
	known := map[netip.Prefix]bool{}
	tunnels := map[netip.Addr]bool{}
	macs := map[string]bool{}
	for _, p := range peers(cl, f.Node) {
		if !p.Tunnel.IsValid() || p.MAC == "" || !p.Address.IsValid() {
			c.Report(finding.Info, fmt.Sprintf("the overlay towards %s cannot be checked from %s: the cluster's record of it is incomplete (%s)", p.Name, f.Node, strings.Join(p.Problems, "; ")), "restart the pod network's agent on "+p.Name)
			continue
		}
		tunnels[p.Tunnel], macs[p.MAC] = true, true
		first := p.Blocks[0]
		for _, b := range p.Blocks {
			known[b] = true
			r, ok := findRoute(f.Linux.Routes, b)
			want := fmt.Sprintf("%s via %s dev %s onlink", b, p.Tunnel, dev.Name)
			switch {
			case !ok:
				c.Report(finding.Error, fmt.Sprintf("%s has no route to %s's block %s (want %s)", f.Node, p.Name, b, want), "",
					"node: no route for "+b.String(), clusterSays(cl, p, b))
			case r.Dev != dev.Name || r.Gateway != p.Tunnel:
				c.Report(finding.Error, fmt.Sprintf("%s routes %s's block %s via %s dev %s, but %s's tunnel address is %s on %s", f.Node, p.Name, b, gw(r), r.Dev, p.Name, p.Tunnel, dev.Name), "",
					"node: "+r.Raw, clusterSays(cl, p, b))
			}
		}
		var nb *hostfacts.Neigh
		for i := range f.Linux.Neigh {
			if n := &f.Linux.Neigh[i]; n.Dev == dev.Name && n.Dst == p.Tunnel {
				nb = n
			}
		}
		switch {
		case nb == nil:
			c.Report(finding.Error, fmt.Sprintf("%s has no neighbour entry on %s for %s's tunnel address %s (want lladdr %s)", f.Node, dev.Name, p.Name, p.Tunnel, p.MAC), "",
				"node: ip neigh show dev "+dev.Name+" has no "+p.Tunnel.String(), clusterSays(cl, p, first))
		case nb.MAC != p.MAC:
			c.Report(finding.Error, fmt.Sprintf("%s's neighbour entry for %s's tunnel address %s has MAC %s, but %s's VTEP MAC is %s", f.Node, p.Name, p.Tunnel, nb.MAC, p.Name, p.MAC), "",
				fmt.Sprintf("node: %s lladdr %s dev %s %s", nb.Dst, nb.MAC, nb.Dev, nb.State), clusterSays(cl, p, first))
		}
		var fe *hostfacts.FDB
		for i := range f.Linux.FDB {
			if e := &f.Linux.FDB[i]; e.Dev == dev.Name && e.MAC == p.MAC {
				fe = e
			}
		}
		switch {
		case fe == nil:
			c.Report(finding.Error, fmt.Sprintf("%s has no FDB entry on %s for %s's VTEP MAC %s (want dst %s): VXLAN packets to %s's pods are not sent", f.Node, dev.Name, p.Name, p.MAC, p.Address, p.Name), "",
				"node: bridge fdb show dev "+dev.Name+" has no "+p.MAC, clusterSays(cl, p, first))
		case fe.Dst != p.Address:
			c.Report(finding.Error, fmt.Sprintf("%s's FDB entry for %s's VTEP MAC %s sends to %s, but %s's address is %s", f.Node, p.Name, p.MAC, fe.Dst, p.Name, p.Address), "",
				fmt.Sprintf("node: %s dst %s dev %s", fe.MAC, fe.Dst, fe.Dev), clusterSays(cl, p, first))
		}
	}
	c.staleRoutes(known, dev.Name, "goes to no other node's block")
	for _, n := range f.Linux.Neigh {
		if n.Dev == dev.Name && !tunnels[n.Dst] {
			c.Report(finding.Warning, fmt.Sprintf("stale neighbour entry on %s: %s lladdr %s dev %s is no other node's tunnel address", f.Node, n.Dst, n.MAC, n.Dev),
				"restart the pod network's agent on "+f.Node, fmt.Sprintf("node: %s lladdr %s dev %s %s", n.Dst, n.MAC, n.Dev, n.State))
		}
	}
	for _, e := range f.Linux.FDB {
		if e.Dev == dev.Name && !macs[e.MAC] && e.MAC != "00:00:00:00:00:00" {
			c.Report(finding.Warning, fmt.Sprintf("stale FDB entry on %s: %s dst %s dev %s is no other node's VTEP MAC", f.Node, e.MAC, e.Dst, e.Dev),
				"restart the pod network's agent on "+f.Node, fmt.Sprintf("node: %s dst %s dev %s", e.MAC, e.Dst, e.Dev))
		}
	}
}

func overlayWindows(c *Ctx, self ClusterNode) {
	f, cl := c.Facts, c.Cluster
	if f.Windows == nil || f.Windows.Error != "" {
		c.Skip("the node's HNS networks could not be read", true)
		return
	}
	net, ok := f.Windows.NetworkNamed(cl.HNSNetwork)
	if !ok {
		c.Skip("there is no HNS network "+cl.HNSNetwork+" to compare (HC507 reports it)", false)
		return
	}
	if len(self.Blocks) > 0 && len(net.Subnets) > 0 && !containsPrefix(net.Subnets, self.Blocks[0]) {
		c.Report(finding.Error, fmt.Sprintf("the HNS network %s on %s has subnet %s, but the cluster gives %s the block %s", net.Name, f.Node, prefixes(net.Subnets), f.Node, self.Blocks[0]), "",
			"node: "+net.Name+" subnet "+prefixes(net.Subnets), clusterSays(cl, self, self.Blocks[0]))
	}
	if self.Tunnel.IsValid() && len(net.Gateways) > 0 && net.Gateways[0] != self.Tunnel {
		c.Report(finding.Error, fmt.Sprintf("the HNS network %s on %s has gateway %s, but the cluster records %s as its VXLAN tunnel address", net.Name, f.Node, net.Gateways[0], self.Tunnel), "")
	}
	if self.MAC != "" && net.DrMAC != "" && net.DrMAC != self.MAC {
		c.Report(finding.Error, fmt.Sprintf("the distributed router MAC of %s on %s is %s, but the cluster records %s: other nodes send its VXLAN traffic to the wrong MAC", net.Name, f.Node, net.DrMAC, self.MAC), "",
			"node: "+net.Name+" DrMacAddress "+net.DrMAC, fmt.Sprintf("cluster: Node %s VTEP MAC %s", f.Node, self.MAC))
	}
	known := map[netip.Prefix]bool{}
	for _, p := range peers(cl, f.Node) {
		if p.MAC == "" || !p.Address.IsValid() {
			c.Report(finding.Info, fmt.Sprintf("the overlay towards %s cannot be checked from %s: the cluster's record of it is incomplete (%s)", p.Name, f.Node, strings.Join(p.Problems, "; ")), "restart the pod network's agent on "+p.Name)
			continue
		}
		for _, b := range p.Blocks {
			known[b] = true
			var r *hostfacts.RemoteSubnetRoute
			for i := range net.Routes {
				if net.Routes[i].Prefix == b {
					r = &net.Routes[i]
				}
			}
			if r == nil {
				c.Report(finding.Error, fmt.Sprintf("the HNS network %s on %s has no RemoteSubnetRoute for %s's block %s (want provider %s, MAC %s)", net.Name, f.Node, p.Name, b, p.Address, p.MAC), "",
					"node: no RemoteSubnetRoute with DestinationPrefix "+b.String(), clusterSays(cl, p, b))
				continue
			}
			node := fmt.Sprintf("node: RemoteSubnetRoute %s ProviderAddress %s DistributedRouterMacAddress %s IsolationId %d", r.Prefix, r.Provider, r.MAC, r.VSID)
			if r.Provider != p.Address {
				c.Report(finding.Error, fmt.Sprintf("the RemoteSubnetRoute for %s's block %s on %s sends to %s, but %s's address is %s", p.Name, b, f.Node, r.Provider, p.Name, p.Address), "", node, clusterSays(cl, p, b))
			}
			if r.MAC != p.MAC {
				c.Report(finding.Error, fmt.Sprintf("the RemoteSubnetRoute for %s's block %s on %s has MAC %s, but %s's VTEP MAC is %s", p.Name, b, f.Node, r.MAC, p.Name, p.MAC), "", node, clusterSays(cl, p, b))
			}
			if c.Expect.VNI != 0 && r.VSID != 0 && cl.Source == SourceCalico && r.VSID != c.Expect.VNI {
				c.Report(finding.Warning, fmt.Sprintf("the RemoteSubnetRoute for %s's block %s on %s has IsolationId %d; the cluster's VNI is %d", p.Name, b, f.Node, r.VSID, c.Expect.VNI), "", node)
			}
		}
	}
	for _, r := range net.Routes {
		if !known[r.Prefix] {
			c.Report(finding.Warning, fmt.Sprintf("stale RemoteSubnetRoute on %s: %s via %s (MAC %s) is no other node's block", f.Node, r.Prefix, r.Provider, r.MAC),
				"restart calico-node-windows on "+f.Node+" (Felix removes policies it no longer needs)",
				fmt.Sprintf("node: RemoteSubnetRoute %s ProviderAddress %s DistributedRouterMacAddress %s", r.Prefix, r.Provider, r.MAC))
		}
	}
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

func prefixes(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}
