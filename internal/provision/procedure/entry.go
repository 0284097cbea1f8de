package procedure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// Options are what Apply needs. Plan and Kubeconfig are required; a zero
// duration or count takes the default of the apply flag of the same name.
type Options struct {
	// Plan is the derived plan of the spec (plan.Derive).
	Plan *plan.Plan
	// SSH are the SSH settings Apply connects to the plan's nodes with
	// (SSHConfigs); the connections are closed when Apply returns.
	SSH SSHOptions
	// Connect, when set, replaces SSH: it returns a node's client (a
	// transport.Pool's Get), and the caller closes what it opened.
	Connect func(ctx context.Context, host string) (*transport.Client, error)
	// Kubeconfig is the kubeconfig file the cluster's admin credentials
	// are imported into, under a context named after the cluster; the API
	// phases connect through that context (kubeconfig.TargetPath gives
	// kubectl's default).
	Kubeconfig string
	// StatePath is the state file recording finished steps (StatePath
	// gives the default); "" keeps no state.
	StatePath string
	// DryRun, Offline, Skip, Only and Concurrency are the engine's options
	// of the same names (engine.Options). Offline needs DryRun.
	DryRun, Offline bool
	Skip, Only      []string
	Concurrency     int
	// IgnorePreflight names preflight checks (preflight.Checks) whose
	// errors become warnings, or "all" alone.
	IgnorePreflight []string
	// RebootTimeout bounds one reboot of a node (default 15 minutes);
	// CalicoTimeout the wait for Calico to be ready (default 15 minutes).
	RebootTimeout, CalicoTimeout time.Duration
	// ManifestsDir holds Calico's CRD and operator manifests for an
	// air-gapped site; "" downloads the release's (or, with a bundle, reads
	// the bundle's).
	ManifestsDir string
	// Reconcile names members of the cluster whose hosts apply brings back
	// to the spec, one node at a time with a drain (Linux nodes only).
	Reconcile []string
	// Context is the kubeconfig context of the cluster, for a cluster
	// hybridctl did not import (a cluster built by hand); "" uses the
	// context apply imports, named after the cluster.
	Context string
	// BundleDir is the bundle directory (internal/bundle's layout). It is
	// required when the plan's packages come from a bundle and refused
	// otherwise; Apply verifies it before any host is touched.
	BundleDir string
	// Reporter makes the progress reporter for the phase list; nil
	// reports nothing. Apply's summary is returned either way.
	Reporter func(phases []engine.Descriptor) engine.Reporter
	// Redactor scrubs the join tokens from every event; nil uses a fresh
	// one.
	Redactor *engine.Redactor
}

// ErrInvalidOption matches (errors.Is) Apply's error for Options that
// cannot work: a missing plan or kubeconfig, Offline without DryRun, a
// negative count or duration, an unknown preflight check, a bundle
// directory the plan does not fit. Nothing was touched then.
var ErrInvalidOption = errors.New("invalid apply option")

// ErrPlanNotUsable matches Apply's error for a plan whose files cannot be
// rendered or whose nodes cannot be made into the CSR inventory. Nothing
// was touched then.
var ErrPlanNotUsable = errors.New("the plan cannot be provisioned")

type optionError struct{ option, problem string }

func (e *optionError) Error() string        { return "apply option " + e.option + ": " + e.problem }
func (e *optionError) Is(target error) bool { return target == ErrInvalidOption }

// planError keeps the message of the error it wraps.
type planError struct{ err error }

func (e planError) Error() string        { return e.err.Error() }
func (e planError) Unwrap() error        { return e.err }
func (e planError) Is(target error) bool { return target == ErrPlanNotUsable }

func (o *Options) validate() error { return o.validateFor(ApplyProcedure()) }

