package checks

import (
	"cmp"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// HC201
func windowsNodeTaint(c *Ctx) {
	for _, n := range c.WindowsNodes() {
		has, noExecute := false, false
		for _, t := range n.Spec.Taints {
			switch {
			case t == WindowsTaint:
				has = true
			case t.Key == WindowsTaint.Key && t.Value == WindowsTaint.Value && t.Effect == "NoExecute":
				noExecute = true
			}
		}
		switch {
		case has:
		case noExecute:
			// NoExecute keeps Linux pods off as well, but it also keeps
			// off (and evicts) the Windows workloads that tolerate the
			// guide's os=windows:NoSchedule taint only.
			c.Report(&n.Object, fmt.Sprintf("Windows node %s has os=windows:NoExecute instead of os=windows:NoSchedule: Windows workloads that tolerate only the guide's NoSchedule taint are not scheduled there, and their running pods are evicted", n.Meta.Name),
				fmt.Sprintf("kubectl taint node %s os=windows:NoExecute- && kubectl taint node %s os=windows:NoSchedule (and fix the taint in its JoinConfiguration)", n.Meta.Name, n.Meta.Name))
		default:
			c.Report(&n.Object, fmt.Sprintf("Windows node %s has no os=windows:NoSchedule taint: Linux pods without a kubernetes.io/os selector can be scheduled there and never start", n.Meta.Name),
				fmt.Sprintf("kubectl taint node %s os=windows:NoSchedule (and add the taint to its JoinConfiguration)", n.Meta.Name))
		}
	}
}

// blockSizeFor returns the block size of the pool a node takes addresses
// from and where it came from.
func (x *Index) blockSizeFor(n *snapshot.Node) (int, string) {
	for _, p := range x.S.IPPools {
		if p.Spec.Disabled || !strings.Contains(p.Spec.CIDR, ".") {
			continue
		}
		if m, ok := calicoSelectorMatches(p.Spec.NodeSelector, n.Meta.Labels); ok && m {
			if p.Spec.BlockSize != nil {
				return *p.Spec.BlockSize, "IPPool " + p.Meta.Name
			}
			return 26, "IPPool " + p.Meta.Name + " (default block size)"
		}
	}
	for _, i := range x.S.Installations {
		if i.Spec.CalicoNetwork == nil {
			continue
		}
		for _, p := range i.Spec.CalicoNetwork.IPPools {
			if !strings.Contains(p.CIDR, ".") {
				continue
			}
			if m, ok := calicoSelectorMatches(p.NodeSelector, n.Meta.Labels); ok && m {
				if p.BlockSize != nil {
					return *p.BlockSize, "Installation " + i.Meta.Name + " pool " + p.Name
				}
				return 26, "Installation " + i.Meta.Name + " pool " + p.Name + " (default block size)"
			}
		}
	}
	return 26, "Calico's default block size; no IP pool found"
}

// HC202
func windowsMaxPods(c *Ctx) {
	for _, n := range c.WindowsNodes() {
		pods := n.Status.Capacity.Pods
		if !pods.Set {
			pods = n.Status.Allocatable.Pods
		}
		if !pods.Set {
			continue
		}
		bs, from := c.blockSizeFor(n)
		if bs < 1 || bs > 32 {
			continue
		}
		usable := int64(1)<<(32-bs) - 4
		if usable < 1 {
			// A /30, /31 or /32 block has no address left once Windows
			// has taken its four: no pod can run there at all.
			c.Report(&n.Object, fmt.Sprintf("Windows node %s gets /%d blocks (%s): a block holds %s and Windows reserves 4, so no pod on it gets an address",
				n.Meta.Name, bs, from, count(1<<(32-bs), "IP")),
				"give Windows nodes an IP pool with a block size of 29 or less (8 addresses or more per block), then recreate the node's block")
			continue
		}
		if pods.Value > usable {
			c.Report(&n.Object, fmt.Sprintf("Windows node %s accepts %d pods, but one /%d block (%s) leaves %d addresses for pods: pod %d onwards gets a node but no address",
				n.Meta.Name, pods.Value, bs, from, usable, usable+1),
				fmt.Sprintf("set maxPods: %d in a KubeletConfiguration patch for %s (kubeadm join --patches), then restart its kubelet", usable, n.Meta.Name))
		}
	}
}

// HC203
func nodeNetworkNotReady(c *Ctx) {
	for _, n := range c.S.Nodes {
		r := n.Condition("Ready")
		if r == nil || r.Status == "True" || !strings.Contains(r.Message+r.Reason, "NetworkPluginNotReady") {
			continue
		}
		app := "calico-node"
		if n.IsWindows() {
			app = "calico-node-windows"
		}
		var pods []string
		for _, p := range c.AllPods() {
			if p.NodeName == n.Meta.Name && p.App == app {
				s := p.Namespace + "/" + p.Name
				if w := p.Status.WaitingReason(); w != "" {
					s += " (" + w + ")"
				} else if p.Status.Phase != "" {
					s += " (" + p.Status.Phase + ")"
				}
				pods = append(pods, s)
			}
		}
		msg := fmt.Sprintf("node %s is NotReady: %s.", n.Meta.Name, strings.TrimSpace(r.Message))
		fix := ""
		if len(pods) == 0 {
			msg += fmt.Sprintf(" There is no %s pod on it", app)
			if n.IsWindows() {
				msg += ": check windowsDataplane: HNS in the Installation and kubectl get tigerastatus (the operator writes the reason there)"
			}
			fix = "kubectl get tigerastatus; kubectl -n calico-system get ds " + app
		} else {
			msg += fmt.Sprintf(" Its network pod is %s: hanging in Init or ContainerCreating is most often a long or failed image pull; restarts: read the logs of install-cni, node and felix; \"dial tcp 10.96.0.1:443: i/o timeout\" means the kubernetes-services-endpoint ConfigMap is missing", names(pods, 3))
			name := strings.SplitN(strings.SplitN(pods[0], " ", 2)[0], "/", 2)[1]
			fix = fmt.Sprintf("kubectl -n calico-system describe pod %s; kubectl -n calico-system logs %s -c install-cni (then -c node, -c felix)", name, name)
		}
		c.Report(&n.Object, msg, fix)
	}
}

// HC204
func kubeletServingCSRPending(c *Ctx) {
	type group struct {
		names  []string
		oldest time.Time
	}
	byNode := map[string]*group{}
	for _, csr := range c.S.CSRs {
		if csr.Spec.SignerName != "kubernetes.io/kubelet-serving" || !csr.Pending() {
			continue
		}
		node := strings.TrimPrefix(csr.Spec.Username, "system:node:")
		g := byNode[node]
		if g == nil {
			g = &group{}
			byNode[node] = g
		}
		g.names = append(g.names, csr.Meta.Name)
		if t := csr.Meta.Created(); !t.IsZero() && (g.oldest.IsZero() || t.Before(g.oldest)) {
			g.oldest = t
		}
	}
	var nodes []string
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		g := byNode[node]
		obj := &snapshot.Object{APIVersion: "v1", Kind: "Node", Meta: snapshot.Meta{Name: node}}
		if n := c.Node(node); n != nil {
			obj = &n.Object
		}
		since := ""
		if !g.oldest.IsZero() {
			since = " since " + g.oldest.UTC().Format(time.RFC3339)
		}
		c.Report(obj, fmt.Sprintf("%s from node %s pending%s (%s): until one is approved, kubectl logs and exec on its pods fail with \"tls: internal error\" and metrics-server cannot scrape it",
			count(len(g.names), "kubelet-serving CSR"), node, since, names(g.names, 4)),
			fmt.Sprintf("check the names and addresses in the request, then kubectl certificate approve %s (or hybridctl csr approve)", strings.Join(g.names, " ")))
	}
}

