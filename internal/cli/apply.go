package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/termcolor"
)

// provisionFlags are the flags apply and reset share.
type provisionFlags struct {
	spec              specFlags
	dryRun, offline   bool
	skip, only        []string
	acceptNewHostKeys bool
	output            string
	concurrency       int
	statePath         string
	knownHosts        string
	identities        []string
	connectTimeout    time.Duration
	kubeconfig        string
	context           string
}

func (f *provisionFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.spec.add(cmd)
	fl.BoolVar(&f.dryRun, "dry-run", false, "print, host by host, what would be done; change nothing (may connect to read state)")
	fl.BoolVar(&f.offline, "offline", false, "with --dry-run: connect to nothing, show the procedure as for fresh machines")
	fl.StringSliceVar(&f.skip, "skip-phases", nil, "phases not to run (comma-separated)")
	fl.StringSliceVar(&f.only, "only", nil, "run only these phases (comma-separated)")
	fl.BoolVar(&f.acceptNewHostKeys, "accept-new-host-keys", false, "add the keys of hosts not yet in known_hosts (a changed key is always refused)")
	fl.StringVarP(&f.output, "output", "o", FormatTable, "output format: table (progress for people) or json (one event per line)")
	fl.IntVar(&f.concurrency, "concurrency", engine.DefaultConcurrency, "steps running at once")
	fl.StringVar(&f.statePath, "state", "", "state file recording finished steps (default .hybridctl/CLUSTER.state.json beside the spec)")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts file (default ~/.ssh/known_hosts)")
	fl.StringSliceVarP(&f.identities, "identity", "i", nil, "private key files (default: the SSH agent, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa)")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 15*time.Second, "timeout of one SSH connection attempt")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig holding the cluster's context (default $KUBECONFIG or ~/.kube/config); apply imports the cluster's admin credentials into it")
	fl.StringVar(&f.context, "context", "", "the cluster's context in --kubeconfig, for a cluster hybridctl did not import (default: the context apply imported, named after the cluster)")
}

// kubeconfigTarget resolves --kubeconfig and checks --context: a context
// that is not in the file is a usage error naming the ones that are.
func (f *provisionFlags) kubeconfigTarget(ctx context.Context, cluster string) (*procedure.KubeconfigTarget, error) {
	kc, err := kubeconfig.TargetPath(f.kubeconfig, os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, Usage(err)
	}
	t := &procedure.KubeconfigTarget{Store: &kubeconfig.Store{Path: kc}, Name: cluster, Context: f.context}
	if f.context == "" {
		return t, nil
	}
	cfg, err := t.Store.Read(ctx)
	if err != nil {
		return nil, Incomplete(err)
	}
	if _, ok := cfg.Contexts[f.context]; ok {
		return t, nil
	}
	var names []string
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, Usage(&kubeclient.UnknownContextError{Context: f.context, Contexts: names, Files: []string{kc}})
}

func (f *provisionFlags) validate() error {
	out, err := checkFormat(f.output, []string{FormatTable, "json"})
	if err != nil {
		return err
	}
	f.output = out
	if f.offline && !f.dryRun {
		return Usagef("--offline only makes sense with --dry-run")
	}
	if f.concurrency < 1 {
		return Usagef("--concurrency must be at least 1")
	}
	return nil
}

// session is what a provisioning command sets up from its flags.
type session struct {
	plan     *plan.Plan
	hosts    []engine.Host
	ssh      procedure.SSHOptions
	redactor *engine.Redactor
	state    string
}

func (f *provisionFlags) open(ctx context.Context, s Streams) (*session, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	res, err := f.spec.load(ctx, s.In, s.Err)
	if err != nil {
		return nil, err
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		return nil, Problem(fmt.Errorf("%s: %w", res.File, err))
	}
	sess := &session{plan: p, hosts: procedure.Hosts(p), redactor: &engine.Redactor{},
		ssh:   sshOptions(f.knownHosts, f.acceptNewHostKeys, f.identities, f.connectTimeout),
		state: procedure.StatePath(f.statePath, res.File, p.Cluster)}
	return sess, nil
}

