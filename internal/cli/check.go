package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/plan"
)

func newCheckCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Active checks of a live cluster: connectivity",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(graceful(newCheckConnectivityCmd(s), ""))
	return cmd
}

// connectivityFlags are check connectivity's flags.
type connectivityFlags struct {
	spec           specFlags
	output         string
	tests, skip    []string
	linuxImage     string
	windowsImage   string
	windowsImages  map[string]string
	kit            string
	dnsDomain      string
	externalTarget string
	readyTimeout   time.Duration
	probeTimeout   time.Duration
	attempts       int
	timeout        time.Duration
	keep           bool
}

// Defaults of check connectivity's deadlines.
const (
	DefaultReadyTimeout     = 3 * time.Minute
	DefaultProbeTimeout     = 20 * time.Second
	DefaultConnectTimeout   = 10 * time.Minute
	ConnectivityCleanupTime = 2 * time.Minute
)

func newCheckConnectivityCmd(s Streams) *cobra.Command {
	f := &connectivityFlags{spec: specFlags{optional: true}}
	kf := kubeclient.NewFlags()
	cmd := &cobra.Command{
		Use:   "connectivity",
		Short: "Run the guide's cross-OS network checks as named tests (pods, Services, DNS, nodes)",
		Long: `check connectivity creates its own namespace (Pod Security "restricted"; a
second one, "privileged", for the hostNetwork probe of node-to-pod), places
probe pods on up to two schedulable nodes per OS and Windows build, waits for
them, runs each test through pods/exec with a deadline per probe, prints the
results and deletes everything it created (also on Ctrl-C), unless --keep.

The tests, in order (docs/connectivity.md explains each):

` + testList() + `
A test whose probes cannot exist (no Ready Windows node, one Linux node) is
skipped with the reason, as is a documented platform limit (dotted names
from Windows pods). A test that could not run (its probe pods never got
ready, the run was interrupted) is reported as not run.

The probe image defaults to Kubernetes' agnhost, which runs on Linux and
Windows (--probe-kit agnhost: netexec serves, connect probes). With -f, the
spec's checkWorkloads.image (under its images.registry) and dnsDomain apply.
Probes whose image cannot be pulled for good (ImagePullBackOff, or
ErrImagePull still after 30 s) end the wait, naming each probe's node and
image. Another image needs the matching
--probe-kit: "hello" is the lab's hello (serve on :8080, get URL).

Exit codes: 0 every test that ran passed; 1 a test failed; 2 usage error;
3 could not complete (API unreachable or forbidden, probes not ready within
--ready-timeout, cleanup failed).`,
		Example: `  # every test on the current context's cluster
  hybridctl check connectivity

  # the lab's images, JSON for scripts, only the DNS tests
  hybridctl check connectivity --linux-image 192.168.10.1:5000/example/hello:1.2 --probe-kit hello \
      --tests dns-short-name,dns-fqdn,dns-dotted-name -o json

  # egress through NAT too, and keep the probes for a look afterwards
  hybridctl check connectivity --external-target 1.1.1.1:443 --keep`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, s, kf) },
	}
	fl := cmd.Flags()
	f.spec.add(cmd)
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(connectivity.Formats(), ", "))
	fl.StringSliceVar(&f.tests, "tests", nil, "run only these tests (comma-separated names; --test works too)")
	fl.StringSliceVar(&f.skip, "skip", nil, "do not run these tests (comma-separated names)")
	fl.StringVar(&f.linuxImage, "linux-image", connectivity.DefaultImage, "the Linux probe image")
	fl.StringVar(&f.windowsImage, "windows-image", connectivity.DefaultImage, "the Windows probe image (a manifest list with the nodes' builds)")
	fl.StringToStringVar(&f.windowsImages, "windows-image-for", nil, "the Windows probe image of one build, BUILD=IMAGE (10.0.26100=...); repeatable")
	fl.StringVar(&f.kit, "probe-kit", "agnhost", "the probe images' commands: "+strings.Join(connectivity.KitNames(), ", "))
	fl.StringVar(&f.dnsDomain, "dns-domain", "cluster.local", "the cluster's DNS domain (dns-fqdn); -f sets it from the spec")
	fl.StringVar(&f.externalTarget, "external-target", "", "HOST:PORT outside the cluster for pod-to-external (off when empty)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", DefaultReadyTimeout, "how long to wait for the probe pods to be ready")
	fl.DurationVar(&f.probeTimeout, "probe-timeout", DefaultProbeTimeout, "how long one probe (one exec) may take")
	fl.IntVar(&f.attempts, "attempts", 3, "how often a failing probe is tried before it counts as failed")
	fl.DurationVar(&f.timeout, "timeout", DefaultConnectTimeout, "give up when the whole run has not finished by then (cleanup still runs, for up to "+ConnectivityCleanupTime.String()+")")
	fl.BoolVar(&f.keep, "keep", false, "leave the namespace, probes and Services in place")
	kf.AddFlags(fl)
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "test" {
			name = "tests"
		}
		return pflag.NormalizedName(name)
	})
	return cmd
}

