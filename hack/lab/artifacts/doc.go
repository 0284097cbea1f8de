// Package artifacts builds what the lab serves to its nodes, all from the Go
// module proxy and without Docker: the binaries (cached under
// ~/.cache/hybridctl/lab, one stamp per artifact), the container images
// (go-containerregistry, deterministic) pushed to the lab registry, and the
// bundle directory that `hybridctl apply --bundle` uploads. See docs/e2e.md.
package artifacts

import (
	_ "github.com/google/go-containerregistry/pkg/v1" // images are built with go-containerregistry
)