// sshOptions are the SSH settings every SSH command shares (apply, reset,
// node diagnose), with the environment procedure.SSHOptions.Config reads its
// defaults from: known_hosts (default ~/.ssh/known_hosts), the agent, else
// the given keys, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa.
func sshOptions(knownHosts string, acceptNew bool, identities []string, connectTimeout time.Duration) procedure.SSHOptions {
	home, _ := os.UserHomeDir()
	return procedure.SSHOptions{KnownHosts: knownHosts, AcceptNewHostKeys: acceptNew, Identities: identities,
		AgentSocket: os.Getenv("SSH_AUTH_SOCK"), Home: home, ConnectTimeout: connectTimeout}
}

func (sess *session) reporterFor(f *provisionFlags, out io.Writer, phases []engine.Descriptor, verb string) engine.Reporter {
	if f.output == "json" {
		return engine.NewJSONReporter(out)
	}
	r := engine.NewTextReporter(out, phases, sess.hosts)
	r.Verb = verb
	if termcolor.Auto(out, os.Getenv).Enabled() {
		// A live view: running steps with their elapsed time below the
		// progress lines. Logs, pipes, TERM=dumb and NO_COLOR get the
		// plain lines: the view's cursor movements are escape codes as
		// colours are, and whoever sets NO_COLOR asked for none.
		return engine.NewLiveReporter(out, r)
	}
	return r
}

// exitFor maps an engine result to the exit-code contract: unknown phases
// are usage errors; an interruption, a state-file problem or failures that
// all happened while connecting (before any change) are "could not
// complete"; any other failed phase is exit 1.
func exitFor(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, engine.ErrUnknownPhase) {
		return Usage(err)
	}
	if errors.Is(err, context.Canceled) {
		return Incomplete(err)
	}
	pes := engine.PhaseErrors(err)
	if len(pes) == 0 {
		return Incomplete(err)
	}
	beforeChange := true
	for _, pe := range pes {
		var fe *preflight.FindingsError
		if !strings.HasPrefix(pe.Phase, "preflight") || errors.As(pe, &fe) {
			beforeChange = false
		}
	}
	if beforeChange {
		return Incomplete(err)
	}
	return Problem(err)
}

type applyFlags struct {
	provisionFlags
	ignorePreflight []string
	rebootTimeout   time.Duration
	manifestsDir    string
	calicoTimeout   time.Duration
	bundleDir       string
	reconcile       []string
}

