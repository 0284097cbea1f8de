package render

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// OperatorManifest is the Tigera operator manifest's name in a Calico
// release's manifests/ directory.
const OperatorManifest = "tigera-operator.yaml"

const calicoManifestsDir = "cluster/calico/manifests"

// maxManifestBytes bounds a manifest read from --manifests-dir; the CRD file
// of Calico 3.33 is about 2 MB.
const maxManifestBytes = 64 << 20

// Manifests are the upstream Calico manifests for an air-gapped site.
type Manifests struct {
	// CRDs is the plan's CRD manifest (v3_projectcalico_org.yaml or
	// operator-crds.yaml); Operator is tigera-operator.yaml.
	CRDs     []byte
	Operator []byte
}

// ReadManifests reads the Calico manifests the plan needs from dir (a copy
// of the release's manifests/ directory) and checks that they are what
// their names say: the CRD file holds CustomResourceDefinitions of the plan's
// API group, the operator file the tigera-operator Deployment.
func ReadManifests(ctx context.Context, dir string, p *plan.Plan) (*Manifests, error) {
	crdPath := filepath.Join(dir, p.Calico.CRDManifest)
	opPath := filepath.Join(dir, OperatorManifest)
	crds, err := readManifest(ctx, crdPath)
	if err != nil {
		return nil, err
	}
	op, err := readManifest(ctx, opPath)
	if err != nil {
		return nil, err
	}
	group := "crd.projectcalico.org"
	if p.Calico.CRDMode == "projectcalico.org/v3" {
		group = "group: projectcalico.org"
	}
	for _, want := range [][]byte{[]byte("kind: CustomResourceDefinition"), []byte("group: operator.tigera.io"), []byte(group)} {
		if !bytes.Contains(crds, want) {
			return nil, fmt.Errorf("%s: not the Calico %s CRD manifest (no %q)", crdPath, p.Calico.CRDMode, want)
		}
	}
	for _, want := range [][]byte{[]byte("kind: Deployment"), []byte("name: tigera-operator"), []byte("kind: Namespace")} {
		if !bytes.Contains(op, want) {
			return nil, fmt.Errorf("%s: not the Tigera operator manifest (no %q)", opPath, want)
		}
	}
	return &Manifests{CRDs: crds, Operator: op}, nil
}

func readManifest(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--manifests-dir: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--manifests-dir: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--manifests-dir: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--manifests-dir: reading %s: %w", path, err)
	}
	if len(b) > maxManifestBytes {
		return nil, fmt.Errorf("--manifests-dir: %s is larger than %d bytes", path, maxManifestBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("--manifests-dir: %s is empty", path)
	}
	return b, nil
}
