package preflight

import (
	"context"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// boundPhases are the preflight phases bound to their descriptions, as the
// apply procedure builds them.
func boundPhases(runner func(ctx context.Context, host string) (hostfacts.Runner, error), hosts []engine.Host, x Expect, ignore []string) (before []engine.Phase, postPrepare engine.Phase) {
	h, c, p := Phases(runner, hosts, x, ignore)
	return []engine.Phase{engine.Bind(HostDescriptor(), h), engine.Bind(ClusterDescriptor(), c)}, engine.Bind(PostPrepareDescriptor(), p)
}
