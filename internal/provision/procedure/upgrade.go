package procedure

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// UpgradeOptions are what Upgrade needs: apply's options (the plan at the
// version to upgrade to, SSH, the kubeconfig and context, DryRun, Offline,
// Skip, Only, Concurrency, BundleDir, ManifestsDir, CalicoTimeout,
// Reporter, Redactor; StatePath is not used: upgrade reads its progress
// from the nodes) and the upgrade's own.
type UpgradeOptions struct {
	Options
	// MaxUnavailable is how many workers are upgraded at once (each
	// cordoned and drained); default 1.
	MaxUnavailable int
	// AllowNotReady skips the nodes that are NotReady instead of refusing
	// the upgrade.
	AllowNotReady bool
	// DrainTimeout bounds draining one node (default 5 minutes);
	// ReadyTimeout the wait for a node to be Ready at the new version
	// (default 10 minutes); AvailableTimeout the wait, after a node is
	// upgraded and uncordoned, until what its drain evicted is available
	// again (default 10 minutes).
	DrainTimeout, ReadyTimeout, AvailableTimeout time.Duration
	// SkipImageCheck leaves out the look-up of kube-proxy-windows's new
	// image in its registry.
	SkipImageCheck bool
}

func hasWindows(p *plan.Plan) bool {
	for _, n := range p.Nodes {
		if n.IsWindows() {
			return true
		}
	}
	return false
}

// ErrUpgradeRefused matches (errors.Is) Upgrade's error when the cluster
// cannot be upgraded to the plan's version as it is: a downgrade, a jump of
// more than one minor, a kubelet that would leave the version-skew policy,
// a NotReady node. Nothing was touched then.
var ErrUpgradeRefused = errors.New("the upgrade is refused")

// maxKubeletSkew is how many minors a kubelet may be older than the API
// server (the version-skew policy).
const maxKubeletSkew = 3

// UpgradeAnnotation marks a node hybridctl upgrade cordoned, so that a run
// resumed after an interruption finishes it and uncordons it.
const UpgradeAnnotation = "hybridctl.dev/upgrade-cordoned"

// CheckUpgrade decides whether a cluster whose API server runs server and
// whose Nodes are nodes may be upgraded to target, before anything is
// touched: no downgrade, at most one minor up (kubeadm's rule), every
// kubelet within the version-skew policy of the new API server (none
// newer, none more than three minors older), every Node Ready unless
// allowNotReady, which returns the NotReady ones to skip. The error wraps
// ErrUpgradeRefused and says what to do.
func CheckUpgrade(server, target string, nodes []corev1.Node, allowNotReady bool) (skip []string, err error) {
	to, err := utilversion.ParseSemantic(target)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.kubernetesVersion %q: %w", ErrUpgradeRefused, target, err)
	}
	from, err := utilversion.ParseSemantic(server)
	if err != nil {
		return nil, fmt.Errorf("%w: the API server reports version %q: %w", ErrUpgradeRefused, server, err)
	}
	var errs []error
	switch {
	case to.LessThan(from):
		errs = append(errs, fmt.Errorf("the API server runs %s and spec.kubernetesVersion is %s: a downgrade; kubeadm does not downgrade a control plane (restore the etcd snapshot and manifests kubeadm kept in /etc/kubernetes/tmp instead)", server, target))
	case to.Major() != from.Major() || to.Minor() > from.Minor()+1:
		errs = append(errs, fmt.Errorf("the API server runs %s and spec.kubernetesVersion is %s: more than one minor at once; upgrade to v%d.%d.x first, then again (kubeadm upgrades one minor at a time)", server, target, from.Major(), from.Minor()+1))
	}
	for _, n := range nodes {
		kv := n.Status.NodeInfo.KubeletVersion
		v, perr := utilversion.ParseGeneric(kv)
		switch {
		case perr != nil:
			errs = append(errs, fmt.Errorf("node %s reports kubelet version %q, which is not a version", n.Name, kv))
		case v.Major() == to.Major() && v.Minor() > to.Minor():
			errs = append(errs, fmt.Errorf("node %s runs kubelet %s, newer than %s: a kubelet must not be newer than the API server", n.Name, kv, target))
		case v.Major() != to.Major() || v.Minor()+maxKubeletSkew < to.Minor():
			errs = append(errs, fmt.Errorf("node %s runs kubelet %s, more than %d minors older than %s once the API server is upgraded: upgrade that node first (in steps), or reset it and join it again", n.Name, kv, maxKubeletSkew, target))
		}
		if !nodeReady(&n) {
			if allowNotReady {
				skip = append(skip, n.Name)
				continue
			}
			errs = append(errs, fmt.Errorf("node %s is NotReady: fix it first, or pass --allow-not-ready to leave it out of the upgrade (it keeps %s)", n.Name, kv))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrUpgradeRefused, err)
	}
	sort.Strings(skip)
	return skip, nil
}

