// Package diagnose is `hybridctl node diagnose`: the guide's
// troubleshooting done on the node over SSH, read-only, and the overlay
// cross-check between what each node has programmed and what the cluster
// says (Calico's BlockAffinities and Node annotations, flannel's, or plain
// routes on spec.podCIDR).
//
// It is a catalogue over internal/hostfacts: each node is gathered with
// hostfacts.GatherNode (one read-only script per OS), and the checks are
// one ordered list (Checks) of pure functions over the parsed
// hostfacts.Node and the Cluster view.
package diagnose

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
)

// Check is one node check: a stable ID and name, the most severe finding it
// reports, its documentation, and a pure function over a node's facts.
type Check struct {
	ID       string
	Name     string
	Severity finding.Severity
	// Title says what it finds, in one line; Why and Fix document it.
	Title string
	Why   string
	Fix   string
	// Guide is the section of the hybrid cluster guide it automates.
	Guide string
	// NeedsCluster: the check compares with the API's view; without it
	// the check is skipped with the reason.
	NeedsCluster bool
	Run          func(*Ctx)
}

// Checks returns the node checks, in the order they run and are listed.
func Checks() []Check {
	return []Check{
		{ID: "HC501", Name: "node-services", Severity: finding.Error, Run: checkServices,
			Title: "kubelet and containerd are running and start at boot; on Windows hns and vmcompute are not disabled",
			Why:   "the kubelet depends on containerd and does not start without it; on Windows containerd needs the Host Compute Service (vmcompute) and the Host Network Service (hns), which start on demand (Manual) and must not be Disabled. Windows' Service Control Manager events say why a service failed.",
			Fix:   "Linux: systemctl enable --now containerd kubelet, then journalctl -u containerd; Windows: Start-Service containerd, kubelet and Set-Service -StartupType Automatic, then Get-WinEvent for the Service Control Manager's reason",
			Guide: "If the node is NotReady"},
		{ID: "HC502", Name: "containerd-answers", Severity: finding.Error, Run: checkCRI,
			Title: "crictl info gets an answer from containerd and the runtime reports itself ready",
			Why:   "a running containerd service that does not answer on its socket (Linux) or named pipe (Windows) leaves the kubelet without a runtime: pods never start and the node goes NotReady.",
			Fix:   "restart containerd and read its log (journalctl -u containerd; on Windows the containerd service's log and the System event log); check the CRI socket in /etc/containerd/config.toml",
			Guide: "If the node is NotReady"},
		{ID: "HC503", Name: "kubelet-log", Severity: finding.Warning, Run: checkKubeletLog,
			Title: "the kubelet's recent errors (last 15 minutes of its last 300 log lines) match a known cause",
			Why:   "the guide's known causes of a NotReady or Unknown node show in the kubelet's log first: a wrong clock (x509: certificate has expired or is not yet valid), containerd down, the connection to the API lost when HNS created the vSwitch, no CNI configuration, an unapproved serving certificate.",
			Fix:   "per cause, in the finding; the log is journalctl -u kubelet on Linux and C:\\var\\log\\kubelet\\kubelet.err.log on Windows",
			Guide: "If the node is NotReady"},
		{ID: "HC504", Name: "api-reachable", Severity: finding.Error, Run: checkAPI,
			Title: "a TCP connection from the node to the control plane endpoint (controlPlaneEndpoint) opens within 5 seconds",
			Why:   "the kubelet posts node status to the API; when the node cannot reach it (DNS, a firewall, the address moved to vEthernet on Windows) the node goes Unknown.",
			Fix:   "resolve the endpoint's name on the node (the DNS records of hybridctl plan), open TCP 6443 to the control plane, then restart the kubelet",
			Guide: "If the node is NotReady"},
		{ID: "HC505", Name: "clock-skew", Severity: finding.Error, Run: checkClock,
			Title: "the node's clock is within 30 seconds of this machine's (the limit preflight's clock-skew applies too)",
			Why:   "kubeadm and the CSR signer backdate certificates by 5 minutes, but a clock 30 s off already says time synchronisation is not working, and further off the node sees fresh certificates as not yet valid (or valid ones as expired) and the kubelet fails with x509 errors. The clock is sampled by a command of its own; the skew is measured against the middle of its round trip, and half the round trip (the uncertainty) is subtracted before comparing. A sample whose round trip exceeds 10 s, or whose uncertainty exceeds the limit, is reported as unknown (skipped, incomplete), never as fine.",
			Fix:   "Linux: timedatectl set-ntp true and chronyc sources; Windows: w32tm /query /status, w32tm /resync /force, and the NTP servers of the spec",
			Guide: "If the node is NotReady"},
		{ID: "HC506", Name: "cni-config", Severity: finding.Error, Run: checkCNI,
			Title: "the CNI configuration directory holds a valid configuration, and the first one is the cluster's network",
			Why:   "without a configuration in /etc/cni/net.d (C:\\etc\\cni\\net.d) the runtime reports NetworkPluginNotReady (cni plugin not initialized) and the node stays NotReady; a leftover configuration that sorts first is the one the runtime uses.",
			Fix:   "check the pod network's DaemonSet on the node (calico-node, calico-node-windows's install-cni, or the lab's podnet); remove leftover configurations of another network",
			Guide: "If the node is NotReady"},
		{ID: "HC507", Name: "vxlan-device", Severity: finding.Error, Run: checkVXLAN, NeedsCluster: true,
			Title: "the VXLAN endpoint exists and is up with the cluster's VNI and UDP port (vxlan.calico or flannel.1; on Windows the HNS Overlay network and its 4789/UDP firewall rule)",
			Why:   "the overlay needs a VTEP on every node with the same VNI and UDP port: Calico uses VNI 4096 and port 4789, which Windows requires; a Linux flannel on its default 8472 cannot talk to a Windows node. Traffic between nodes on UDP 4789 must not be blocked, on the node or between the machines.",
			Fix:   "restart the pod network's agent on the node (calico-node, calico-node-windows) and read its log; on Windows check Get-HnsNetwork and the OverlayTraffic4789UDP rule",
			Guide: "Hands-on: the pod network in HNS"},
		{ID: "HC508", Name: "overlay-cross-check", Severity: finding.Error, Run: checkOverlay, NeedsCluster: true,
			Title: "for every other node, the block, node address and VTEP MAC this node has programmed match the cluster's record",
			Why:   "each node routes every other node's pod block to that node's VTEP: on Linux a route via the tunnel address on vxlan.calico, a neighbour entry (tunnel address to VTEP MAC) and an FDB entry (VTEP MAC to node address); on Windows an HNS RemoteSubnetRoute policy (block, provider address, MAC). A stale or missing entry breaks pod traffic to one node only, and is found otherwise by reading four tables by eye. With plain routes (the hybridctl lab) it is one route per podCIDR via the node address.",
			Fix:   "restart the pod network's agent on the node that holds the stale entry (calico-node or calico-node-windows; Felix reprograms the overlay from the cluster's record); if the cluster's record is wrong, the agent on the node it describes",
			Guide: "Hands-on: the pod network in HNS"},
	}
}

