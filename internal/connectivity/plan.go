package connectivity

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OS names as in the kubernetes.io/os label.
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// Labels and names the command puts on what it creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "hybridctl-check-connectivity"
	LabelGroup     = "hybridctl.dev/probe-group"
	LabelProbe     = "hybridctl.dev/probe"
	// DefaultNamespace is where the probes go unless -n says otherwise.
	DefaultNamespace = "hybridctl-connectivity"
	// HostNamespaceSuffix names the second namespace, for the hostNetwork
	// probe of node-to-pod: it needs the privileged Pod Security level,
	// which the probes' own namespace (restricted) does not allow.
	HostNamespaceSuffix = "-host"
	ServiceAccount      = "probe"
	windowsBuildLabel   = "node.kubernetes.io/windows-build"
	controlPlaneTaint   = "node-role.kubernetes.io/control-plane"
)

// Group is the probes of one OS (and, on Windows, one build): its Service
// selects them.
type Group struct {
	Name  string // linux, win-26100, or windows when there is no Windows node
	OS    string
	Build string
	// Nodes are the chosen nodes (at most two), in order of preference.
	Nodes []string
	// Missing says why the group has no node; its tests are skipped.
	Missing string
}

// Probe is one probe pod.
type Probe struct {
	Name      string
	Namespace string
	Group     string
	OS        string
	Build     string
	Node      string
	Image     string
	// Host is the hostNetwork probe of node-to-pod: it only runs a client.
	Host        bool
	Tolerations []corev1.Toleration
}

// Display is how results name the probe: "linux-1 (k8s-lab-node-1)".
func (p Probe) Display() string { return p.Name + " (" + p.Node + ")" }

// TargetKind says what an action connects to.
type TargetKind int

// Target kinds.
const (
	ToPod      TargetKind = iota // a probe pod's IP, port Port
	ToService                    // a Service's ClusterIP, port ServicePort
	ToName                       // a DNS name (Host), port ServicePort
	ToExternal                   // --external-target (Host:Port)
)

// Target is what an action's client connects to.
type Target struct {
	Kind    TargetKind
	Probe   string // ToPod
	Service string // ToService, and the Service behind ToName
	Host    string // ToName, ToExternal
	Port    int    // ToExternal
}

// Action is one client-target pair of a test; a skipped action has Skip.
type Action struct {
	Test   string
	From   string
	To     string
	Client string // the probe pod that runs the client; "" when skipped
	Target Target
	Skip   string
}

// Excluded is a node that gets no probe, and why.
type Excluded struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Plan is what the command creates and runs: computed from Node objects
// alone (NewPlan).
type Plan struct {
	Namespace     string
	HostNamespace string
	DNSDomain     string
	Groups        []Group
	Probes        []Probe
	// Services are the Services to create, by group name.
	Services []string
	Excluded []Excluded
	Actions  []Action

	opts    Options
	byGroup map[string]*Group
	nodes   map[string]*corev1.Node
}

// Options are the plan's inputs beside the nodes.
type Options struct {
	Namespace string // DefaultNamespace when empty
	DNSDomain string // cluster.local when empty
	// ExternalTarget is HOST:PORT for pod-to-external; empty skips it.
	ExternalTarget string
	LinuxImage     string
	WindowsImage   string
	// WindowsImages overrides WindowsImage per build (10.0.26100).
	WindowsImages map[string]string
	// Tests are the selected tests (Select); nil means all.
	Tests []Test
}