// validateFor checks the options for a run of procedure (whose phase
// names --only and --skip-phases take).
func (o *Options) validateFor(procedure []engine.Descriptor) error {
	var errs []error
	bad := func(option, format string, args ...any) {
		errs = append(errs, &optionError{option, fmt.Sprintf(format, args...)})
	}
	if o.Plan == nil {
		bad("Plan", "no plan given (plan.Derive of the spec)")
	}
	if o.Kubeconfig == "" {
		bad("Kubeconfig", "no kubeconfig file given for the cluster's admin credentials (kubeconfig.TargetPath gives kubectl's default)")
	}
	if o.Offline && !o.DryRun {
		bad("Offline", "only makes sense with DryRun")
	}
	if o.Concurrency < 0 {
		bad("Concurrency", "%d is negative", o.Concurrency)
	}
	if o.RebootTimeout < 0 {
		bad("RebootTimeout", "%s is negative", o.RebootTimeout)
	}
	if o.CalicoTimeout < 0 {
		bad("CalicoTimeout", "%s is negative", o.CalicoTimeout)
	}
	if o.Plan != nil {
		for _, n := range o.Reconcile {
			i := slices.IndexFunc(o.Plan.Nodes, func(pn plan.Node) bool { return pn.Name == n })
			switch {
			case i < 0:
				bad("Reconcile", "%q is not a node of the spec", n)
			case o.Plan.Nodes[i].IsWindows():
				bad("Reconcile", "%s runs Windows: prepare.ps1 leaves a joined node alone; reset it and let apply join it again", n)
			}
		}
		if len(o.Reconcile) > 0 && o.Offline {
			bad("Reconcile", "needs to know which nodes are members: not with Offline")
		}
	}
	known := map[string]bool{}
	var names []string
	for _, d := range procedure {
		known[d.Name] = true
		names = append(names, d.Name)
	}
	for _, list := range []struct {
		flag  string
		names []string
	}{{"--skip-phases", o.Skip}, {"--only", o.Only}} {
		for _, n := range list.names {
			if !known[n] {
				errs = append(errs, fmt.Errorf("%s: %w %q (phases: %s)%s", list.flag, engine.ErrUnknownPhase, n, strings.Join(names, ", "), engine.DidYouMean(n, names)))
			}
		}
	}
	if _, err := preflight.ValidateIgnore(o.IgnorePreflight); err != nil {
		bad("IgnorePreflight", "%s", strings.TrimPrefix(err.Error(), "--ignore-preflight-errors: "))
	}
	if o.Plan != nil {
		switch bundleMode := o.Plan.PackagesSource == spec.SourceBundle; {
		case bundleMode && o.BundleDir == "":
			bad("BundleDir", "the plan's packages.source is bundle: a bundle directory is required")
		case !bundleMode && o.BundleDir != "":
			bad("BundleDir", "a bundle directory is for packages.source bundle; the plan's packages.source is %s", o.Plan.PackagesSource)
		}
	}
	return errors.Join(errs...)
}

// Apply provisions the plan's cluster as `hybridctl apply` does: it
// renders the plan's files, verifies the bundle (with BundleDir) before
// any host is touched, builds the phase list (Phases) and runs it over
// SSH, recording finished steps in the state file so that a later Apply
// resumes where each host stopped.
//
// It returns the run's summary and an error: wrapping ErrInvalidOption or
// ErrPlanNotUsable (nothing ran), ErrBundleIncomplete (a file of the
// bundle is missing or corrupted; nothing ran), engine.ErrUnknownPhase
// (a name in Skip or Only; nothing ran), the context's error when ctx was
// canceled (finished steps stay recorded; the summary counts what did not
// run), or the failed phases as engine.PhaseErrors finds them.
func Apply(ctx context.Context, o Options) (engine.Summary, error) {
	r, err := setup(ctx, &o, modeApply, Phases)
	if err != nil {
		return engine.Summary{}, err
	}
	defer r.close()
	return r.run(ctx, &o)
}