// testList is the tests for --help, one a line.
func testList() string {
	var b strings.Builder
	for _, t := range connectivity.Tests() {
		fmt.Fprintf(&b, "  %-24s %s\n", t.Name, t.What)
	}
	return b.String()
}

// validate checks everything that needs no cluster: usage errors are exit
// 2 before anything connects.
func (f *connectivityFlags) validate() ([]connectivity.Test, connectivity.Kit, error) {
	out, err := checkFormat(f.output, connectivity.Formats())
	if err != nil {
		return nil, connectivity.Kit{}, err
	}
	f.output = out
	kit, err := connectivity.LookupKit(f.kit)
	if err != nil {
		return nil, kit, Usage(err)
	}
	tests, err := connectivity.Select(f.tests, f.skip)
	if err != nil {
		return nil, kit, Usage(err)
	}
	switch {
	case f.readyTimeout <= 0:
		return nil, kit, Usagef("--ready-timeout must be positive, got %s", f.readyTimeout)
	case f.probeTimeout <= 0:
		return nil, kit, Usagef("--probe-timeout must be positive, got %s", f.probeTimeout)
	case f.attempts < 1:
		return nil, kit, Usagef("--attempts must be at least 1, got %d", f.attempts)
	case f.linuxImage == "" || f.windowsImage == "":
		return nil, kit, Usagef("--linux-image and --windows-image must not be empty")
	}
	return tests, kit, nil
}

func (f *connectivityFlags) run(cmd *cobra.Command, s Streams, kf *kubeclient.Flags) error {
	tests, kit, err := f.validate()
	if err != nil {
		return err
	}
	opts := connectivity.Options{
		Namespace:      kf.Namespace(cmd.Flags()),
		DNSDomain:      f.dnsDomain,
		ExternalTarget: f.externalTarget,
		LinuxImage:     f.linuxImage,
		WindowsImage:   f.windowsImage,
		WindowsImages:  f.windowsImages,
		Tests:          tests,
	}
	if f.spec.file != "" {
		r, err := f.spec.load(cmd.Context(), s.In, s.Err)
		if err != nil {
			return err
		}
		p, err := plan.Derive(r.Cluster, r.Diagnostics)
		if err != nil {
			return Problem(err)
		}
		fl := cmd.Flags()
		if !fl.Changed("dns-domain") {
			opts.DNSDomain = p.DNSDomain
		}
		// The spec's check workload image, already under images.registry.
		if !fl.Changed("linux-image") {
			opts.LinuxImage = p.CheckWorkloads.Image
		}
		if !fl.Changed("windows-image") {
			opts.WindowsImage = p.CheckWorkloads.Image
		}
	}
	// The plan's own checks (--external-target) before anything connects.
	if _, err := connectivity.NewPlan(nil, opts); err != nil {
		return Usage(err)
	}
	cfg, err := kf.RESTConfig(s.Err)
	if err != nil {
		return Incomplete(err)
	}
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return Incomplete(err)
	}
	ctx, cancel := withTimeout(cmd.Context(), f.timeout)
	defer cancel()
	nodes, err := listNodes(ctx, cs)
	if err != nil {
		return apiFailure(ctx, "check connectivity", f.timeout, err)
	}
	p, err := connectivity.NewPlan(nodes, opts)
	if err != nil {
		return Usage(err)
	}
	r := &connectivity.Runner{
		Client: cs, Exec: connectivity.APIExec{Config: cfg, Client: cs}, Kit: kit,
		ReadyTimeout: f.readyTimeout, ProbeTimeout: f.probeTimeout, Attempts: f.attempts,
		CleanupTimeout: ConnectivityCleanupTime, Keep: f.keep, Progress: s.Err,
	}
	rep, runErr := r.Run(ctx, p)
	if err := connectivity.Write(s.Out, f.output, rep); err != nil {
		return Incomplete(fmt.Errorf("write the report: %w", errors.Join(err, runErr)))
	}
	if rep.Summary.Fail > 0 {
		msg := fmt.Errorf("%d of %d connectivity test actions failed", rep.Summary.Fail, rep.Summary.Total)
		if runErr != nil {
			msg = fmt.Errorf("%w; the run also could not complete: %w", msg, runErr)
		}
		return Problem(msg)
	}
	if runErr != nil {
		if errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() != nil {
			return Incomplete(fmt.Errorf("check connectivity did not finish within %s (--timeout): %w", f.timeout, runErr))
		}
		return Incomplete(runErr)
	}
	return nil
}

// listNodes reads every Node, a page at a time.
func listNodes(ctx context.Context, cs kubeclient.Interface) ([]corev1.Node, error) {
	var out []corev1.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("list nodes: %w (%s)", err, connectivity.ForbiddenHint)
		}
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