// CheckContainerd reads each Node's container runtime before an upgrade to
// target, against the spec's containerd (want). A Windows worker's step
// installs want when the node runs another version, and so does a Linux
// node's prepare.sh with packages.source bundle: those are notes. With
// packages.source upstream a Linux node keeps its distribution's
// containerd package; one the new kubelet does not support (below
// plan.ContainerdRequired) refuses the upgrade (wrapping
// ErrUpgradeRefused). Nodes of another runtime, or whose version cannot be
// read, are left to doctor.
func CheckContainerd(target, want string, bundle bool, nodes []corev1.Node) (notes []string, err error) {
	least := plan.ContainerdRequired(target)
	want = strings.TrimPrefix(want, "v")
	var errs []error
	for _, n := range nodes {
		got, ok := strings.CutPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://")
		if !ok {
			continue
		}
		v, perr := utilversion.ParseGeneric(got)
		if perr != nil {
			continue
		}
		windows := n.Status.NodeInfo.OperatingSystem == "windows" || n.Labels[corev1.LabelOSStable] == "windows"
		replaced := want != "" && (windows || bundle)
		switch {
		case replaced && strings.TrimPrefix(got, "v") != want:
			notes = append(notes, fmt.Sprintf("node %s runs containerd %s: its step installs containerd %s (spec.containerd.version) while it is drained", n.Name, got, want))
		case !replaced && least != "" && v.LessThan(utilversion.MustParseGeneric(least)):
			errs = append(errs, fmt.Errorf("node %s runs containerd %s, and the kubelet of %s needs containerd %s or newer: upgrade the distribution's containerd package on it first (with packages.source upstream, upgrade keeps it)", n.Name, got, target, least))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrUpgradeRefused, err)
	}
	return notes, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Upgrade upgrades the live cluster to the plan's Kubernetes version as
// `hybridctl upgrade` does. Before anything changes it reads the API
// server's version and the Nodes and refuses what CheckUpgrade refuses
// (wrapping ErrUpgradeRefused), verifies the bundle (with BundleDir: the
// new version's files), and reads the hosts; then it runs UpgradeProcedure:
// the control planes one at a time, the first with kubeadm upgrade apply,
// then the workers MaxUnavailable at a time, each cordoned, drained,
// upgraded, Ready at the new version and uncordoned. A node already at the
// version and schedulable is skipped, so a second Upgrade changes nothing
// and an interrupted one resumes from what the nodes are.
func Upgrade(ctx context.Context, o UpgradeOptions) (engine.Summary, error) {
	if o.MaxUnavailable < 0 {
		return engine.Summary{}, &optionError{"MaxUnavailable", fmt.Sprintf("%d is negative", o.MaxUnavailable)}
	}
	if len(o.Reconcile) > 0 {
		return engine.Summary{}, &optionError{"Reconcile", "is apply's, not upgrade's"}
	}
	if err := o.validateFor(UpgradeProcedure()); err != nil {
		return engine.Summary{}, err
	}
	// Progress is read from the nodes (versions, cordon marks) and the
	// cluster (server-side dry runs), never from a state file: apply's
	// records (bundle-upload done at the old version) would skip steps the
	// new version needs.
	o.StatePath = ""
	up := UpgradeDeps{To: o.Plan.KubernetesVersion, MaxUnavailable: o.MaxUnavailable, DrainTimeout: o.DrainTimeout, ReadyTimeout: o.ReadyTimeout, AvailableTimeout: o.AvailableTimeout,
		Bundle: o.Plan.PackagesSource == spec.SourceBundle, AptRepo: o.Plan.KubernetesAptRepo, Containerd: o.Plan.Versions.Containerd}
	var warnings []string
	if !o.Offline {
		// The version gate reads the API server and the Nodes only: no
		// host is contacted before it passes.
		target := &KubeconfigTarget{Store: &kubeconfig.Store{Path: o.Kubeconfig}, Name: o.Plan.Cluster, Context: o.Context}
		cfg, err := RESTConfigFrom(target)(ctx)
		if err != nil {
			return engine.Summary{}, fmt.Errorf("%w: %w", ErrClusterUnreadable, err)
		}
		cs, err := kubeclient.NewForConfig(cfg)
		if err != nil {
			return engine.Summary{}, fmt.Errorf("%w: %w", ErrClusterUnreadable, err)
		}
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			return engine.Summary{}, fmt.Errorf("%w: the API server's version: %w", ErrClusterUnreadable, err)
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return engine.Summary{}, fmt.Errorf("%w: the Nodes: %w", ErrClusterUnreadable, err)
		}
		if up.SkipNodes, err = CheckUpgrade(v.GitVersion, o.Plan.KubernetesVersion, nodes.Items, o.AllowNotReady); err != nil {
			return engine.Summary{}, err
		}
		for _, n := range up.SkipNodes {
			warnings = append(warnings, fmt.Sprintf("node %s is NotReady: left out of the upgrade (--allow-not-ready)", n))
		}
		runtimes, err := CheckContainerd(o.Plan.KubernetesVersion, o.Plan.Versions.Containerd, up.Bundle, nodes.Items)
		if err != nil {
			return engine.Summary{}, err
		}
		warnings = append(warnings, runtimes...)
		if hasWindows(o.Plan) && o.Plan.KubeProxy.WindowsImage != "" && !o.SkipImageCheck {
			reachable, err := checkImageExists(ctx, o.Plan.KubeProxy.WindowsImage)
			if err != nil {
				return engine.Summary{}, err
			}
			if !reachable {
				warnings = append(warnings, fmt.Sprintf("could not look %s up in its registry from here: the Windows nodes must be able to pull it", o.Plan.KubeProxy.WindowsImage))
			}
		}
	}
	cfg, err := render.UpgradeConfiguration(o.Plan)
	if err != nil {
		return engine.Summary{}, planError{err}
	}
	r, err := setup(ctx, &o.Options, modeUpgrade, func(d Deps) ([]engine.Phase, error) {
		d.Upgrade = up
		d.Files[upgradeConfigPath] = render.File{Path: upgradeConfigPath, Data: cfg, Mode: 0o644}
		return UpgradePhases(d)
	})
	if err != nil {
		return engine.Summary{}, err
	}
	defer r.close()
	r.warnings = warnings
	return r.run(ctx, &o.Options)
}

