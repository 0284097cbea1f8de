package apply

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision"
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
	// of the same names (provision.Options). Offline needs DryRun.
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
	// BundleDir is the bundle directory (internal/bundle's layout). It is
	// required when the plan's packages come from a bundle and refused
	// otherwise; Apply verifies it before any host is touched.
	BundleDir string
	// Reporter makes the progress reporter for the phase list; nil
	// reports nothing. Apply's summary is returned either way.
	Reporter func(phases []provision.Phase) provision.Reporter
	// Redactor scrubs the join tokens from every event; nil uses a fresh
	// one.
	Redactor *provision.Redactor
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

func (o *Options) validate() error {
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
// bundle is missing or corrupted; nothing ran), provision.ErrUnknownPhase
// (a name in Skip or Only; nothing ran), the context's error when ctx was
// canceled (finished steps stay recorded; the summary counts what did not
// run), or the failed phases as provision.PhaseErrors finds them.
func Apply(ctx context.Context, o Options) (provision.Summary, error) {
	if err := o.validate(); err != nil {
		return provision.Summary{}, err
	}
	ignore, _ := preflight.ValidateIgnore(o.IgnorePreflight)
	p := o.Plan
	// The same files `hybridctl render` writes; join files keep their
	// placeholders (the join phases fill them).
	files, err := render.Render(p, render.Options{})
	if err != nil {
		return provision.Summary{}, planError{err}
	}
	inventory, err := InventoryFrom(p)
	if err != nil {
		return provision.Summary{}, planError{err}
	}
	// The bundle is checked before anything connects: a missing or
	// corrupted file stops apply here, with every host untouched.
	var bndl *Bundle
	manifestsDir, addons := o.ManifestsDir, AddonsFrom(p)
	if o.BundleDir != "" {
		if bndl, err = BundleFrom(ctx, p, o.BundleDir); err != nil {
			return provision.Summary{}, err
		}
		if manifestsDir == "" {
			manifestsDir = filepath.Join(o.BundleDir, bundle.ManifestsDir)
		}
		addons = AddonsFromBundle(p, o.BundleDir)
	}
	connect := o.Connect
	if connect == nil {
		pool := transport.NewPool(SSHConfigs(p, o.SSH.Config())...)
		defer func() { _ = pool.Close() }()
		connect = pool.Get
	}
	redactor := o.Redactor
	if redactor == nil {
		redactor = &provision.Redactor{}
	}
	hosts := Hosts(p)
	target := &KubeconfigTarget{Store: &kubeconfig.Store{Path: o.Kubeconfig}, Name: p.Cluster}
	phases := Phases(Deps{Hosts: hosts, Connect: connect, Inventory: inventory,
		Kubeconfig: target, RESTConfig: RESTConfigFrom(target), Bundle: bndl,
		Calico: CalicoFrom(p, manifestsDir), CalicoTimeout: o.CalicoTimeout,
		Addons: addons,
		Expect: Expectations(p), IgnorePreflight: ignore,
		Files: ArtifactsOf(files), RebootTimeout: o.RebootTimeout, Redactor: redactor})
	var report provision.Reporter = provision.ReporterFunc(func(provision.Event) {})
	if o.Reporter != nil {
		report = o.Reporter(phases)
	}
	var summary provision.Summary
	e, err := provision.New(phases, hosts, provision.Options{
		Cluster: p.Cluster, StatePath: o.StatePath, DryRun: o.DryRun, Offline: o.Offline,
		Skip: o.Skip, Only: o.Only, Concurrency: o.Concurrency, Redactor: redactor,
		Reporter: provision.ReporterFunc(func(ev provision.Event) {
			if ev.Type == provision.EventSummary && ev.Summary != nil {
				summary = *ev.Summary
			}
			report.Report(ev)
		}),
	})
	if err != nil {
		return provision.Summary{}, err
	}
	err = e.Run(ctx)
	return summary, err
}
