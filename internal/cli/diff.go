package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

func newDiffCmd(s Streams) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "diff -f cluster.yaml",
		Short: "Show what apply would change on the cluster and its hosts; change nothing",
		Long: `diff compares the spec with the live cluster and its hosts and lists what
apply, with the same flags, would change, without changing anything
(read-only over SSH and through the API):

  - the spec's nodes that are not in the cluster, with the steps apply
    would run on them (prepare, join);
  - the cluster's nodes that are not in the spec (apply leaves them alone);
  - cluster objects hybridctl owns (Calico's resources, the
    services-endpoint ConfigMap, RuntimeClasses, kube-proxy-windows, check
    workloads, add-ons) that are missing or differ, with a unified diff of
    the fields hybridctl sets, from a server-side apply dry run with
    hybridctl's field manager (kubectl diff --server-side's method);
  - how each member's host differs from the spec (versions, containerd's
    and the kubelet's settings, kernel settings): apply never changes a
    member; apply --reconcile NODE does, one node at a time with a drain.

A spec node whose name or address belongs to another cluster node is an
error naming both. A node that cannot be reached is reported and the
others are compared.

Exit codes, as kubectl diff: 0 nothing to change, 1 changes (or a
conflict), 2 usage error, 3 could not complete (the cluster or every node
unreachable; or a node unreachable and nothing else to change).`,
		Example: `  # what apply would do to the cluster kubeadm built by hand (its context in ~/.kube/config)
  hybridctl diff -f cluster.yaml --context kubernetes-admin@kubernetes

  # only the cluster objects, as JSON
  hybridctl diff -f cluster.yaml --only calico,kube-proxy-windows,runtimeclasses -o json | jq '.changes[]'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDiff(cmd, s, f) },
	}
	f.add(cmd)
	cmd.Flags().StringSliceVar(&f.ignorePreflight, "ignore-preflight-errors", nil, "accepted for the same command line as apply (diff runs no preflight)")
	cmd.Flags().StringVar(&f.bundleDir, "bundle", "", "the bundle directory, as for apply (its manifests are compared)")
	cmd.Flags().StringVar(&f.manifestsDir, "manifests-dir", "", "directory with Calico's CRD and operator manifests, as for apply")
	_ = cmd.Flags().MarkHidden("dry-run")
	return cmd
}

func runDiff(cmd *cobra.Command, s Streams, f *applyFlags) error {
	ctx := cmd.Context()
	if f.dryRun {
		return Usagef("diff changes nothing: --dry-run is apply's")
	}
	f.dryRun = true // for the flags' checks: --offline is diff's too
	sess, err := f.open(ctx, s)
	if err != nil {
		return err
	}
	target, err := f.kubeconfigTarget(ctx, sess.plan.Cluster)
	if err != nil {
		return err
	}
	if err := checkBundleFlag(sess.plan, f.bundleDir, "diff", "the bundle directory, as apply does"); err != nil {
		return err
	}
	res, err := procedure.Diff(ctx, procedure.Options{Plan: sess.plan, SSH: sess.ssh, Kubeconfig: target.Store.Path, Context: f.context,
		StatePath: sess.state, DryRun: true, Offline: f.offline, Skip: f.skip, Only: f.only, Concurrency: f.concurrency,
		IgnorePreflight: f.ignorePreflight, ManifestsDir: f.manifestsDir, BundleDir: f.bundleDir, Redactor: sess.redactor})
	switch {
	case err == nil:
	case errors.Is(err, procedure.ErrInvalidOption), errors.Is(err, engine.ErrUnknownPhase):
		return Usage(err)
	case errors.Is(err, procedure.ErrClusterDiffers), errors.Is(err, procedure.ErrPlanNotUsable),
		errors.Is(err, procedure.ErrBundleIncomplete):
		return Problem(err)
	case errors.Is(err, procedure.ErrNothingCompared) && res != nil:
		if werr := writeDiff(s.Out, f.output, res); werr != nil {
			return Incomplete(werr)
		}
		return Incomplete(err)
	default:
		return Incomplete(err)
	}
	if err := writeDiff(s.Out, f.output, res); err != nil {
		return Incomplete(err)
	}
	switch {
	case !res.Empty():
		return &ExitError{Code: ExitProblem, Silent: true}
	case len(res.Unreachable) > 0:
		return Incomplete(fmt.Errorf("%d node(s) could not be compared: nothing else to change, but the comparison is incomplete", len(res.Unreachable)))
	}
	return nil
}

// diffJSON is diff -o json's shape.
type diffJSON struct {
	*procedure.DiffResult
	Summary diffSummary `json:"summary"`
}

type diffSummary struct {
	Changes     int `json:"changes"`
	Drift       int `json:"drift"`
	Extra       int `json:"extra"`
	Unreachable int `json:"unreachable"`
}

func writeDiff(w io.Writer, format string, r *procedure.DiffResult) error {
	sum := diffSummary{Changes: len(r.Changes), Drift: len(r.Drift), Extra: len(r.Extra), Unreachable: len(r.Unreachable)}
	if format == "json" {
		out := diffJSON{DiffResult: r, Summary: sum}
		for _, l := range []*[]engine.Change{&r.Changes, &r.Drift} {
			if *l == nil {
				*l = []engine.Change{}
			}
		}
		if r.Extra == nil {
			r.Extra = []inventory.Extra{}
		}
		if r.Unreachable == nil {
			r.Unreachable = []procedure.Unreachable{}
		}
		return termtext.EncodeJSON(w, out)
	}
	var b strings.Builder
	byHost := map[string][]engine.Change{}
	for _, c := range append(append([]engine.Change{}, r.Changes...), r.Drift...) {
		byHost[c.Host] = append(byHost[c.Host], c)
	}
	down := map[string][]procedure.Unreachable{}
	for _, u := range r.Unreachable {
		down[u.Host] = append(down[u.Host], u)
	}
	for _, n := range r.Nodes {
		changes := byHost[n.Name]
		if len(changes) == 0 && len(down[n.Name]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "node %s (%s: %s)\n", termtext.Name(n.Name), n.Status, termtext.Line(n.Reason))
		writeChanges(&b, changes)
		for _, u := range down[n.Name] {
			where := ""
			if u.Phase != "" {
				where = " (" + u.Phase + ")"
			}
			fmt.Fprintf(&b, "  ! not compared%s: %s\n", where, termtext.Line(u.Error))
		}
	}
	for _, e := range r.Extra {
		fmt.Fprintf(&b, "node %s (in the cluster, InternalIP %s, not in the spec: apply leaves it alone)\n", termtext.Name(e.Name), termtext.Name(e.InternalIP))
	}
	if cl := byHost[engine.ClusterHostName]; len(cl) > 0 || len(down[engine.ClusterHostName]) > 0 {
		b.WriteString("cluster\n")
		writeChanges(&b, cl)
		for _, u := range down[engine.ClusterHostName] {
			fmt.Fprintf(&b, "  ! not compared (%s): %s\n", u.Phase, termtext.Line(u.Error))
		}
	}
	if r.Empty() && len(r.Unreachable) == 0 {
		b.WriteString("no changes: apply would change nothing, and every member is as the spec wants\n")
	} else {
		fmt.Fprintf(&b, "%d change(s), %d member setting(s) differing, %d node(s) not in the spec, %d not compared\n",
			sum.Changes, sum.Drift, sum.Extra, sum.Unreachable)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeChanges(b *strings.Builder, changes []engine.Change) {
	for _, c := range changes {
		mark := map[string]string{engine.ActionCreate: "+", engine.ActionUpdate: "~", engine.ActionRun: "+",
			engine.ActionDrift: "~", procedure.ActionUpgrade: "^"}[c.Action]
		line := c.Summary
		if c.Action == engine.ActionRun {
			line = c.Phase + ": " + c.Summary
		}
		fmt.Fprintf(b, "  %s %s\n", mark, termtext.Line(line))
		for _, l := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			if l != "" {
				fmt.Fprintf(b, "      %s\n", termtext.Line(l))
			}
		}
	}
}