// run runs the prepared phases with the options' engine settings and
// returns the summary.
func (r *prepared) run(ctx context.Context, o *Options) (engine.Summary, error) {
	var report engine.Reporter = engine.ReporterFunc(func(engine.Event) {})
	if o.Reporter != nil {
		report = o.Reporter(engine.Descriptors(r.phases))
	}
	for _, w := range r.warnings {
		report.Report(engine.Event{Time: time.Now(), Type: engine.EventWarning, Host: engine.ClusterHostName, Reason: w})
	}
	var summary engine.Summary
	e, err := engine.New(r.phases, r.hosts, engine.Options{
		Cluster: o.Plan.Cluster, StatePath: o.StatePath, DryRun: o.DryRun, Offline: o.Offline,
		Skip: o.Skip, Only: o.Only, Concurrency: o.Concurrency, Redactor: r.redactor,
		Reporter: engine.ReporterFunc(func(ev engine.Event) {
			if ev.Type == engine.EventSummary && ev.Summary != nil {
				summary = *ev.Summary
			}
			report.Report(ev)
		}),
	})
	if err != nil {
		return engine.Summary{}, err
	}
	err = e.Run(ctx)
	return summary, err
}

// prepared is what Apply and Diff set up from the options before the
// engine runs: the rendered files, the verified bundle, the connections,
// the inventory and the bound phases.
type prepared struct {
	hosts    []engine.Host
	phases   []engine.Phase
	members  *inventory.Inventory
	redactor *engine.Redactor
	// warnings found before the run, reported first.
	warnings []string
	close    func()
}

// setupMode is what setup refuses of the cluster it reads.
type setupMode int

const (
	// modeApply refuses conflicts and another version (Discover), and
	// forgets stale state records.
	modeApply setupMode = iota
	// modeDiff refuses nothing: diff reports it.
	modeDiff
	// modeUpgrade refuses conflicts; the version gate ran before.
	modeUpgrade
)

