package apply

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/render"
)

// The rendered Calico resources, in the runbook's order.
var calicoFiles = []string{
	"cluster/calico/kubernetes-services-endpoint.yaml",
	"cluster/calico/calico-installation.yaml",
	"cluster/calico/ipamconfiguration.yaml",
}

// CalicoManifests are where the upstream Calico manifests come from: a
// function so the CLI can read --manifests-dir or download the release's
// URLs only when the phase runs, and Describe says which for a dry-run.
type CalicoManifests struct {
	Load     func(ctx context.Context) (*render.Manifests, error)
	Describe []string // e.g. the two URLs, or the directory's files
}

// calicoPhase installs Calico Windows-ready from the start, as the guide
// does: the CRDs and the Tigera operator, then the rendered endpoint
// ConfigMap, Installation/APIServer and IPAMConfiguration (strictAffinity).
// Everything is server-side applied (the CRDs are too large for
// client-side apply), so a second run changes nothing.
type calicoPhase struct {
	files      Artifacts
	manifests  *CalicoManifests
	restConfig func(ctx context.Context) (*rest.Config, error)
}

func (p *calicoPhase) Title() string { return "calico" }
func (p *calicoPhase) Description() string {
	return "Calico CRDs and Tigera operator, the endpoint ConfigMap, Installation (VXLAN, BGP off, HNS), APIServer, strictAffinity"
}
func (p *calicoPhase) Targets([]provision.Host) []provision.Host {
	return []provision.Host{provision.ClusterHost()}
}

func (p *calicoPhase) DryRun(context.Context, provision.Host) ([]string, error) {
	var out []string
	if p.manifests != nil {
		for _, d := range p.manifests.Describe {
			out = append(out, "server-side apply (field manager "+FieldManager+") "+d)
		}
	} else {
		out = append(out, "server-side apply the Calico CRDs and the Tigera operator (no source configured)")
	}
	mp := &manifestPhase{paths: calicoFiles, files: p.files}
	lines, err := mp.DryRun(context.Background(), provision.ClusterHost())
	if err != nil {
		return nil, err
	}
	return append(out, lines...), nil
}

func (p *calicoPhase) Run(ctx context.Context, _ provision.Host) error {
	if p.restConfig == nil || p.manifests == nil {
		return fmt.Errorf("%w: phase calico has no API access or manifest source", provision.ErrNotImplemented)
	}
	m, err := p.manifests.Load(ctx)
	if err != nil {
		return fmt.Errorf("reading the Calico manifests: %w", err)
	}
	a, err := newApplier(ctx, p.restConfig)
	if err != nil {
		return err
	}
	var aliases manifest.AliasBudget
	for _, src := range []struct {
		name string
		data []byte
	}{{"Calico CRDs", m.CRDs}, {render.OperatorManifest, m.Operator}} {
		objs, err := decodeDocs(src.name, src.data, &aliases)
		if err != nil {
			return err
		}
		for _, u := range objs {
			if err := a.apply(ctx, u, src.name); err != nil {
				return err
			}
		}
	}
	for _, path := range calicoFiles {
		f, err := p.files.get(path)
		if err != nil {
			return err
		}
		objs, err := decodeDocs(path, f.Data, &aliases)
		if err != nil {
			return err
		}
		for _, u := range objs {
			if err := a.apply(ctx, u, path); err != nil {
				return err
			}
		}
	}
	return nil
}

var tigeraStatus = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "tigerastatuses"}

// calicoReadyPhase waits until the operator reports every component
// Available (kubectl get tigerastatus), including calico-windows when the
// cluster has Windows nodes.
type calicoReadyPhase struct {
	hosts      []provision.Host
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
}

func (p *calicoReadyPhase) Title() string { return "calico-ready" }
func (p *calicoReadyPhase) Description() string {
	return "wait until every TigeraStatus is Available"
}
func (p *calicoReadyPhase) Targets([]provision.Host) []provision.Host {
	return []provision.Host{provision.ClusterHost()}
}

func (p *calicoReadyPhase) required() []string {
	req := []string{"apiserver", "calico"}
	if len(provision.WindowsNodes(p.hosts)) > 0 {
		req = append(req, "calico-windows")
	}
	return req
}

func (p *calicoReadyPhase) DryRun(context.Context, provision.Host) ([]string, error) {
	return []string{fmt.Sprintf("wait up to %s until every TigeraStatus is Available (at least %s)", p.timeout, strings.Join(p.required(), ", "))}, nil
}

// notReady lists the components that are not Available, with the
// operator's message.
func notReady(items []unstructured.Unstructured, required []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range items {
		seen[it.GetName()] = true
		conds, _, _ := unstructured.NestedSlice(it.Object, "status", "conditions")
		avail, msg := false, ""
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Available" && cm["status"] == "True" {
				avail = true
			}
			if cm["type"] == "Degraded" && cm["status"] == "True" {
				msg, _ = cm["message"].(string)
			}
		}
		if !avail {
			s := it.GetName()
			if msg != "" {
				s += " (" + msg + ")"
			}
			out = append(out, s)
		}
	}
	for _, r := range required {
		if !seen[r] {
			out = append(out, r+" (no status yet)")
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func (p *calicoReadyPhase) Run(ctx context.Context, _ provision.Host) error {
	if p.restConfig == nil {
		return fmt.Errorf("%w: phase calico-ready has no API access", provision.ErrNotImplemented)
	}
	a, err := newApplier(ctx, p.restConfig)
	if err != nil {
		return err
	}
	pending, err := waitUntil(ctx, p.timeout, p.poll, func(ctx context.Context) (bool, string) {
		list, err := a.dyn.Resource(tigeraStatus).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "listing TigeraStatus: " + err.Error()
		}
		pending := notReady(list.Items, p.required())
		return len(pending) == 0, strings.Join(pending, "; ")
	})
	switch {
	case err == errWaitTimedOut:
		return fmt.Errorf("calico not ready after %s: %s", p.timeout, pending)
	case err != nil:
		return fmt.Errorf("waiting for calico: %w", err)
	}
	return nil
}
