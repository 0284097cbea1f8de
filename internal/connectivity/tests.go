// Package connectivity is `hybridctl check connectivity`: the guide's
// cross-OS network checks (section "Checking: a Windows pod, Service, DNS and
// connectivity") as named tests. It places probe pods per OS, Windows build
// and node, runs each probe through pods/exec with a deadline, and deletes
// everything it created.
//
// The tests are one explicit ordered list (Tests); the docs table is
// generated from it. A test expands into actions (one client, one target)
// from the plan of probes, which is computed from Node objects alone
// (NewPlan), so placement is testable without a cluster.
package connectivity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hybridctl/hybridctl/internal/suggest"
)

// Test is one named connectivity test.
type Test struct {
	Name string
	// What the test proves, one line.
	What string
	// Requires says which probes the test needs; without them its actions
	// are skipped with the reason.
	Requires string
	// Fix is the first thing to look at when the test fails.
	Fix string
	// actions expands the test over the plan's groups.
	actions func(p *Plan) []Action
}

// Port is the probes' HTTP port; Services expose it as ServicePort.
const (
	Port        = 8080
	ServicePort = 80
)

// Tests is the ordered list of tests. Adding a test means adding it here.
func Tests() []Test {
	return []Test{
		{
			Name:     "pod-to-pod-same-node",
			What:     "a pod reaches another pod on the same node by pod IP (TCP)",
			Requires: "one schedulable node of the OS (two probe pods on it)",
			Fix:      "the node's own pod networking: the CNI configuration and, on Windows, the HNS network and its endpoints (hybridctl node diagnose)",
			actions:  sameNode,
		},
		{
			Name:     "pod-to-pod-across-nodes",
			What:     "a pod reaches a pod on another node of the same OS by pod IP (TCP over VXLAN)",
			Requires: "two schedulable nodes of the OS (per Windows build)",
			Fix:      "the overlay: UDP 4789 open between the nodes, the routes to each node's block and the VTEP entries (hybridctl node diagnose, HC508)",
			actions:  acrossNodes,
		},
		{
			Name:     "linux-to-windows-pod",
			What:     "a Linux pod reaches a Windows pod by pod IP (TCP)",
			Requires: "a schedulable Linux node and a schedulable Windows node",
			Fix:      "VXLAN between the OSes: the same VNI (4096) and port (4789) on both sides, the Windows node's block route on Linux, Felix's ACLs on the Windows endpoint",
			actions:  linuxToWindows,
		},
		{
			Name:     "windows-to-linux-pod",
			What:     "a Windows pod reaches a Linux pod by pod IP (TCP)",
			Requires: "a schedulable Windows node and a schedulable Linux node",
			Fix:      "the Windows node's RemoteSubnetRoute policies (one per Linux block) and the OutBoundNAT exceptions (podCIDR and serviceCIDR)",
			actions:  windowsToLinux,
		},
		{
			Name:     "pod-to-service",
			What:     "a pod of each OS reaches a ClusterIP Service backed by pods of each OS",
			Requires: "probe pods of the client's and the backend's OS",
			Fix:      "kube-proxy on the client's node (kernelspace on Windows, with serviceCIDRs in the Calico Installation); a Service without ready endpoints cannot answer",
			actions:  podToService,
		},
		{
			Name:     "dns-short-name",
			What:     "a pod resolves and reaches a Service of its namespace by short name",
			Requires: "probe pods of the client's OS and a Linux backend",
			Fix:      "CoreDNS running and reachable at the DNS Service IP; the pod's resolv.conf search list",
			actions:  dnsShort,
		},
		{
			Name:     "dns-fqdn",
			What:     "a pod resolves and reaches a Service by its full name (NAME.NAMESPACE.svc.DOMAIN)",
			Requires: "probe pods of the client's OS and a Linux backend",
			Fix:      "CoreDNS and the cluster domain (--dns-domain must match the kubelet's clusterDomain)",
			actions:  dnsFQDN,
		},
		{
			Name:     "dns-dotted-name",
			What:     "a Linux pod reaches a Service by NAME.NAMESPACE (completed by the search list)",
			Requires: "a Linux client; skipped from Windows pods, whose DNS client does not complete dotted names",
			Fix:      "the pod's resolv.conf search list (ndots:5)",
			actions:  dnsDotted,
		},
		{
			Name:     "node-to-pod",
			What:     "a Linux node (a hostNetwork pod) reaches pods of each OS by pod IP",
			Requires: "a schedulable Linux node; Windows nodes are not probed (a HostProcess probe is not implemented)",
			Fix:      "the node's route to the pod blocks (vxlan.calico) and the host endpoint rules",
			actions:  nodeToPod,
		},
		{
			Name:     "pod-to-external",
			What:     "a pod of each OS reaches --external-target through NAT (natOutgoing)",
			Requires: "--external-target HOST:PORT (off by default)",
			Fix:      "natOutgoing on the IP pool, the OutBoundNAT policy on Windows endpoints, the nodes' own route out",
			actions:  podToExternal,
		},
	}
}

// Names lists the tests' names in order.
func Names() []string {
	var out []string
	for _, t := range Tests() {
		out = append(out, t.Name)
	}
	return out
}

// UnknownTestError is a --tests or --skip name that is not a test.
type UnknownTestError struct {
	Flag, Name, Suggestion string
}

func (e *UnknownTestError) Error() string {
	msg := fmt.Sprintf("%s: unknown test %q", e.Flag, e.Name)
	if e.Suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	}
	return msg + "; the tests are " + strings.Join(Names(), ", ")
}

// Select returns the tests to run, in the list's order: only (every test
// when empty) minus skip. Names are matched case-insensitively; an unknown
// name is an UnknownTestError, and selecting nothing is an error too.
func Select(only, skip []string) ([]Test, error) {
	all := Tests()
	names := Names()
	norm := func(flag string, in []string) (map[string]bool, error) {
		set := map[string]bool{}
		for _, raw := range in {
			n := strings.ToLower(strings.TrimSpace(raw))
			if n == "" {
				continue
			}
			if !slices.Contains(names, n) {
				s, _ := suggest.Closest(n, names)
				return nil, &UnknownTestError{Flag: flag, Name: raw, Suggestion: s}
			}
			set[n] = true
		}
		return set, nil
	}
	onlySet, err := norm("--tests", only)
	if err != nil {
		return nil, err
	}
	skipSet, err := norm("--skip", skip)
	if err != nil {
		return nil, err
	}
	var out []Test
	for _, t := range all {
		if (len(onlySet) == 0 || onlySet[t.Name]) && !skipSet[t.Name] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--tests and --skip leave no test to run")
	}
	return out, nil
}

// DocTable is docs/connectivity.md's table of tests, generated from Tests.
func DocTable() string {
	var b strings.Builder
	b.WriteString("| # | test | what it proves | needs | when it fails, look at |\n|---|---|---|---|---|\n")
	for i, t := range Tests() {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s |\n", i+1, t.Name, t.What, t.Requires, t.Fix)
	}
	return b.String()
}