func newApplyCmd(s Streams) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply -f cluster.yaml",
		Short: "Provision the cluster over SSH, phase by phase; resumable",
		Long: `apply builds the cluster described by the spec over SSH, following the hybrid
cluster guide phase by phase: preflight, Linux and Windows preparation,
kubeadm init, Calico, the joins, CSR approval, add-ons, kube-proxy for
Windows, RuntimeClasses, check workloads, doctor.

Every finished step is recorded in a state file; run apply again after a
failure or Ctrl-C and it resumes where each host stopped. Steps check the
host before acting, so apply on a finished cluster changes nothing.

Host keys are checked against known_hosts: an unknown key is refused unless
--accept-new-host-keys, a changed key always. Linux users other than root
need passwordless sudo; Windows users must be administrators (OpenSSH).

Phases, in order (--only and --skip-phases take these names; a phase
"after X everywhere" waits until X has finished on all of its hosts):

` + engine.HelpText(procedure.ApplyProcedure()) + `
See docs/apply.md.

Ctrl-C stops cleanly (finished steps stay recorded); a second Ctrl-C exits
at once (130).`,
		Example: `  # the whole procedure as for fresh machines, connecting to nothing
  hybridctl apply -f cluster.yaml --dry-run --offline

  # check the machines (read-only), trusting their host keys on first use
  hybridctl apply -f cluster.yaml --only preflight,preflight-cluster --accept-new-host-keys

  # machine-readable progress
  hybridctl apply -f cluster.yaml -o json | jq -c 'select(.type=="fail")'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runApply(cmd, s, f) },
	}
	f.add(cmd)
	cmd.Flags().StringSliceVar(&f.ignorePreflight, "ignore-preflight-errors", nil, "preflight checks whose errors become warnings: names from docs/apply.md's table, or all (alone)")
	cmd.Flags().DurationVar(&f.rebootTimeout, "reboot-timeout", 15*time.Minute, "how long a node may take to come back from one reboot")
	cmd.Flags().StringVar(&f.bundleDir, "bundle", "", "the bundle directory (hybridctl bundle download); required with spec.packages.source bundle, verified before any host is touched")
	cmd.Flags().StringVar(&f.manifestsDir, "manifests-dir", "", "directory with Calico's CRD and operator manifests (air-gapped sites; default: download the release's)")
	cmd.Flags().DurationVar(&f.calicoTimeout, "calico-timeout", 15*time.Minute, "how long to wait for Calico to be ready")
	cmd.Flags().StringSliceVar(&f.reconcile, "reconcile", nil, "members of the cluster whose hosts are brought back to the spec, one at a time: drain, prepare.sh again, the kubelet's configuration, uncordon (Linux nodes; hybridctl diff shows what differs)")
	return cmd
}

func runApply(cmd *cobra.Command, s Streams, f *applyFlags) error {
	ctx := cmd.Context()
	if _, err := preflight.ValidateIgnore(f.ignorePreflight); err != nil {
		return Usage(err)
	}
	sess, err := f.open(ctx, s)
	if err != nil {
		return err
	}
	target, err := f.kubeconfigTarget(ctx, sess.plan.Cluster)
	if err != nil {
		return err
	}
	if err := checkBundleFlag(sess.plan, f.bundleDir, "apply", "the bundle directory"); err != nil {
		return err
	}
	_, err = procedure.Apply(ctx, procedure.Options{Plan: sess.plan, SSH: sess.ssh, Kubeconfig: target.Store.Path, Context: f.context, StatePath: sess.state,
		DryRun: f.dryRun, Offline: f.offline, Skip: f.skip, Only: f.only, Concurrency: f.concurrency,
		IgnorePreflight: f.ignorePreflight, RebootTimeout: f.rebootTimeout, CalicoTimeout: f.calicoTimeout,
		ManifestsDir: f.manifestsDir, BundleDir: f.bundleDir, Redactor: sess.redactor, Reconcile: f.reconcile,
		Reporter: func(phases []engine.Descriptor) engine.Reporter {
			return sess.reporterFor(&f.provisionFlags, s.Out, phases, "applied")
		}})
	switch {
	case errors.Is(err, procedure.ErrInvalidOption):
		return Usage(err)
	case errors.Is(err, procedure.ErrPlanNotUsable), errors.Is(err, procedure.ErrClusterDiffers):
		return Problem(err)
	case errors.Is(err, procedure.ErrClusterUnreadable):
		return Incomplete(err)
	case errors.Is(err, procedure.ErrBundleIncomplete) && len(engine.PhaseErrors(err)) == 0:
		// Found before any host was touched: nothing was shown yet.
		return Problem(err)
	}
	return f.quiet(exitFor(err))
}

// checkBundleFlag is --bundle's usage rule for command: required with
// spec.packages.source bundle (what names the directory it wants),
// refused otherwise.
func checkBundleFlag(p *plan.Plan, bundleDir, command, what string) error {
	switch bundleMode := p.PackagesSource == spec.SourceBundle; {
	case bundleMode && bundleDir == "":
		return Usagef("spec.packages.source is bundle: %s needs --bundle DIR, %s (hybridctl bundle download -f SPEC -d DIR makes it)", command, what)
	case !bundleMode && bundleDir != "":
		return Usagef("--bundle is for spec.packages.source: bundle; the spec's packages.source is %s", p.PackagesSource)
	}
	return nil
}

// quiet marks a failure that the text progress output has already shown
// (every failed step with its error and output, and the summary), so Main
// does not print it again. With -o json the events are for programs and
// the error still goes to standard error for people.
func (f *provisionFlags) quiet(err error) error {
	var ee *ExitError
	if f.output == FormatTable && errors.As(err, &ee) && ee.Code == ExitProblem {
		ee.Silent = true
	}
	return err
}

type resetFlags struct {
	provisionFlags
	nodes         []string
	yes           bool
	rebootTimeout time.Duration
	drainTimeout  time.Duration
}

func newResetCmd(s Streams) *cobra.Command {
	f := &resetFlags{}
	cmd := &cobra.Command{
		Use:   "reset -f cluster.yaml [--node NAME]... --yes",
		Short: "Take nodes apart as the guide's troubleshooting section does",
		Long: `reset takes nodes apart the way the guide does before reinstalling them:
drain and delete the node through the API, then on the host kubeadm reset -f
and the CNI configuration; on Windows also the HNS networks, and a reboot
that reset waits for. Workers go first, the control plane last. --node
limits it to some nodes; without it, every node is reset.

It is destructive: pass --yes (or --dry-run to see what it would do). After
a complete reset the nodes' records in apply's state file are dropped, so
apply starts over on them.

Phases, in order:

` + engine.HelpText(procedure.ResetProcedure()) + `

drain and delete-node use the cluster's context (named after the cluster,
as apply imported it) in --kubeconfig; drain follows kubectl drain
--ignore-daemonsets --delete-emptydir-data, and is skipped when every node
is reset (pods would have nowhere to go).`,
		Example: `  # what would happen to the Windows node
  hybridctl reset -f cluster.yaml --node k8s-lab-win-1 --dry-run

  # reinstall the Windows node: drain, delete, kubeadm reset, HNS networks, reboot
  hybridctl reset -f cluster.yaml --node k8s-lab-win-1 --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReset(cmd, s, f) },
	}
	f.add(cmd)
	cmd.Flags().StringSliceVar(&f.nodes, "node", nil, "reset only these nodes (default: all)")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "confirm: the nodes are taken apart")
	cmd.Flags().DurationVar(&f.rebootTimeout, "reboot-timeout", 15*time.Minute, "how long a Windows node may take to come back")
	cmd.Flags().DurationVar(&f.drainTimeout, "drain-timeout", 5*time.Minute, "how long draining one node may take")
	return cmd
}

func runReset(cmd *cobra.Command, s Streams, f *resetFlags) error {
	ctx := cmd.Context()
	if !f.yes && !f.dryRun {
		return Usagef("reset takes nodes apart: pass --yes to confirm, or --dry-run to see what it would do")
	}
	sess, err := f.open(ctx, s)
	if err != nil {
		return err
	}
	pool := transport.NewPool(procedure.SSHConfigs(sess.plan, sess.ssh.Config())...)
	defer func() { _ = pool.Close() }()
	target, err := f.kubeconfigTarget(ctx, sess.plan.Cluster)
	if err != nil {
		return err
	}
	err = procedure.Reset(ctx, procedure.ResetOptions{Cluster: sess.plan.Cluster, Hosts: sess.hosts, Connect: pool.Get,
		Nodes: f.nodes, RESTConfig: procedure.RESTConfigFrom(target), RebootTimeout: f.rebootTimeout, DrainTimeout: f.drainTimeout,
		StatePath: sess.state, DryRun: f.dryRun, Offline: f.offline, Skip: f.skip, Only: f.only, Concurrency: f.concurrency,
		Reporter: func(phases []engine.Descriptor) engine.Reporter {
			return sess.reporterFor(&f.provisionFlags, s.Out, phases, "reset")
		}, Redactor: sess.redactor})
	if errors.Is(err, engine.ErrUnknownHost) {
		return Usage(err)
	}
	return f.quiet(exitFor(err))
}
