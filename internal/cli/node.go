package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/hybridctl/hybridctl/internal/diagnose"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/suggest"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

func newNodeCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Work on the nodes themselves over SSH (diagnose)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newNodeDiagnoseCmd(s))
	return cmd
}

type diagnoseFlags struct {
	spec           specFlags
	output         string
	failOn         string
	only           []string
	collect        string
	knownHosts     string
	identities     []string
	connectTimeout time.Duration
	nodeTimeout    time.Duration
	concurrency    int
	timeout        time.Duration
}

func newNodeDiagnoseCmd(s Streams) *cobra.Command {
	f := &diagnoseFlags{}
	kf := kubeclient.NewFlags().WithoutNamespace()
	var ids []string
	for _, c := range diagnose.Checks() {
		ids = append(ids, c.ID+" "+c.Name)
	}
	cmd := &cobra.Command{
		Use:   "diagnose [NODE...] -f cluster.yaml",
		Short: "The guide's troubleshooting, run on the nodes over SSH (read-only), and the overlay cross-check",
		Long: `node diagnose connects to the spec's nodes over SSH (apply's transport: known_hosts,
the agent or --identity, sudo -n on Linux, PowerShell on Windows) and runs one
read-only gathering script on each. It changes nothing on the nodes.

The checks, in order (docs/node.md): ` + strings.Join(ids, ", ") + `.

The overlay cross-check compares, for every other node, the block, node address and
VTEP MAC this node has programmed (vxlan.calico's routes, neighbour and FDB entries on
Linux; the HNS RemoteSubnetRoute policies on Windows) with what the cluster says
(Calico's BlockAffinities and the Nodes' annotations, or flannel's, or spec.podCIDR
with plain routes). It reads the API with the standard kubectl flags; without the
API the node-side checks still run and the two that need it are skipped.

Exit codes: 0 no findings at or above --fail-on; 1 findings at or above it;
2 usage error (an unknown node or check); 3 a node could not be reached, or a
check could not run because the API or the node could not be read.`,
		Example: `  # every node of the spec
  hybridctl node diagnose -f cluster.yaml --context lab

  # one node, only the overlay, JSON for scripts
  hybridctl node diagnose k8s-lab-win-1 -f cluster.yaml --checks overlay-cross-check -o json

  # save the raw outputs (logs, HNS JSON, ip tables) for a support case; secrets redacted
  hybridctl node diagnose -f cluster.yaml --collect ./support`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNodeDiagnose(cmd, s, f, kf, args)
		},
	}
	f.spec.add(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(diagnose.Formats(), ", "))
	fl.StringVar(&f.failOn, "fail-on", "error", "exit 1 when there are findings at or above this severity: error, warning, info, or none")
	fl.StringSliceVar(&f.only, "checks", nil, "run only these checks (IDs or names, comma-separated)")
	fl.StringVar(&f.collect, "collect", "", "also save each node's raw outputs (log tails, HNS JSON, ip output) under this directory, secrets redacted (0700 directories, 0600 files)")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts file (default ~/.ssh/known_hosts)")
	fl.StringSliceVarP(&f.identities, "identity", "i", nil, "private key files (default: the SSH agent, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa)")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 15*time.Second, "timeout of one SSH connection attempt")
	fl.DurationVar(&f.nodeTimeout, "node-timeout", 2*time.Minute, "give up on a node that has not answered by then")
	fl.IntVar(&f.concurrency, "concurrency", 4, "nodes diagnosed at once")
	addTimeout(cmd, &f.timeout)
	kf.AddFlags(fl)
	return cmd
}

