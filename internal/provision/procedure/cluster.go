package procedure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// corednsRestartPhase restarts CoreDNS as `kubectl rollout restart` does
// (a restartedAt annotation on the pod template), so that its replicas,
// started while only the control plane could run them, spread over the
// workers; then it waits for the rollout as `kubectl rollout status` does,
// so that doctor sees the new replicas, not the old ones going away.
type corednsRestartPhase struct {
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
}

func (p *corednsRestartPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	return []string{
		"kubectl -n kube-system rollout restart deployment coredns (patch the pod template's kubectl.kubernetes.io/restartedAt)",
		fmt.Sprintf("kubectl -n kube-system rollout status deployment coredns --timeout=%s", p.timeout),
	}, nil
}

// ShouldRun implements engine.Skipper: the restart is for replicas that
// started while only the control plane could run them; it is needed while
// every CoreDNS pod runs on a control-plane node and a worker could take
// one.
func (p *corednsRestartPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	cs, err := clientFor(ctx, p.restConfig, "coredns-restart")
	if errors.Is(err, inventory.ErrNoCluster) {
		return true, "", nil // a cluster not built yet: it will
	}
	if err != nil {
		return false, "", err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", fmt.Errorf("listing Nodes: %w", err)
	}
	controlPlane, workers := map[string]bool{}, 0
	for _, n := range nodes.Items {
		_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
		controlPlane[n.Name] = cp
		if !cp && n.Labels["kubernetes.io/os"] == "linux" && !n.Spec.Unschedulable {
			workers++
		}
	}
	if workers == 0 {
		return false, "no schedulable Linux worker to spread CoreDNS to", nil
	}
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		return false, "", fmt.Errorf("listing the CoreDNS pods: %w", err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != "" && !controlPlane[pod.Spec.NodeName] {
			return false, "CoreDNS already runs on a worker (" + pod.Spec.NodeName + ")", nil
		}
	}
	return true, "", nil
}

func (p *corednsRestartPhase) Run(ctx context.Context, _ engine.Host) error {
	cs, err := clientFor(ctx, p.restConfig, "coredns-restart")
	if err != nil {
		return err
	}
	deployments := cs.AppsV1().Deployments("kube-system")
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	if _, err := deployments.Patch(ctx, "coredns", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("restarting kube-system/coredns: %w", err)
	}
	state, err := waitUntil(ctx, p.timeout, p.poll, func(ctx context.Context) (bool, string) {
		d, err := deployments.Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rolledOut(d)
	})
	switch {
	case err == errWaitTimedOut:
		return fmt.Errorf("kube-system/coredns restarted but not rolled out after %s: %s (kubectl -n kube-system describe deployment coredns)", p.timeout, state)
	case err != nil:
		return fmt.Errorf("waiting for kube-system/coredns: %w", err)
	}
	return nil
}

// rolledOut is `kubectl rollout status`'s test for a Deployment: the
// controller has seen the latest template, every replica is updated and
// available, and no old replica remains. Otherwise it says what is left.
func rolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, "the deployment controller has not seen the latest template yet"
	case s.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas pending termination", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < s.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas available", s.AvailableReplicas, s.UpdatedReplicas)
	}
	return true, ""
}

// AddonSource is an add-on's manifest to install.
type AddonSource struct {
	Name, Version, URL string
	// File, when set, is the manifest in a bundle (apply --bundle): read
	// instead of downloading URL.
	File string
	// Client downloads URL (nil: the default client, which refuses a
	// redirect from https to http).
	Client *http.Client
}

// AddonsFromBundle is AddonsFrom with each manifest read from the bundle
// directory dir (manifests/<the release's file name>).
func AddonsFromBundle(p *plan.Plan, dir string) []AddonSource {
	out := AddonsFrom(p)
	for i := range out {
		out[i].File = filepath.Join(dir, bundle.ManifestsDir, path.Base(out[i].URL))
	}
	return out
}

func (a AddonSource) source() string {
	if a.File != "" {
		return a.File
	}
	return a.URL
}

func (a AddonSource) load(ctx context.Context) ([]byte, error) {
	if a.File == "" {
		prefix, err := plan.AddonURLPrefix(a.Name, a.Version)
		if err != nil {
			return nil, err
		}
		return download(ctx, a.Client, a.URL, prefix)
	}
	data, err := readCapped(a.File, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("add-on manifest: %w", err)
	}
	return data, nil
}

// AddonsFrom lists the plan's add-ons (metrics-server, cert-manager when
// the spec asks for them).
func AddonsFrom(p *plan.Plan) []AddonSource {
	var out []AddonSource
	for _, a := range p.Addons {
		out = append(out, AddonSource{Name: a.Name, Version: a.Version, URL: a.ManifestURL})
	}
	return out
}

// addonsPhase server-side applies each add-on's release manifest.
type addonsPhase struct {
	addons     []AddonSource
	restConfig func(ctx context.Context) (*rest.Config, error)
}

func (p *addonsPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	if len(p.addons) == 0 {
		return []string{"no add-ons in the spec"}, nil
	}
	var out []string
	for _, a := range p.addons {
		out = append(out, fmt.Sprintf("server-side apply (field manager %s) %s %s from %s", FieldManager, a.Name, a.Version, a.source()))
	}
	return out, nil
}

// objects are every add-on's release manifest, in the spec's order.
func (p *addonsPhase) objects(ctx context.Context) ([]sourced, error) {
	var out []sourced
	var aliases manifest.AliasBudget
	for _, ad := range p.addons {
		data, err := ad.load(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ad.Name, err)
		}
		objs, err := objectsWithin(&aliases, doc{ad.source(), data})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ad.Name, err)
		}
		for _, o := range objs {
			out = append(out, sourced{o.obj, ad.Name + " " + ad.Version})
		}
	}
	return out, nil
}

func (p *addonsPhase) Run(ctx context.Context, _ engine.Host) error {
	if len(p.addons) == 0 {
		return nil
	}
	objs, err := p.objects(ctx)
	if err != nil {
		return err
	}
	return applyAll(ctx, p.restConfig, objs)
}

// ShouldRun implements engine.Skipper: only when an add-on's objects
// differ from the cluster's.
func (p *addonsPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	if len(p.addons) == 0 {
		return false, "no add-ons in the spec", nil
	}
	objs, err := p.objects(ctx)
	if err != nil {
		return false, "", err
	}
	return shouldApply(ctx, p.restConfig, objs)
}

// Diff implements engine.Differ.
func (p *addonsPhase) Diff(ctx context.Context, _ engine.Host) ([]engine.Change, error) {
	if len(p.addons) == 0 {
		return nil, nil
	}
	objs, err := p.objects(ctx)
	if err != nil {
		return nil, err
	}
	return diffObjects(ctx, p.restConfig, objs, false)
}

// readCapped reads a local file of at most max bytes.
func readCapped(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return data, nil
}
