package procedure

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

	"github.com/hybridctl/hybridctl/internal/provision/engine"
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

func (p *calicoPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	var out []string
	if p.manifests != nil {
		for _, d := range p.manifests.Describe {
			out = append(out, "server-side apply (field manager "+FieldManager+") "+d)
		}
	} else {
		out = append(out, "server-side apply the Calico CRDs and the Tigera operator (no source configured)")
	}
	mp := &manifestPhase{paths: calicoFiles, files: p.files}
	lines, err := mp.DryRun(context.Background(), engine.ClusterHost())
	if err != nil {
		return nil, err
	}
	return append(out, lines...), nil
}

// objects are the CRDs and the operator, then the rendered resources.
func (p *calicoPhase) objects(ctx context.Context) ([]sourced, error) {
	m, err := p.manifests.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Calico manifests: %w", err)
	}
	docs := []doc{{"Calico CRDs", m.CRDs}, {render.OperatorManifest, m.Operator}}
	for _, path := range calicoFiles {
		f, err := p.files.get(path)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc{path, f.Data})
	}
	return objectsOf(docs...)
}

func (p *calicoPhase) Run(ctx context.Context, _ engine.Host) error {
	objs, err := p.objects(ctx)
	if err != nil {
		return err
	}
	return applyAll(ctx, p.restConfig, objs)
}

// ShouldRun implements engine.Skipper: only when Calico's CRDs, operator
// or resources differ from the cluster's (a server-side dry run), as when
// a Windows node joins a cluster whose Calico lacks the Windows settings.
func (p *calicoPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	objs, err := p.objects(ctx)
	if err != nil {
		return false, "", err
	}
	return shouldApply(ctx, p.restConfig, objs)
}

// Diff implements engine.Differ.
func (p *calicoPhase) Diff(ctx context.Context, _ engine.Host) ([]engine.Change, error) {
	objs, err := p.objects(ctx)
	if err != nil {
		return nil, err
	}
	return diffObjects(ctx, p.restConfig, objs, false)
}

var tigeraStatus = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "tigerastatuses"}

// calicoReadyPhase waits until the operator reports every component
// Available (kubectl get tigerastatus), including calico-windows when the
// cluster has Windows nodes.
type calicoReadyPhase struct {
	hosts      []engine.Host
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
}

func (p *calicoReadyPhase) required() []string {
	req := []string{"apiserver", "calico"}
	if len(engine.WindowsNodes(p.hosts)) > 0 {
		req = append(req, "calico-windows")
	}
	return req
}

func (p *calicoReadyPhase) DryRun(context.Context, engine.Host) ([]string, error) {
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

func (p *calicoReadyPhase) Run(ctx context.Context, _ engine.Host) error {
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
