package checks

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

var (
	selHas   = regexp.MustCompile(`^(!?)\s*has\(\s*([A-Za-z0-9./_-]+)\s*\)$`)
	selEqual = regexp.MustCompile(`^([A-Za-z0-9./_-]+)\s*(==|!=)\s*['"]([^'"]*)['"]$`)
)

// calicoSelectorMatches evaluates the common forms of a Calico selector
// against node labels: all(), has(k), !has(k), k == 'v', k != 'v', joined
// with &&. ok is false for anything else, and the caller does not guess.
func calicoSelectorMatches(sel string, labels map[string]string) (match, ok bool) {
	sel = strings.TrimSpace(sel)
	if sel == "" || sel == "all()" {
		return true, true
	}
	match = true
	for _, part := range strings.Split(sel, "&&") {
		part = strings.TrimSpace(part)
		if part == "all()" {
			continue
		}
		if m := selHas.FindStringSubmatch(part); m != nil {
			_, has := labels[m[2]]
			match = match && has == (m[1] == "")
			continue
		}
		if m := selEqual.FindStringSubmatch(part); m != nil {
			v, has := labels[m[1]]
			eq := has && v == m[3]
			match = match && eq == (m[2] == "==")
			continue
		}
		return false, false
	}
	return match, true
}

var windowsLabels = map[string]string{snapshot.LabelOS: "windows"}

// poolForWindows reports whether a pool's node selector can pick Windows
// nodes: any Windows node in the snapshot, or, without nodes, a node
// labelled kubernetes.io/os=windows.
func (x *Index) poolForWindows(sel string) bool {
	if len(x.windowsNodes) == 0 {
		m, ok := calicoSelectorMatches(sel, windowsLabels)
		return ok && m
	}
	for _, n := range x.windowsNodes {
		if m, ok := calicoSelectorMatches(sel, n.Meta.Labels); ok && m {
			return true
		}
	}
	return false
}

// HC301
func calicoWindowsDataplane(c *Ctx) {
	win := c.WindowsNodes()
	if len(win) == 0 {
		return
	}
	var ns []string
	for _, n := range win {
		ns = append(ns, n.Meta.Name)
	}
	for _, i := range c.S.Installations {
		if i.Spec.CalicoNetwork != nil && i.Spec.CalicoNetwork.WindowsDataplane == "HNS" {
			continue
		}
		c.Report(&i.Object, fmt.Sprintf("Installation %s has no windowsDataplane: HNS, so the operator does not serve the Windows nodes (%s): no calico-node-windows, no CNI configuration, NotReady with NetworkPluginNotReady",
			i.Meta.Name, names(ns, 5)), "")
	}
}

// HC302
func calicoBGP(c *Ctx) {
	if !c.Hybrid() {
		return
	}
	for _, i := range c.S.Installations {
		bgp := ""
		if i.Spec.CalicoNetwork != nil {
			bgp = i.Spec.CalicoNetwork.BGP
		}
		if bgp == "Disabled" {
			continue
		}
		state := "bgp: " + bgp
		if bgp == "" {
			state = "no bgp field, so the operator enables BGP"
		}
		c.Report(&i.Object, fmt.Sprintf("Installation %s has %s in a cluster with Windows nodes: Calico for Windows cannot do VXLAN together with BGP", i.Meta.Name, state), "")
	}
}

// HC303
func calicoIPPoolEncapsulation(c *Ctx) {
	if !c.Hybrid() {
		return
	}
	for _, i := range c.S.Installations {
		if i.Spec.CalicoNetwork == nil {
			continue
		}
		for _, p := range i.Spec.CalicoNetwork.IPPools {
			if p.Encapsulation == "VXLAN" || !strings.Contains(p.CIDR, ".") || !c.poolForWindows(p.NodeSelector) {
				continue
			}
			enc := p.Encapsulation
			if enc == "" {
				enc = "unset (the operator defaults to IPIP)"
			}
			c.Report(&i.Object, fmt.Sprintf("Installation %s IP pool %s (%s) is used by Windows nodes with encapsulation %s; Windows supports only VXLAN", i.Meta.Name, p.Name, p.CIDR, enc), "")
		}
	}
	for _, p := range c.S.IPPools {
		if p.Spec.Disabled || !strings.Contains(p.Spec.CIDR, ".") || !c.poolForWindows(p.Spec.NodeSelector) {
			continue
		}
		vx, ip := p.Spec.VXLANMode, p.Spec.IPIPMode
		if vx == "Always" && (ip == "" || ip == "Never") {
			continue
		}
		if vx == "" {
			vx = "Never"
		}
		if ip == "" {
			ip = "Never"
		}
		c.Report(&p.Object, fmt.Sprintf("IPPool %s (%s) is used by Windows nodes with vxlanMode: %s, ipipMode: %s; Windows needs vxlanMode: Always, ipipMode: Never", p.Meta.Name, p.Spec.CIDR, vx, ip),
			"set vxlanMode: Always and ipipMode: Never (through the Installation's ipPools encapsulation: VXLAN when the operator manages the pool)")
	}
}

// serviceCIDRs returns the cluster's service network from kubeadm.
func (x *Index) serviceCIDRs() []string {
	if cc := x.ClusterConfig(); cc != nil && cc.Networking.ServiceSubnet != "" {
		return splitTrim(cc.Networking.ServiceSubnet)
	}
	return nil
}