// NewPlan chooses the probes' nodes and expands the tests into actions.
// Nodes that are not Ready, cordoned, carry a NoExecute taint or the
// control-plane taint get no probe; per OS (per Windows build) it takes at
// most two nodes, workers without taints first, then by name.
func NewPlan(nodes []corev1.Node, opts Options) (*Plan, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.DNSDomain == "" {
		opts.DNSDomain = "cluster.local"
	}
	if opts.ExternalTarget != "" {
		if _, _, err := splitHostPort(opts.ExternalTarget); err != nil {
			return nil, err
		}
	}
	if opts.Tests == nil {
		opts.Tests = Tests()
	}
	p := &Plan{
		Namespace:     opts.Namespace,
		HostNamespace: opts.Namespace + HostNamespaceSuffix,
		DNSDomain:     opts.DNSDomain,
		opts:          opts,
		byGroup:       map[string]*Group{},
	}
	type cand struct {
		node  *corev1.Node
		score int
	}
	groups := map[string][]cand{}
	var windowsExcluded, linuxExcluded []string
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for i := range sorted {
		n := &sorted[i]
		os := nodeOS(n)
		reason, score := eligibility(n)
		if os != OSLinux && os != OSWindows {
			reason = fmt.Sprintf("operating system %q", os)
		}
		if reason != "" {
			p.Excluded = append(p.Excluded, Excluded{Node: n.Name, Reason: reason})
			switch os {
			case OSLinux:
				linuxExcluded = append(linuxExcluded, n.Name+": "+reason)
			case OSWindows:
				windowsExcluded = append(windowsExcluded, n.Name+": "+reason)
			}
			continue
		}
		key := OSLinux
		if os == OSWindows {
			key = "win"
			if b := n.Labels[windowsBuildLabel]; b != "" {
				key = "win-" + buildSuffix(b)
			}
		}
		groups[key] = append(groups[key], cand{n, score})
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if (a == OSLinux) != (b == OSLinux) {
			if a == OSLinux {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	nodeByName := map[string]*corev1.Node{}
	if _, ok := groups[OSLinux]; !ok {
		p.Groups = append(p.Groups, Group{Name: OSLinux, OS: OSLinux, Missing: missing("Linux", linuxExcluded)})
	}
	for _, k := range keys {
		cs := groups[k]
		slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(a.score, b.score) })
		g := Group{Name: k, OS: nodeOS(cs[0].node)}
		if g.OS == OSWindows {
			g.Build = cs[0].node.Labels[windowsBuildLabel]
		}
		for _, c := range cs[:min(2, len(cs))] {
			g.Nodes = append(g.Nodes, c.node.Name)
			nodeByName[c.node.Name] = c.node
		}
		p.Groups = append(p.Groups, g)
	}
	if !slices.ContainsFunc(p.Groups, func(g Group) bool { return g.OS == OSWindows }) {
		p.Groups = append(p.Groups, Group{Name: OSWindows, OS: OSWindows, Missing: missing("Windows", windowsExcluded)})
	}
	for i := range p.Groups {
		p.byGroup[p.Groups[i].Name] = &p.Groups[i]
	}
	p.nodes = nodeByName
	for _, t := range opts.Tests {
		for _, a := range t.actions(p) {
			a.Test = t.Name
			p.Actions = append(p.Actions, a)
		}
	}
	return p, nil
}

func missing(os string, excluded []string) string {
	msg := "no Ready, schedulable " + os + " node"
	if len(excluded) > 0 {
		msg += " (" + strings.Join(excluded, "; ") + ")"
	}
	return msg
}

// buildSuffix is the last part of a Windows build, 10.0.26100 → 26100.
func buildSuffix(b string) string {
	if i := strings.LastIndex(b, "."); i >= 0 {
		b = b[i+1:]
	}
	var out strings.Builder
	for _, r := range strings.ToLower(b) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			out.WriteRune(r)
		}
	}
	if out.Len() == 0 {
		return "unknown"
	}
	return out.String()
}

func nodeOS(n *corev1.Node) string {
	if os := n.Labels[corev1.LabelOSStable]; os != "" {
		return os
	}
	return n.Status.NodeInfo.OperatingSystem
}

// eligibility says why a node cannot host a probe ("" when it can) and its
// rank among the eligible: untainted workers first.
func eligibility(n *corev1.Node) (string, int) {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "not Ready", 0
	}
	if n.Spec.Unschedulable {
		return "cordoned", 0
	}
	score := 0
	for _, t := range n.Spec.Taints {
		switch {
		case t.Effect == corev1.TaintEffectNoExecute:
			return "taint " + taintString(t), 0
		case t.Key == controlPlaneTaint:
			return "control plane (taint " + taintString(t) + ")", 0
		case t.Effect == corev1.TaintEffectNoSchedule && t.Key != "os":
			score = 1
		}
	}
	return "", score
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// tolerations are the node's NoSchedule taints: the probe targets that node
// and nothing else.
func tolerations(n *corev1.Node) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tol := corev1.Toleration{Key: t.Key, Effect: t.Effect, Operator: corev1.TolerationOpExists}
		if t.Value != "" {
			tol.Operator, tol.Value = corev1.TolerationOpEqual, t.Value
		}
		out = append(out, tol)
	}
	return out
}

