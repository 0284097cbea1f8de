package procedure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// nodesReadyPhase waits until a set of the spec's nodes are registered
// under their names and Ready: the guide's `kubectl get nodes` after the
// joins. A node is Ready once the pod network runs on it (its CNI
// configuration is written), so the phases after it (CoreDNS spread over
// the workers, the check workloads, doctor) see the cluster as it will be,
// not half-started. On timeout the error names each node that is not Ready
// with the kubelet's reason ("cni plugin not initialized": no pod network).
type nodesReadyPhase struct {
	title      string
	nodes      func([]engine.Host) []engine.Host
	hosts      []engine.Host
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
	// vswitch, when set, restarts the kubelet of a Windows node that stays
	// not Ready after Calico created its vSwitch (kubeletAfterVSwitch).
	vswitch *kubeletAfterVSwitch
}

// Narrow implements engine.Narrower: the cluster when the spec has such
// nodes, else nothing.
func (p *nodesReadyPhase) Narrow(hosts []engine.Host) []engine.Host {
	if len(p.nodes(p.hosts)) == 0 {
		return nil
	}
	return hosts
}

func (p *nodesReadyPhase) names() []string {
	var out []string
	for _, h := range p.nodes(p.hosts) {
		out = append(out, h.Name)
	}
	return out
}

func (p *nodesReadyPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	lines := []string{fmt.Sprintf("wait up to %s until nodes %s are Ready (kubectl get nodes)", p.timeout, strings.Join(p.names(), ", "))}
	if p.vswitch != nil {
		lines = append(lines, fmt.Sprintf("a node still not Ready after %s: over SSH (connecting again: the vSwitch drops connections), once Calico's HNS network exists, Restart-Service kubelet, once per network (its ID recorded in %s)", p.vswitch.after, windowsVSwitchMarker))
	}
	return lines, nil
}

// notReadyNodes lists the wanted nodes that are missing or not Ready, in
// the order of want, each with the kubelet's reason.
func notReadyNodes(items []corev1.Node, want []string) []string {
	out, _ := nodesNotReady(items, want)
	return out
}

// nodesNotReady is notReadyNodes, and the set of registered wanted nodes whose
// Ready condition is not True (what kubeletAfterVSwitch looks at).
func nodesNotReady(items []corev1.Node, want []string) ([]string, map[string]bool) {
	registered := map[string]bool{}
	byName := make(map[string]*corev1.Node, len(items))
	for i := range items {
		byName[items[i].Name] = &items[i]
	}
	var out []string
	for _, name := range want {
		n, ok := byName[name]
		if !ok {
			out = append(out, name+" (not registered)")
			continue
		}
		var ready *corev1.NodeCondition
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				ready = &n.Status.Conditions[i]
			}
		}
		switch {
		case ready == nil:
			out = append(out, name+" (no Ready condition yet)")
		case ready.Status != corev1.ConditionTrue:
			registered[name] = true
			why := ready.Message
			if why == "" {
				why = ready.Reason
			}
			out = append(out, fmt.Sprintf("%s (Ready=%s: %s)", name, ready.Status, why))
		}
	}
	return out, registered
}

// Diff implements engine.Differ. Waiting changes nothing; but with vswitch
// set, a Windows node registered and not Ready may get its kubelet
// restarted: diff names each such node (a node not registered yet is the
// join's to change).
func (p *nodesReadyPhase) Diff(ctx context.Context, h engine.Host) ([]engine.Change, error) {
	want := p.names()
	if p.vswitch == nil || len(want) == 0 {
		return nil, nil
	}
	client, err := clientFor(ctx, p.restConfig, p.title)
	if errors.Is(err, inventory.ErrNoCluster) {
		return nil, nil // no cluster yet: its nodes join first
	}
	if err != nil {
		return nil, err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	pending, unready := nodesNotReady(list.Items, want)
	var out []engine.Change
	for _, line := range pending {
		name, _, _ := strings.Cut(line, " ")
		if unready[name] {
			out = append(out, engine.Change{Phase: p.title, Host: h.Name, Action: engine.ActionRun,
				Summary: fmt.Sprintf("%s: if it is still not Ready %s after Calico's HNS network exists, its kubelet is restarted, once per network", line, p.vswitch.after)})
		}
	}
	return out, nil
}

func (p *nodesReadyPhase) Run(ctx context.Context, _ engine.Host) error {
	want := p.names()
	if len(want) == 0 {
		return nil
	}
	client, err := clientFor(ctx, p.restConfig, p.title)
	if err != nil {
		return err
	}
	if p.vswitch != nil {
		p.vswitch.state = map[string]*vswitchState{} // what this run has seen
	}
	pending, err := waitUntil(ctx, p.timeout, p.poll, func(ctx context.Context) (bool, string) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "listing Nodes: " + err.Error()
		}
		pending, unready := nodesNotReady(list.Items, want)
		if p.vswitch != nil {
			p.vswitch.look(ctx, unready)
		}
		return len(pending) == 0, strings.Join(pending, "; ")
	})
	switch {
	case err == errWaitTimedOut:
		return fmt.Errorf("not Ready after %s: %s (a node stays NotReady until the pod network runs on it: kubectl describe node NAME)", p.timeout, pending)
	case err != nil:
		return fmt.Errorf("waiting for the nodes: %w", err)
	}
	return nil
}

// RunsOn labels the phase in apply --help and docs/apply.md: its targets
// depend on the spec (none without such nodes).
