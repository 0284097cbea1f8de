package procedure

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
	"github.com/hybridctl/hybridctl/internal/render"
)

// DiffResult is what apply would change on the cluster and its hosts,
// and how the members differ from the spec.
type DiffResult struct {
	// Nodes are the spec's nodes and what they are to the cluster.
	Nodes []NodeStatus `json:"nodes"`
	// Changes are what apply would do, in the order it would: steps on
	// new nodes ("run") and cluster objects to create or update.
	Changes []engine.Change `json:"changes"`
	// Drift is how each member's host differs from the spec ("drift"):
	// apply leaves members alone; apply --reconcile NODE changes one.
	Drift []engine.Change `json:"drift"`
	// Extra are the cluster's nodes that the spec does not name.
	Extra []inventory.Extra `json:"extra"`
	// Unreachable are the nodes and steps that could not be compared.
	Unreachable []Unreachable `json:"unreachable"`
}

// NodeStatus is one spec node's relation to the cluster.
type NodeStatus struct {
	Name   string           `json:"name"`
	Status inventory.Status `json:"status"`
	Reason string           `json:"reason"`
}

// Unreachable is a host (or the cluster) that could not be compared.
type Unreachable struct {
	Host  string `json:"host"`
	Phase string `json:"phase,omitempty"`
	Error string `json:"error"`
}

// Empty reports whether apply would change nothing and nothing differs.
func (r *DiffResult) Empty() bool {
	return len(r.Changes) == 0 && len(r.Drift) == 0 && len(r.Extra) == 0
}

// ErrNothingCompared matches (errors.Is) Diff's error when no node and no
// cluster object could be compared.
var ErrNothingCompared = errors.New("nothing could be compared")

// Diff compares the spec with the cluster and its hosts and lists what
// Apply with the same options would change, without changing anything:
// nodes to prepare and join, cluster objects that differ (a server-side
// apply dry run with hybridctl's field manager), how each member differs
// from the spec, and the cluster's nodes the spec lacks. Skip and Only
// leave phases out as they do for Apply.
//
// A node that cannot be reached is listed in Unreachable and the others
// are compared; ErrNothingCompared when nothing could be. Conflicting
// nodes wrap ErrClusterDiffers; a cluster that cannot be read,
// ErrClusterUnreadable. Offline compares with nothing: every node is new.
func Diff(ctx context.Context, o Options) (*DiffResult, error) {
	r, err := setup(ctx, &o, modeDiff, Phases)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.members.Conflicts(); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrClusterDiffers, err)
	}
	e, err := engine.New(r.phases, r.hosts, engine.Options{Cluster: o.Plan.Cluster, Skip: o.Skip, Only: o.Only,
		Concurrency: o.Concurrency, Redactor: r.redactor, Offline: o.Offline, DryRun: true})
	if err != nil {
		return nil, err
	}
	res := &DiffResult{}
	for _, h := range engine.Nodes(r.hosts) {
		ns := NodeStatus{Name: h.Name, Status: inventory.StatusNew, Reason: "not compared (offline)"}
		if n := r.members.Node(h.Name); n != nil {
			ns.Status, ns.Reason = n.Status, n.Reason
			if n.HostErr != nil {
				res.Unreachable = append(res.Unreachable, Unreachable{Host: h.Name, Error: r.redactor.Redact(n.HostErr.Error())})
			}
		}
		res.Nodes = append(res.Nodes, ns)
	}
	if r.members != nil {
		res.Extra = r.members.Extra
		if v := r.members.ServerVersion; v != "" && strings.TrimPrefix(v, "v") != strings.TrimPrefix(o.Plan.KubernetesVersion, "v") {
			res.Changes = append(res.Changes, engine.Change{Phase: "upgrade", Host: engine.ClusterHostName, Action: ActionUpgrade,
				Summary: fmt.Sprintf("the API server runs %s and the spec says %s: hybridctl upgrade changes it (apply refuses)", v, o.Plan.KubernetesVersion)})
		}
		x := ExpectFor(o.Plan)
		for _, n := range r.members.Nodes {
			if n.Status != inventory.StatusMember {
				continue
			}
			if n.Object != nil {
				if kv := n.Object.Status.NodeInfo.KubeletVersion; kv != "" && kv != o.Plan.KubernetesVersion {
					res.Changes = append(res.Changes, engine.Change{Phase: "upgrade", Host: n.Host.Name, Action: ActionUpgrade,
						Summary: fmt.Sprintf("kubelet %s, the spec says %s: hybridctl upgrade upgrades this node", kv, o.Plan.KubernetesVersion)})
				}
			}
			for _, d := range inventory.Drift(n, x) {
				res.Drift = append(res.Drift, engine.Change{Host: n.Host.Name, Action: engine.ActionDrift, Summary: d.String()})
			}
		}
	}
	changes, err := e.Diff(ctx)
	res.Changes = append(res.Changes, changes...)
	for _, pe := range engine.PhaseErrors(err) {
		res.Unreachable = append(res.Unreachable, Unreachable{Host: pe.Host, Phase: pe.Phase, Error: r.redactor.Redact(pe.Err.Error())})
	}
	if err != nil && len(engine.PhaseErrors(err)) == 0 {
		return nil, err // interrupted
	}
	if len(res.Unreachable) > 0 && len(res.Changes) == 0 && len(res.Drift) == 0 && allUnreachable(res) {
		return res, fmt.Errorf("%w: %s", ErrNothingCompared, res.Unreachable[0].Error)
	}
	return res, nil
}

// ActionUpgrade is the change of a cluster at another version.
const ActionUpgrade = "upgrade"

// allUnreachable reports whether no node could be read.
func allUnreachable(r *DiffResult) bool {
	down := map[string]bool{}
	for _, u := range r.Unreachable {
		down[u.Host] = true
	}
	for _, n := range r.Nodes {
		if !down[n.Name] {
			return false
		}
	}
	return true
}

// ExpectFor is what the spec says the members' hosts should have.
func ExpectFor(p *plan.Plan) inventory.Expect {
	x := inventory.Expect{KubernetesVersion: p.KubernetesVersion, ContainerdVersion: p.Versions.Containerd,
		SandboxImage: p.SandboxImage, MaxPods: map[string]int{}, CertsDir: map[engine.OS]string{}}
	for _, n := range p.Nodes {
		if n.IsWindows() {
			x.MaxPods[n.Name] = n.MaxPods
		}
	}
	if p.Registry != nil {
		x.CertsDir[engine.Linux] = render.LinuxCertsDir
		x.CertsDir[engine.Windows] = render.WindowsCertsDir
	}
	return x
}