// UpgradeDeps are what the upgrade phases need beyond Deps.
type UpgradeDeps struct {
	// To is the Kubernetes version upgraded to.
	To string
	// MaxUnavailable caps the workers upgraded at once (default 1).
	MaxUnavailable int
	// SkipNodes are left out (NotReady, with --allow-not-ready).
	SkipNodes []string
	// DrainTimeout and ReadyTimeout bound draining a node and its wait to
	// be Ready at the new version; AvailableTimeout the wait until what
	// its drain evicted is available again.
	DrainTimeout, ReadyTimeout, AvailableTimeout time.Duration
	// Containerd is the spec's containerd version: a Windows worker's step
	// installs it when the node runs another (a Linux node's prepare.sh
	// does so in bundle mode); "" leaves containerd as it is.
	Containerd string
	// Bundle: the binaries come from the bundle on the node (else the
	// Debian repository AptRepo, or dl.k8s.io on Windows).
	Bundle  bool
	AptRepo string
	// gate is shared by the node phases of one run (UpgradePhases makes
	// it): closed once what a drain evicted did not come back in time.
	gate *drainGate
}

// upgradeDefs is the upgrade procedure in order: the new version's files
// to every node, the control planes one at a time, the Linux and Windows
// workers in batches, then what follows the API servers: kube-proxy for
// Windows, Calico when its version changed.
func upgradeDefs() []def[*applyBinding] {
	node := func(name string, targets func([]engine.Host) []engine.Host, runsOn string, after []string, does string, role upgradeRole) def[*applyBinding] {
		return def[*applyBinding]{engine.Descriptor{Name: name, Targets: targets, RunsOn: runsOn, After: after, Does: does},
			func(b *applyBinding) (engine.Runner, error) { return b.upgrade(role) }}
	}
	return []def[*applyBinding]{
		{engine.Descriptor{Name: "bundle-upload", RunsOn: "every node, with a bundle",
			Does: "packages.source bundle (upgrade --bundle DIR, the new version's bundle): send each node the files that differ from what it has, checked by sha256 on the node"},
			func(b *applyBinding) (engine.Runner, error) { return b.bundleUpload() }},
		node("upgrade-control-planes", engine.ControlPlanes, "control planes, one at a time", []string{"bundle-upload"},
			"the new kubeadm; kubeadm upgrade apply on the first control plane (the API server, etcd, CoreDNS, kube-proxy), kubeadm upgrade node on the others; then drain, the new kubelet and kubectl (prepare.sh of the new version), restart, Ready at the new version, uncordon; what the drain evicted available again before the next node",
			roleControlPlane),
		node("upgrade-linux-workers", engine.LinuxWorkers, "Linux workers, --max-unavailable at a time", []string{"upgrade-control-planes"},
			"the new kubeadm and kubeadm upgrade node; drain (PodDisruptionBudgets respected); the new kubelet and kubectl; restart; Ready at the new version; uncordon; what the drain evicted available again before the next drain",
			roleLinuxWorker),
		{engine.Descriptor{Name: "kube-proxy-windows", Targets: engine.ClusterWide, After: []string{"upgrade-control-planes"},
			Does: "the kube-proxy-windows DaemonSet at the new version's image, once every API server runs it (a cluster with Windows nodes); it updates OnDelete, so no pod restarts until its node's window"},
			func(b *applyBinding) (engine.Runner, error) {
				return b.manifests("kube-proxy-windows", "cluster/windows/kube-proxy-windows")
			}},
		node("upgrade-windows-workers", engine.WindowsNodes, "Windows workers, --max-unavailable at a time", []string{"upgrade-control-planes", "kube-proxy-windows"},
			"drain; the new kubeadm.exe and kubeadm upgrade node; the kubelet service stopped, the new kubelet.exe in place (the old one kept as kubelet.exe.old), flags the new version removed taken out of StartKubelet.ps1; the spec's containerd when the node runs another (containerd and its shims stopped, config.toml kept); the kubelet started; Ready at the new version; the node's kube-proxy-windows pod restarted at the new image, Ready; uncordon; what the drain evicted available again before the next drain",
			roleWindowsWorker),
		{engine.Descriptor{Name: "kube-proxy-win-pods", Targets: engine.ClusterWide, After: []string{"upgrade-windows-workers"},
			Does: kubeProxyWindowsRolloutDoes},
			func(b *applyBinding) (engine.Runner, error) {
				return b.kubeProxyWindowsRollout(b.d.Upgrade.ReadyTimeout)
			}},
		{engine.Descriptor{Name: "calico", Targets: engine.ClusterWide, After: []string{"upgrade-control-planes"},
			Does: "Calico's CRDs, the Tigera operator and its resources, when spec.calico.version or their settings changed (server-side dry run first)"},
			func(b *applyBinding) (engine.Runner, error) { return b.calico() }},
		{engine.Descriptor{Name: "calico-ready", Targets: engine.ClusterWide, After: []string{"calico"}, ReadOnly: true,
			Does: "wait until every TigeraStatus is Available"},
			func(b *applyBinding) (engine.Runner, error) { return b.calicoReady() }},
	}
}

