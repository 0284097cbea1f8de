package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
)

type upgradeFlags struct {
	provisionFlags
	bundleDir      string
	manifestsDir   string
	calicoTimeout  time.Duration
	maxUnavailable int
	allowNotReady  bool
	drainTimeout   time.Duration
	readyTimeout   time.Duration
	availTimeout   time.Duration
	yes            bool
}

func newUpgradeCmd(s Streams) *cobra.Command {
	f := &upgradeFlags{}
	cmd := &cobra.Command{
		Use:   "upgrade -f cluster.yaml --yes",
		Short: "Upgrade the cluster to the spec's Kubernetes version, Windows workers included",
		Long: `upgrade moves the live cluster to spec.kubernetesVersion, one minor at a
time, as kubeadm's upgrade procedure does, and does the Windows workers' part
kubeadm leaves to you.

Before anything changes it reads the API server's version and the Nodes, and
refuses (exit 1, nothing touched) a downgrade, a jump of more than one minor,
a kubelet that would end up outside the version-skew policy, and a NotReady
node (--allow-not-ready leaves such nodes out); with a bundle, the new
version's files are verified before any host is contacted.

Then, in order (--only and --skip-phases take these names):

` + engine.HelpText(procedure.UpgradeProcedure()) + `
Each node counts against --max-unavailable from its drain until what the
drain evicted is available again: the Deployments, StatefulSets and
ReplicaSets whose pods it evicted back at their available replicas of before
the drain, and every PodDisruptionBudget that was healthy then at
currentHealthy >= desiredHealthy (--available-timeout); only then is the
next node drained. If that does not happen in time, the node stays upgraded
and uncordoned, the step fails naming what is still unavailable, and no
other node is drained in this run.

A node is skipped when its kubelet already runs the version and it is
schedulable: a second upgrade changes nothing, and an interrupted one
resumes from what the nodes are (a node the upgrade cordoned carries the
annotation ` + procedure.UpgradeAnnotation + ` until it is finished).
See docs/upgrade.md.`,
		Example: `  # the steps, node by node, without a cluster
  hybridctl upgrade -f cluster.yaml --dry-run --offline

  # upgrade, two workers at a time
  hybridctl upgrade -f cluster.yaml --max-unavailable 2 --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUpgrade(cmd, s, f) },
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.bundleDir, "bundle", "", "the new version's bundle directory; required with spec.packages.source bundle, verified before any host is touched")
	cmd.Flags().StringVar(&f.manifestsDir, "manifests-dir", "", "directory with Calico's CRD and operator manifests (air-gapped sites)")
	cmd.Flags().DurationVar(&f.calicoTimeout, "calico-timeout", 15*time.Minute, "how long to wait for Calico to be ready")
	cmd.Flags().IntVar(&f.maxUnavailable, "max-unavailable", 1, "workers upgraded (cordoned and drained) at once; control planes always go one at a time")
	cmd.Flags().BoolVar(&f.allowNotReady, "allow-not-ready", false, "leave NotReady nodes out of the upgrade instead of refusing it")
	cmd.Flags().DurationVar(&f.drainTimeout, "drain-timeout", 5*time.Minute, "how long draining one node may take")
	cmd.Flags().DurationVar(&f.readyTimeout, "ready-timeout", 10*time.Minute, "how long a node may take to be Ready at the new version, and then its static pods (a control plane) or its new kube-proxy-windows pod (Windows)")
	cmd.Flags().DurationVar(&f.availTimeout, "available-timeout", 10*time.Minute, "how long to wait, once a node is upgraded and uncordoned, until what its drain evicted is available again (Deployments, StatefulSets and ReplicaSets at their available replicas of before the drain, PodDisruptionBudgets healthy) before the next node is drained; on timeout no other node is drained")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "confirm: the cluster is upgraded, node by node, with drains")
	// upgrade reads its progress from the nodes; --state is accepted for
	// the same command line as apply and not used.
	_ = cmd.Flags().MarkHidden("state")
	return cmd
}

func runUpgrade(cmd *cobra.Command, s Streams, f *upgradeFlags) error {
	ctx := cmd.Context()
	if !f.yes && !f.dryRun {
		return Usagef("upgrade drains and restarts every node in turn: pass --yes to confirm, or --dry-run to see the steps")
	}
	if f.maxUnavailable < 1 {
		return Usagef("--max-unavailable must be at least 1")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--drain-timeout", f.drainTimeout}, {"--ready-timeout", f.readyTimeout}, {"--available-timeout", f.availTimeout}} {
		if d.v <= 0 {
			return Usagef("%s must be positive, got %s", d.flag, d.v)
		}
	}
	sess, err := f.open(ctx, s)
	if err != nil {
		return err
	}
	target, err := f.kubeconfigTarget(ctx, sess.plan.Cluster)
	if err != nil {
		return err
	}
	if err := checkBundleFlag(sess.plan, f.bundleDir, "upgrade", "the new version's bundle"); err != nil {
		return err
	}
	_, err = procedure.Upgrade(ctx, procedure.UpgradeOptions{
		Options: procedure.Options{Plan: sess.plan, SSH: sess.ssh, Kubeconfig: target.Store.Path, Context: f.context, StatePath: sess.state,
			DryRun: f.dryRun, Offline: f.offline, Skip: f.skip, Only: f.only, Concurrency: f.concurrency,
			CalicoTimeout: f.calicoTimeout, ManifestsDir: f.manifestsDir, BundleDir: f.bundleDir, Redactor: sess.redactor,
			Reporter: func(phases []engine.Descriptor) engine.Reporter {
				return sess.reporterFor(&f.provisionFlags, s.Out, phases, "upgraded")
			}},
		MaxUnavailable: f.maxUnavailable, AllowNotReady: f.allowNotReady, DrainTimeout: f.drainTimeout, ReadyTimeout: f.readyTimeout, AvailableTimeout: f.availTimeout,
	})
	switch {
	case errors.Is(err, procedure.ErrInvalidOption):
		return Usage(err)
	case errors.Is(err, procedure.ErrUpgradeRefused), errors.Is(err, procedure.ErrPlanNotUsable), errors.Is(err, procedure.ErrClusterDiffers):
		return Problem(err)
	case errors.Is(err, procedure.ErrClusterUnreadable):
		return Incomplete(err)
	case errors.Is(err, procedure.ErrBundleIncomplete) && len(engine.PhaseErrors(err)) == 0:
		return Problem(err)
	}
	return f.quiet(exitFor(err))
}