func runNodeDiagnose(cmd *cobra.Command, s Streams, f *diagnoseFlags, kf *kubeclient.Flags, args []string) error {
	out, err := checkFormat(f.output, diagnose.Formats())
	if err != nil {
		return err
	}
	f.output = out
	failOn, err := parseFailOn(f.failOn)
	if err != nil {
		return err
	}
	if f.concurrency < 1 {
		return Usagef("--concurrency must be at least 1")
	}
	only, err := diagnose.Resolve(f.only)
	if err != nil {
		return Usage(err)
	}
	ctx, cancel := withTimeout(cmd.Context(), f.timeout)
	defer cancel()
	res, err := f.spec.load(ctx, s.In, s.Err)
	if err != nil {
		return err
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		return Problem(fmt.Errorf("%s: %w", res.File, err))
	}
	targets, err := diagnoseTargets(p, args)
	if err != nil {
		return err
	}
	x := diagnose.Expect{API: hostfacts.API{Host: p.APIServer.Host, Port: p.APIServer.Port}, VNI: p.VXLAN.VNI, VXLANPort: p.VXLAN.Port}
	if pc, err := netip.ParsePrefix(p.PodNetwork.CIDR); err == nil {
		x.PodCIDR = pc.Masked()
	}
	o := diagnose.Options{Targets: targets, Expect: x, Only: only, Concurrency: f.concurrency, NodeTimeout: f.nodeTimeout}
	if needsCluster(only) {
		o.Cluster, o.ClusterErr = loadDiagnoseCluster(ctx, s, kf)
		// A --context the kubeconfig does not have is a typo: said before
		// any node is reached.
		var uc *kubeclient.UnknownContextError
		if errors.As(o.ClusterErr, &uc) {
			return Usage(o.ClusterErr)
		}
	}
	if f.collect != "" {
		// Opened first: a node's output too long to parse is kept there
		// as it arrives.
		if o.Collect, err = diagnose.OpenCollect(f.collect); err != nil {
			return Incomplete(err)
		}
		defer o.Collect.Close()
	}
	pool := transport.NewPool(procedure.SSHConfigs(p, sshOptions(f.knownHosts, false, f.identities, f.connectTimeout).Config())...)
	defer func() { _ = pool.Close() }()
	o.Dial = func(ctx context.Context, node string) (hostfacts.Conn, error) { return pool.Get(ctx, node) }
	r := diagnose.Run(ctx, o)
	switch f.output {
	case "junit":
		err = diagnose.WriteJUnit(s.Out, r)
	case "json":
		err = diagnose.WriteJSON(s.Out, r)
	default:
		err = diagnose.WriteTable(s.Out, r)
	}
	if err != nil {
		return Incomplete(fmt.Errorf("write report: %w", err))
	}
	if f.collect != "" {
		if err := diagnose.CollectTo(ctx, o.Collect, r); err != nil {
			return Incomplete(err)
		}
		fmt.Fprintf(s.Err, "raw outputs saved under %s (secrets redacted)\n", termtext.Line(f.collect))
	}
	if ctx.Err() != nil {
		return Incomplete(fmt.Errorf("node diagnose did not finish within %s (--timeout): %w", f.timeout, ctx.Err()))
	}
	if r.Incomplete() {
		var why []string
		for _, n := range r.Unreached() {
			why = append(why, n.Name+" not reached")
		}
		for _, sk := range r.Skipped {
			if sk.Incomplete {
				why = append(why, sk.Check+" on "+sk.Node+" could not run")
			}
		}
		return &ExitError{Code: ExitIncomplete, Err: fmt.Errorf("the diagnosis is incomplete: %s", strings.Join(why, "; ")), Silent: f.output == "json"}
	}
	n := 0
	for _, fd := range r.Findings {
		if failOn.Fails(fd.Severity) {
			n++
		}
	}
	if n > 0 {
		return &ExitError{Code: ExitProblem, Err: fmt.Errorf("%d findings at or above %s", n, f.failOn), Silent: true}
	}
	return nil
}

// diagnoseTargets picks the nodes named on the command line (all when
// none), in the spec's order; an unknown name is a usage error.
func diagnoseTargets(p *plan.Plan, args []string) ([]diagnose.Target, error) {
	var names []string
	for _, n := range p.Nodes {
		names = append(names, n.Name)
	}
	want := map[string]bool{}
	for _, a := range args {
		found := false
		for _, n := range names {
			if n == a {
				found = true
			}
		}
		if !found {
			hint := ""
			if c, ok := suggest.Closest(a, names); ok {
				hint = fmt.Sprintf(" (did you mean %q?)", c)
			}
			return nil, Usagef("node %q is not in the spec%s; its nodes: %s", a, hint, strings.Join(names, ", "))
		}
		want[a] = true
	}
	var out []diagnose.Target
	for _, n := range p.Nodes {
		if len(want) > 0 && !want[n.Name] {
			continue
		}
		t := diagnose.Target{Name: n.Name, OS: engine.Linux}
		if n.IsWindows() {
			t.OS = engine.Windows
		}
		out = append(out, t)
	}
	return out, nil
}

func needsCluster(only map[string]bool) bool {
	for _, c := range diagnose.Checks() {
		if c.NeedsCluster && (len(only) == 0 || only[c.ID]) {
			return true
		}
	}
	return false
}

// loadDiagnoseCluster reads the overlay's view from the API. Its failure is
// not fatal: the node-side checks still run.
func loadDiagnoseCluster(ctx context.Context, s Streams, kf *kubeclient.Flags) (*diagnose.Cluster, error) {
	cfg, err := kf.RESTConfig(s.Err)
	if err != nil {
		return nil, err
	}
	kc, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return diagnose.LoadCluster(ctx, kc, dc)
}