// minorOf parses "v1.37.2" into (1, 37).
func minorOf(v string) (int, int, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	p := strings.SplitN(v, ".", 3)
	if len(p) < 2 {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(p[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(p[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return ma, mi, true
}

// MaxKubeletSkew is how many minor versions a kubelet may lag the API
// server.
const MaxKubeletSkew = 3

// HC205
func kubeletVersionSkew(c *Ctx) {
	sv := c.ServerVersion()
	sMaj, sMin, ok := minorOf(sv)
	if !ok {
		return
	}
	for _, n := range c.S.Nodes {
		kv := n.Status.NodeInfo.KubeletVersion
		maj, mi, ok := minorOf(kv)
		if !ok {
			continue
		}
		switch {
		case maj != sMaj || mi > sMin:
			c.Report(&n.Object, fmt.Sprintf("node %s runs kubelet %s, newer than the API server %s: a kubelet must never be newer than the control plane", n.Meta.Name, kv, sv), "")
		case sMin-mi > MaxKubeletSkew:
			c.Report(&n.Object, fmt.Sprintf("node %s runs kubelet %s, %d minor versions behind the API server %s (at most %d allowed)", n.Meta.Name, kv, sMin-mi, sv, MaxKubeletSkew), "")
		}
	}
}

// HC206
func linuxWorkersForWindows(c *Ctx) {
	win := c.WindowsNodes()
	if len(win) == 0 {
		return
	}
	var workers []string
	for _, n := range c.S.Nodes {
		if !n.IsWindows() && !n.IsControlPlane() {
			workers = append(workers, n.Meta.Name)
		}
	}
	if len(workers) >= 2 {
		return
	}
	have := "none"
	if len(workers) > 0 {
		have = "only " + strings.Join(workers, ", ")
	}
	c.Report(&win[0].Object, fmt.Sprintf("the cluster has %s and %s as Linux worker: CoreDNS, the Tigera operator, Typha, webhooks and metrics-server run only on Linux and have nowhere to go when it is drained",
		count(len(win), "Windows node"), have), "")
}

// HC207
func corednsSingleNode(c *Ctx) {
	nodes := map[string]bool{}
	n := 0
	for _, p := range c.AllPods() {
		if p.Namespace == "kube-system" && p.App == "kube-dns" && p.NodeName != "" {
			nodes[p.NodeName] = true
			n++
		}
	}
	if n < 2 || len(nodes) != 1 {
		return
	}
	var node string
	for k := range nodes {
		node = k
	}
	obj := &snapshot.Object{APIVersion: "apps/v1", Kind: "Deployment", Meta: snapshot.Meta{Namespace: "kube-system", Name: "coredns"}}
	for _, w := range c.S.Workloads {
		if w.Kind == "Deployment" && w.Meta.Namespace == "kube-system" && w.Meta.Name == "coredns" {
			obj = &w.Object
		}
	}
	c.Report(obj, fmt.Sprintf("all %d CoreDNS replicas run on node %s: draining or losing it takes cluster DNS down", n, node), "")
}

// inServiceCIDR reports whether host is an IP address inside one of cidrs.
func inServiceCIDR(host string, cidrs []string) (string, bool) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err == nil && p.Contains(a) {
			return c, true
		}
	}
	return "", false
}

// HC208
func imagePullFailed(c *Ctx) {
	report := func(obj *snapshot.Object, ns, pod, node string, st *snapshot.PodStatus, tmpl *snapshot.PodSpec) {
		// A Linux workload on a Windows node (HC101, HC102) and a manifest
		// list without the node's platform (HC104, HC108) are the placement
		// checks' findings, with the placement fix.
		if n := c.Node(node); tmpl != nil && n != nil && n.IsWindows() && !c.IsWindowsTemplate(tmpl) {
			return
		}
		images := map[string]string{}
		if tmpl != nil {
			for _, ct := range tmpl.AllContainers() {
				images[ct.Name] = ct.Image
			}
		}
		if node == "" {
			node = "(none)"
		}
		for _, f := range st.PullFailures() {
			if strings.Contains(f.Message, "no matching manifest") {
				continue
			}
			image := cmp.Or(f.Image, images[f.Container], "its image")
			msg := fmt.Sprintf("pod %s/%s on node %s cannot pull %s (container %s): %s", ns, pod, node, image, f.Container, f.Reason)
			if m := strings.TrimSpace(f.Message); m != "" {
				msg += ": " + m
			}
			c.Report(obj, msg, fmt.Sprintf("kubectl -n %s describe pod %s; check that %s exists for the node's OS, Windows build and architecture, that node %s reaches its registry, and that the pod has an imagePullSecret if the registry needs one", ns, pod, image, node))
		}
	}
	// A pod is reported on the workload that controls it (where its image
	// is set), else on itself.
	done := map[*snapshot.Pod]bool{}
	for _, w := range c.S.Workloads {
		if w.Pod != nil {
			report(&w.Object, w.Meta.Namespace, w.Meta.Name, w.Template.Spec.NodeName, w.Pod, &w.Template.Spec)
			continue
		}
		for _, p := range c.PodsOf(w) {
			done[p] = true
			report(&w.Object, p.Namespace, p.Name, p.NodeName, &p.Status, &w.Template.Spec)
		}
	}
	for _, p := range c.S.Pods {
		if !done[p] {
			obj := snapshot.Object{APIVersion: "v1", Kind: "Pod", Meta: snapshot.Meta{Namespace: p.Namespace, Name: p.Name}}
			report(&obj, p.Namespace, p.Name, p.NodeName, &p.Status, nil)
		}
	}
}

// specNodeNotJoined reports each node of the spec (doctor -f) that has no
// Node object. Kubernetes stores node names in lower case; a spec's names
// are lower case too, and are compared without case all the same.
func specNodeNotJoined(c *Ctx) {
	if c.spec == nil {
		return
	}
	live := map[string]bool{}
	for _, n := range c.S.Nodes {
		live[strings.ToLower(n.Meta.Name)] = true
	}
	for _, n := range c.spec.Nodes {
		if live[strings.ToLower(n.Name)] {
			continue
		}
		obj := snapshot.Object{APIVersion: "v1", Kind: "Node", Meta: snapshot.Meta{Name: n.Name},
			Source: snapshot.Source{File: c.spec.File, Line: n.Line}}
		what := strings.TrimSpace(n.OS + " " + n.Role)
		if what != "" {
			what = " (" + what + ")"
		}
		c.Report(&obj, fmt.Sprintf("node %s%s is in %s but not in the cluster: it never joined, or its Node was deleted", n.Name, what, c.spec.File),
			fmt.Sprintf("hybridctl apply -f %s joins it (hybridctl diff -f %s shows what apply would do); hybridctl node diagnose %s -f %s says why its kubelet does not register", c.spec.File, c.spec.File, n.Name, c.spec.File))
	}
}
