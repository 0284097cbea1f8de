package procedure

import (
	"context"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// members gates the phases that prepare, initialise or join a node: a
// node that is already a member of the cluster (inventory.Discover, read
// before the run) is never prepared, joined, restarted or reconfigured by
// apply. A nil inventory (an offline dry run) treats every node as new.
type members struct{ inv *inventory.Inventory }

// skip says whether h is a member, and why, for a Skipper.
func (m members) skip(h engine.Host) (bool, string) {
	n := m.inv.Node(h.Name)
	if n == nil || n.Status != inventory.StatusMember {
		return false, ""
	}
	return true, "a member of the cluster (" + n.Reason + "): apply leaves it alone; hybridctl diff shows how it differs from the spec"
}

// unlessMember adds the members gate to a phase implemented elsewhere
// (post-prepare): it skips members and otherwise defers to the phase's
// own Skipper and DryRunner.
type unlessMember struct {
	engine.Runner
	members
}

func (p unlessMember) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	if skip, why := p.skip(h); skip {
		return false, why, nil
	}
	if sk, ok := p.Runner.(engine.Skipper); ok {
		return sk.ShouldRun(ctx, h)
	}
	return true, "", nil
}

func (p unlessMember) DryRun(ctx context.Context, h engine.Host) ([]string, error) {
	if d, ok := p.Runner.(engine.DryRunner); ok {
		return d.DryRun(ctx, h)
	}
	return nil, nil
}