// probe registers (once) and returns the probe pod of group g: index 1 or 2
// (the group's first or second node), peer for the second pod on the first
// node, host for the hostNetwork client.
func (p *Plan) probe(g *Group, index int, peer, host bool) Probe {
	name := fmt.Sprintf("%s-%d", g.Name, index)
	switch {
	case host:
		name = "node-" + name
	case peer:
		name += "-peer"
	}
	for _, pr := range p.Probes {
		if pr.Name == name {
			return pr
		}
	}
	node := p.nodes[g.Nodes[index-1]]
	pr := Probe{Name: name, Namespace: p.Namespace, Group: g.Name, OS: g.OS, Build: g.Build,
		Node: node.Name, Host: host, Tolerations: tolerations(node), Image: p.image(g)}
	if host {
		pr.Namespace = p.HostNamespace
	}
	p.Probes = append(p.Probes, pr)
	return pr
}

func (p *Plan) image(g *Group) string {
	if g.OS == OSLinux {
		return p.opts.LinuxImage
	}
	if img := p.opts.WindowsImages[g.Build]; img != "" {
		return img
	}
	return p.opts.WindowsImage
}

// service registers the Service of group g (and its first probe, a backend).
func (p *Plan) service(g *Group) string {
	p.probe(g, 1, false, false)
	if !slices.Contains(p.Services, g.Name) {
		p.Services = append(p.Services, g.Name)
	}
	return g.Name
}

// HasHostProbe says whether the plan needs the host namespace.
func (p *Plan) HasHostProbe() bool {
	return slices.ContainsFunc(p.Probes, func(pr Probe) bool { return pr.Host })
}

// Probe returns the named probe.
func (p *Plan) Probe(name string) (Probe, bool) {
	i := slices.IndexFunc(p.Probes, func(pr Probe) bool { return pr.Name == name })
	if i < 0 {
		return Probe{}, false
	}
	return p.Probes[i], true
}

func (p *Plan) linux() *Group { return p.byGroup[OSLinux] }

func (p *Plan) windows() []*Group {
	var out []*Group
	for i := range p.Groups {
		if p.Groups[i].OS == OSWindows {
			out = append(out, &p.Groups[i])
		}
	}
	return out
}

func (p *Plan) all() []*Group {
	var out []*Group
	for i := range p.Groups {
		out = append(out, &p.Groups[i])
	}
	return out
}

func osTitle(os string) string {
	if os == OSWindows {
		return "Windows"
	}
	return "Linux"
}

func skipped(from, to, reason string) Action { return Action{From: from, To: to, Skip: reason} }

func podAction(c, t Probe) Action {
	return Action{From: c.Display(), To: t.Display(), Client: c.Name, Target: Target{Kind: ToPod, Probe: t.Name}}
}

func sameNode(p *Plan) []Action {
	var out []Action
	for _, g := range p.all() {
		if g.Missing != "" {
			out = append(out, skipped("a "+osTitle(g.OS)+" pod", "a pod on the same node", g.Missing))
			continue
		}
		out = append(out, podAction(p.probe(g, 1, false, false), p.probe(g, 1, true, false)))
	}
	return out
}

func acrossNodes(p *Plan) []Action {
	var out []Action
	for _, g := range p.all() {
		switch {
		case g.Missing != "":
			out = append(out, skipped("a "+osTitle(g.OS)+" pod", "a pod on another node", g.Missing))
		case len(g.Nodes) < 2:
			out = append(out, skipped(g.Name+"-1 ("+g.Nodes[0]+")", "a pod on another node",
				fmt.Sprintf("only one schedulable node in group %s (%s)", g.Name, g.Nodes[0])))
		default:
			out = append(out, podAction(p.probe(g, 1, false, false), p.probe(g, 2, false, false)))
		}
	}
	return out
}

func crossOS(p *Plan, fromLinux bool) []Action {
	var out []Action
	l := p.linux()
	for _, w := range p.windows() {
		c, t := l, w
		if !fromLinux {
			c, t = w, l
		}
		if c.Missing != "" || t.Missing != "" {
			out = append(out, skipped("a "+osTitle(c.OS)+" pod", "a "+osTitle(t.OS)+" pod", cmp.Or(c.Missing, t.Missing)))
			continue
		}
		out = append(out, podAction(p.probe(c, 1, false, false), p.probe(t, 1, false, false)))
	}
	return out
}

func linuxToWindows(p *Plan) []Action { return crossOS(p, true) }
func windowsToLinux(p *Plan) []Action { return crossOS(p, false) }

