package procedure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// imageCheckTimeout bounds the look-up of one image in its registry.
const imageCheckTimeout = 15 * time.Second

// checkImageExists looks ref up in its registry (a HEAD of its manifest,
// anonymous): nil when it is there; an error wrapping ErrUpgradeRefused
// when the registry answers that it is not; for a registry that cannot be
// reached or asks for credentials, reachable is false and the upgrade goes
// on (the nodes may reach what this machine cannot).
func checkImageExists(ctx context.Context, ref string, opts ...remote.Option) (reachable bool, err error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false, fmt.Errorf("%w: image %q: %w", ErrUpgradeRefused, ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, imageCheckTimeout)
	defer cancel()
	_, err = remote.Head(r, append([]remote.Option{remote.WithContext(ctx)}, opts...)...)
	if err == nil {
		return true, nil
	}
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return true, fmt.Errorf("%w: %s is not in its registry: the Windows nodes' kube-proxy would not start at the new version (mirror it first: hybridctl plan -o json | jq .images)", ErrUpgradeRefused, ref)
	}
	return false, nil
}