// setup renders the plan, verifies the bundle (before anything
// connects), opens the SSH pool, reads the cluster and the hosts (unless
// offline; refusing what mode refuses) and binds the procedure with build.
func setup(ctx context.Context, o *Options, mode setupMode, build func(Deps) ([]engine.Phase, error)) (*prepared, error) {
	if mode != modeUpgrade {
		if err := o.validate(); err != nil {
			return nil, err
		}
	}
	ignore, _ := preflight.ValidateIgnore(o.IgnorePreflight)
	p := o.Plan
	// The same files `hybridctl render` writes; join files keep their
	// placeholders (the join phases fill them).
	files, err := render.Render(p, render.Options{})
	if err != nil {
		return nil, planError{err}
	}
	csrInventory, err := InventoryFrom(p)
	if err != nil {
		return nil, planError{err}
	}
	// The bundle is checked before anything connects: a missing or
	// corrupted file stops apply here, with every host untouched.
	var bndl *Bundle
	manifestsDir, addons := o.ManifestsDir, AddonsFrom(p)
	if o.BundleDir != "" {
		if bndl, err = BundleFrom(ctx, p, o.BundleDir); err != nil {
			return nil, err
		}
		if manifestsDir == "" {
			manifestsDir = filepath.Join(o.BundleDir, bundle.ManifestsDir)
		}
		addons = AddonsFromBundle(p, o.BundleDir)
	}
	r := &prepared{hosts: Hosts(p), redactor: o.Redactor, close: func() {}}
	if r.redactor == nil {
		r.redactor = &engine.Redactor{}
	}
	connect := o.Connect
	if connect == nil {
		pool := transport.NewPool(SSHConfigs(p, o.SSH.Config())...)
		r.close = func() { _ = pool.Close() }
		connect = pool.Get
	}
	target := &KubeconfigTarget{Store: &kubeconfig.Store{Path: o.Kubeconfig}, Name: p.Cluster, Context: o.Context}
	// What the cluster and the hosts are before anything changes: members
	// are left alone; conflicts and a version change stop apply here.
	if !o.Offline {
		switch mode {
		case modeApply:
			r.members, err = Discover(ctx, p, r.hosts, connect, RESTConfigFrom(target), o.Concurrency)
			if err == nil {
				err = o.forgetStale(ctx, r.members)
			}
		default:
			r.members, err = inventory.Discover(ctx, inventory.Options{Hosts: r.hosts, RESTConfig: RESTConfigFrom(target), Concurrency: o.Concurrency,
				Connect: func(ctx context.Context, host string) (hostfacts.Runner, error) { return connect(ctx, host) }})
			if err != nil {
				err = fmt.Errorf("%w: %w", ErrClusterUnreadable, err)
			} else if mode == modeUpgrade {
				if cerr := r.members.Conflicts(); cerr != nil {
					err = fmt.Errorf("%w:\n%w", ErrClusterDiffers, cerr)
				}
			}
		}
		if err != nil {
			r.close()
			return nil, err
		}
	}
	r.phases, err = build(Deps{Hosts: r.hosts, Connect: connect, Inventory: csrInventory, Members: r.members,
		Kubeconfig: target, RESTConfig: RESTConfigFrom(target), Bundle: bndl,
		Calico: CalicoFrom(p, manifestsDir), CalicoTimeout: o.CalicoTimeout,
		Addons: addons,
		Expect: Expectations(p), IgnorePreflight: ignore,
		Files: ArtifactsOf(files), RebootTimeout: o.RebootTimeout, Redactor: r.redactor, Reconcile: o.Reconcile})
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// ErrClusterDiffers matches (errors.Is) Apply's error for a cluster apply
// must not touch as it is: spec nodes that conflict with the cluster's
// (a name with another address, an address under another name), or a
// cluster at another Kubernetes version than the spec's (an upgrade).
// Nothing was changed then.
var ErrClusterDiffers = errors.New("the cluster differs from the spec in a way apply does not change")

// ErrClusterUnreadable matches (errors.Is) Apply's and Diff's error when
// the cluster or its kubeconfig cannot be read before anything starts.
var ErrClusterUnreadable = errors.New("the cluster cannot be read")

// Discover reads the cluster (through restConfig) and the hosts, and
// refuses what apply must not touch: conflicts between the spec's nodes
// and the cluster's (wrapping ErrClusterDiffers, naming both sides), and
// a cluster whose API server runs another version than the spec's. A
// cluster that cannot be read wraps ErrClusterUnreadable.
func Discover(ctx context.Context, p *plan.Plan, hosts []engine.Host, connect func(ctx context.Context, host string) (*transport.Client, error),
	restConfig func(ctx context.Context) (*rest.Config, error), concurrency int) (*inventory.Inventory, error) {
	inv, err := inventory.Discover(ctx, inventory.Options{Hosts: hosts, RESTConfig: restConfig, Concurrency: concurrency,
		Connect: func(ctx context.Context, host string) (hostfacts.Runner, error) { return connect(ctx, host) }})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClusterUnreadable, err)
	}
	var errs []error
	if err := inv.Conflicts(); err != nil {
		errs = append(errs, err)
	}
	if v := inv.ServerVersion; v != "" && strings.TrimPrefix(v, "v") != strings.TrimPrefix(p.KubernetesVersion, "v") {
		errs = append(errs, fmt.Errorf("the cluster's API server runs %s and the spec says %s: apply does not change a cluster's version; "+
			"hybridctl upgrade does (one minor at a time)", v, p.KubernetesVersion))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrClusterDiffers, err)
	}
	return inv, nil
}

// forgetStale drops the state file's records of every node that is not a
// member although the state file says it joined (or was initialised): it
// was reset or rebuilt since, and its steps must run again. The state file
// is a cache of progress; the cluster is the truth.
func (o *Options) forgetStale(ctx context.Context, inv *inventory.Inventory) error {
	if o.StatePath == "" || o.DryRun {
		return nil
	}
	if _, err := os.Stat(o.StatePath); err != nil {
		return nil
	}
	st, err := engine.LoadState(o.StatePath, o.Plan.Cluster)
	if err != nil {
		return err
	}
	var stale []string
	for _, n := range inv.Nodes {
		if n.Status != inventory.StatusNew {
			continue
		}
		for _, ph := range []string{"kubeadm-init", "join-linux", "join-windows"} {
			if st.Done(n.Host.Name, ph) {
				stale = append(stale, n.Host.Name)
				break
			}
		}
	}
	if len(stale) == 0 {
		return nil
	}
	return ForgetNodes(ctx, o.StatePath, o.Plan.Cluster, stale)
}