// Lookup finds a check by ID or name (case-insensitive).
func Lookup(ref string) (Check, bool) {
	for _, c := range Checks() {
		if strings.EqualFold(c.ID, ref) || strings.EqualFold(c.Name, ref) {
			return c, true
		}
	}
	return Check{}, false
}

// Expect is what the spec says the checks compare against.
type Expect struct {
	// API is where the nodes reach the cluster's API.
	API       hostfacts.API
	VNI       int
	VXLANPort int
	// PodCIDR is the cluster's pod network; routes into it that match no
	// node are stale.
	PodCIDR netip.Prefix
}

// Finding is one problem on one node.
type Finding struct {
	Check    string           `json:"check"`
	Name     string           `json:"name"`
	Severity finding.Severity `json:"severity"`
	Node     string           `json:"node"`
	Message  string           `json:"message"`
	Fix      string           `json:"fix"`
	Evidence []string         `json:"evidence,omitempty"`
}

// Skipped is a check that could not run on a node, with the reason.
// Incomplete is set when it could not run because something failed (the
// API or the node could not be read), not because it does not apply.
type Skipped struct {
	Check      string `json:"check"`
	Name       string `json:"name"`
	Node       string `json:"node"`
	Reason     string `json:"reason"`
	Incomplete bool   `json:"-"`
}

// Ctx is what a check reads and reports through.
type Ctx struct {
	Facts   *hostfacts.Node
	Cluster *Cluster
	// ClusterErr is why Cluster is nil.
	ClusterErr error
	Expect     Expect

	check    Check
	findings []Finding
	skipped  *Skipped
}

// Report records a finding.
func (c *Ctx) Report(sev finding.Severity, msg, fix string, evidence ...string) {
	if fix == "" {
		fix = c.check.Fix
	}
	c.findings = append(c.findings, Finding{Check: c.check.ID, Name: c.check.Name, Severity: sev, Node: c.Facts.Node,
		Message: msg, Fix: fix, Evidence: evidence})
}

// Skip records that the check does not apply or could not run.
func (c *Ctx) Skip(reason string, incomplete bool) {
	c.skipped = &Skipped{Check: c.check.ID, Name: c.check.Name, Node: c.Facts.Node, Reason: reason, Incomplete: incomplete}
}

// Evaluate runs the selected checks (all when only is empty) on one node's
// facts.
func Evaluate(f *hostfacts.Node, cl *Cluster, clErr error, x Expect, only map[string]bool) ([]Finding, []Skipped) {
	var fs []Finding
	var sk []Skipped
	for _, ch := range Checks() {
		if len(only) > 0 && !only[ch.ID] {
			continue
		}
		c := &Ctx{Facts: f, Cluster: cl, ClusterErr: clErr, Expect: x, check: ch}
		if ch.NeedsCluster && cl == nil {
			reason := "the cluster's view is not available"
			if clErr != nil {
				reason = "the cluster's view could not be read: " + clErr.Error()
			}
			c.Skip(reason, true)
		} else {
			ch.Run(c)
		}
		fs = append(fs, c.findings...)
		if c.skipped != nil && len(c.findings) == 0 {
			sk = append(sk, *c.skipped)
		}
	}
	return fs, sk
}

// Resolve maps check IDs or names to IDs; unknown ones are an error that
// lists them.
func Resolve(refs []string) (map[string]bool, error) {
	out := map[string]bool{}
	var unknown []string
	for _, r := range refs {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		c, ok := Lookup(r)
		if !ok {
			unknown = append(unknown, r)
			continue
		}
		out[c.ID] = true
	}
	if len(unknown) > 0 {
		var names []string
		for _, c := range Checks() {
			names = append(names, c.ID+" "+c.Name)
		}
		return nil, fmt.Errorf("unknown node check %s (the checks: %s)", strings.Join(quoteAll(unknown), ", "), strings.Join(names, ", "))
	}
	return out, nil
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// Markdown is docs/node.md's table of checks, generated from Checks.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| ID | name | severity | what it finds | why | fix | guide |\n|---|---|---|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, c := range Checks() {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", c.ID, c.Name, c.Severity, esc(c.Title), esc(c.Why), esc(c.Fix), esc(c.Guide))
	}
	return b.String()
}