func podToService(p *Plan) []Action {
	var out []Action
	for _, c := range p.all() {
		for _, s := range p.all() {
			if c.Missing != "" || s.Missing != "" {
				out = append(out, skipped("a "+osTitle(c.OS)+" pod", "a Service with "+osTitle(s.OS)+" backends", cmp.Or(c.Missing, s.Missing)))
				continue
			}
			cl := p.probe(c, 1, false, false)
			svc := p.service(s)
			out = append(out, Action{From: cl.Display(), To: "service " + svc, Client: cl.Name, Target: Target{Kind: ToService, Service: svc}})
		}
	}
	return out
}

// dnsActions connects every client group's first probe to the Linux
// Service by the name name(service) gives.
func dnsActions(p *Plan, name func(svc string) string, windowsSkip string) []Action {
	var out []Action
	l := p.linux()
	for _, c := range p.all() {
		to := name(OSLinux)
		switch {
		case c.Missing != "":
			out = append(out, skipped("a "+osTitle(c.OS)+" pod", to, c.Missing))
		case l.Missing != "":
			out = append(out, skipped("a "+osTitle(c.OS)+" pod", to, "no Linux backend: "+l.Missing))
		case c.OS == OSWindows && windowsSkip != "":
			cl := p.probe(c, 1, false, false)
			out = append(out, skipped(cl.Display(), to, windowsSkip))
		default:
			cl := p.probe(c, 1, false, false)
			svc := p.service(l)
			out = append(out, Action{From: cl.Display(), To: name(svc), Client: cl.Name, Target: Target{Kind: ToName, Service: svc, Host: name(svc)}})
		}
	}
	return out
}

func dnsShort(p *Plan) []Action {
	return dnsActions(p, func(s string) string { return s }, "")
}

func dnsFQDN(p *Plan) []Action {
	return dnsActions(p, func(s string) string { return s + "." + p.Namespace + ".svc." + p.DNSDomain }, "")
}

// WindowsDottedNameLimit is the documented platform limit dns-dotted-name
// skips Windows clients with.
const WindowsDottedNameLimit = "platform limit: the Windows DNS client does not complete a name with a dot (NAME.NAMESPACE) with the search suffixes, curl.exe exits 6; use the full name (the guide, \"From Windows to Linux\")"

func dnsDotted(p *Plan) []Action {
	return dnsActions(p, func(s string) string { return s + "." + p.Namespace }, WindowsDottedNameLimit)
}

func nodeToPod(p *Plan) []Action {
	var out []Action
	l := p.linux()
	if l.Missing != "" {
		out = append(out, skipped("a Linux node", "pods", l.Missing))
	} else {
		h := p.probe(l, 1, false, true)
		from := "node " + h.Node
		t := p.probe(l, len(l.Nodes), false, false)
		out = append(out, Action{From: from, To: t.Display(), Client: h.Name, Target: Target{Kind: ToPod, Probe: t.Name}})
		for _, w := range p.windows() {
			if w.Missing != "" {
				out = append(out, skipped(from, "a Windows pod", w.Missing))
				continue
			}
			t := p.probe(w, 1, false, false)
			out = append(out, Action{From: from, To: t.Display(), Client: h.Name, Target: Target{Kind: ToPod, Probe: t.Name}})
		}
	}
	for _, w := range p.windows() {
		if w.Missing == "" {
			out = append(out, skipped("node "+w.Nodes[0], "pods", "not implemented: a Windows node needs a HostProcess probe"))
		}
	}
	return out
}

func podToExternal(p *Plan) []Action {
	var out []Action
	for _, c := range p.all() {
		to := cmp.Or(p.opts.ExternalTarget, "an external address")
		switch {
		case c.Missing != "":
			out = append(out, skipped("a "+osTitle(c.OS)+" pod", to, c.Missing))
		case p.opts.ExternalTarget == "":
			out = append(out, skipped("a "+osTitle(c.OS)+" pod", to, "off by default: --external-target HOST:PORT turns it on"))
		default:
			cl := p.probe(c, 1, false, false)
			host, port, _ := splitHostPort(p.opts.ExternalTarget)
			out = append(out, Action{From: cl.Display(), To: to, Client: cl.Name, Target: Target{Kind: ToExternal, Host: host, Port: port}})
		}
	}
	return out
}

func splitHostPort(hp string) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("--external-target %q: want HOST:PORT: %w", hp, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("--external-target %q: want HOST:PORT with a port from 1 to 65535", hp)
	}
	return host, port, nil
}
