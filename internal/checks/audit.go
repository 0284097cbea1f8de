package checks

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// Audit is `hybridctl doctor`: it lists from the API server behind cfg what
// the checks selected by opts need (namespaced kinds only in namespace,
// when set) and runs them. It never writes. objects is how many objects
// were read. doctor and apply's doctor phase both call it.
func Audit(ctx context.Context, cfg *rest.Config, opts Options, namespace string) (res *Result, objects int, err error) {
	cs, _, err := Selected(opts)
	if err != nil {
		return nil, 0, err
	}
	snap, err := snapshot.LoadLive(ctx, cfg, snapshot.LiveOptions{Kinds: Needs(cs), Namespace: namespace, Read: ReadMode(opts)})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the cluster: %w", err)
	}
	res, err = Run(snap, opts)
	if err != nil {
		return nil, 0, err
	}
	return res, snap.Len(), nil
}

// ReadMode is how a live audit with opts reads the cluster: watch-list
// streams with ConsistentRead, else LISTs from the watch cache.
func ReadMode(opts Options) snapshot.ReadMode {
	if opts.ConsistentRead {
		return snapshot.ReadWatchList
	}
	return snapshot.ReadCached
}