// UpgradeProcedure describes the upgrade procedure's phases, in order.
func UpgradeProcedure() []engine.Descriptor { return describe(upgradeDefs()) }

// UpgradePhases builds the upgrade procedure's phases bound to d.
func UpgradePhases(d Deps) ([]engine.Phase, error) {
	d.Upgrade.gate = &drainGate{}
	return bind(upgradeDefs(), &applyBinding{d: d.withDefaults()})
}

type upgradeRole int

const (
	roleControlPlane upgradeRole = iota
	roleLinuxWorker
	roleWindowsWorker
)

func (b *applyBinding) upgrade(role upgradeRole) (engine.Runner, error) {
	d := b.d
	if err := needs(d.ssh()); err != nil {
		return nil, err
	}
	if err := needs(d.api()); err != nil {
		return nil, err
	}
	if err := needs(d.files()); err != nil {
		return nil, err
	}
	if err := needs("the version upgraded to (Deps.Upgrade.To)", d.Upgrade.To != ""); err != nil {
		return nil, err
	}
	limit := 1
	if role != roleControlPlane && d.Upgrade.MaxUnavailable > 0 {
		limit = d.Upgrade.MaxUnavailable
	}
	return &upgradeNodePhase{role: role, up: d.Upgrade, limit: limit, files: d.Files, connect: d.hostConn, restConfig: d.RESTConfig,
		drainTimeout: d.Upgrade.DrainTimeout, readyTimeout: d.Upgrade.ReadyTimeout, availableTimeout: d.Upgrade.AvailableTimeout, poll: 2 * time.Second}, nil
}