func splitTrim(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// HC304
func calicoServiceCIDRs(c *Ctx) {
	if !c.Hybrid() {
		return
	}
	want := c.serviceCIDRs()
	for _, i := range c.S.Installations {
		got := append([]string(nil), i.Spec.ServiceCIDRs...)
		sort.Strings(got)
		switch {
		case len(got) == 0:
			w := "the cluster's service network"
			if len(want) > 0 {
				w = strings.Join(want, ", ")
			}
			c.Report(&i.Object, fmt.Sprintf("Installation %s has no serviceCIDRs: Windows pods' OutBoundNAT exceptions miss the service network (%s)", i.Meta.Name, w), "")
		case len(want) > 0 && strings.Join(got, ",") != strings.Join(want, ","):
			c.Report(&i.Object, fmt.Sprintf("Installation %s has serviceCIDRs %s, but the kubeadm ClusterConfiguration's serviceSubnet is %s", i.Meta.Name, strings.Join(got, ", "), strings.Join(want, ", ")),
				fmt.Sprintf("set spec.serviceCIDRs: [%s] in the Installation", strings.Join(want, ", ")))
		}
	}
}

// HC305
func calicoServicesEndpoint(c *Ctx) {
	if !c.Hybrid() {
		return
	}
	cm := c.ConfigMap(snapshot.ServicesEndpointNS, snapshot.ServicesEndpointName)
	if cm == nil {
		if !c.S.Complete(snapshot.KindConfigMap) || len(c.S.Installations) == 0 {
			return
		}
		c.Report(&c.S.Installations[0].Object, fmt.Sprintf("ConfigMap %s/%s does not exist: calico-node-windows cannot reach the API through the service address 10.96.0.1 from the Windows host network",
			snapshot.ServicesEndpointNS, snapshot.ServicesEndpointName), "")
		return
	}
	host, port := cm.Data["KUBERNETES_SERVICE_HOST"], cm.Data["KUBERNETES_SERVICE_PORT"]
	var missing []string
	if strings.TrimSpace(host) == "" {
		missing = append(missing, "KUBERNETES_SERVICE_HOST")
	}
	if strings.TrimSpace(port) == "" {
		missing = append(missing, "KUBERNETES_SERVICE_PORT")
	}
	if len(missing) > 0 {
		c.Report(&cm.Object, fmt.Sprintf("ConfigMap %s/%s lacks %s", cm.Meta.Namespace, cm.Meta.Name, strings.Join(missing, " and ")), "")
		return
	}
	cidrs := c.serviceCIDRs()
	for _, i := range c.S.Installations {
		cidrs = append(cidrs, i.Spec.ServiceCIDRs...)
	}
	if cidr, in := inServiceCIDR(host, cidrs); in {
		c.Report(&cm.Object, fmt.Sprintf("ConfigMap %s/%s points KUBERNETES_SERVICE_HOST at %s, a service address (in %s) that a Windows host cannot reach",
			cm.Meta.Namespace, cm.Meta.Name, host, cidr), "set KUBERNETES_SERVICE_HOST to the API server's name or node address (the controlPlaneEndpoint host) and KUBERNETES_SERVICE_PORT to its port")
	}
}

// HC306
func calicoStrictAffinity(c *Ctx) {
	if !c.Hybrid() {
		return
	}
	var def *snapshot.IPAMConfiguration
	for _, ic := range c.S.IPAMConfigs {
		if ic.Meta.Name == "default" {
			def = ic
		}
	}
	if def == nil {
		return
	}
	if !def.Spec.StrictAffinity {
		c.Report(&def.Object, "IPAMConfiguration default has strictAffinity false: nodes may take addresses from a Windows node's block, which breaks routing; the operator keeps calico-windows Degraded", "")
	}
}

// HC307
func calicoTigeraStatus(c *Ctx) {
	for _, ts := range c.S.TigeraStatuses {
		var bad []string
		msg := ""
		for _, cond := range ts.Status.Conditions {
			switch {
			case cond.Type == "Degraded" && cond.Status == "True":
				bad = append(bad, "Degraded")
				msg = cond.Message
			case cond.Type == "Available" && cond.Status == "False":
				bad = append(bad, "not Available")
				if msg == "" {
					msg = cond.Message
				}
			}
		}
		if len(bad) == 0 {
			continue
		}
		m := fmt.Sprintf("TigeraStatus %s is %s", ts.Meta.Name, strings.Join(bad, " and "))
		if msg != "" {
			m += ": " + msg
		}
		c.Report(&ts.Object, m, "")
	}
}

// HC308
func calicoVXLANVNIPort(c *Ctx) {
	for _, f := range c.S.FelixConfigs {
		var bad []string
		if v := f.Spec.VXLANVNI; v != nil && *v != 4096 {
			bad = append(bad, fmt.Sprintf("vxlanVNI %d (must be 4096)", *v))
		}
		if v := f.Spec.VXLANPort; v != nil && *v != 4789 {
			bad = append(bad, fmt.Sprintf("vxlanPort %d (must be 4789)", *v))
		}
		if len(bad) > 0 && (c.Hybrid() || !c.Known(snapshot.KindNode)) {
			c.Report(&f.Object, fmt.Sprintf("FelixConfiguration %s sets %s: Windows nodes accept only VNI 4096 on UDP 4789", f.Meta.Name, strings.Join(bad, " and ")), "")
		}
	}
}
