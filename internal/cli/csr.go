package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

func newCSRCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "csr",
		Short: "Review kubelet certificate signing requests",
		Long: `Review kubelet certificate signing requests.

With serverTLSBootstrap: true every kubelet asks the cluster CA for a serving
certificate, and nothing in Kubernetes approves it. 'hybridctl csr approve'
approves only requests whose requester, names and addresses provably belong
to the requesting node.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(graceful(newCSRApproveCmd(s), "watch"))
	return cmd
}

type csrApproveOptions struct {
	config        *kubeclient.Flags
	timeout       time.Duration
	spec          specFlags
	yes           bool
	dryRun        bool
	watch         bool
	output        string
	maxExpiration time.Duration
	workers       int
}

func newCSRApproveCmd(s Streams) *cobra.Command {
	o := &csrApproveOptions{config: kubeclient.NewFlags().WithoutNamespace(), spec: specFlags{optional: true}}
	cmd := &cobra.Command{
		Use:   "approve [CSR_NAME...]",
		Short: "Approve kubelet-serving CSRs whose names and addresses belong to the requesting node",
		Long: `Review pending kubernetes.io/kubelet-serving CertificateSigningRequests and
approve those that provably belong to the node that asked, deny those that
are wrong, and leave pending those that cannot be decided yet.

Every request goes through every check, and every failed check is reported:

` + csrCheckList() + `
Without -f, a name or address the Node reports about itself (a kubelet may
rewrite its own status) is refused when another Node or the API server has
it: other Nodes' names and addresses, controlPlaneEndpoint and certSANs from
kube-system/kubeadm-config, the server this command connects to, and the
kubernetes Service's names and ClusterIPs. With -f the spec alone names the
node. Use -f wherever you have the spec.

Decisions: approved; denied (condition Denied, message naming the failed
checks) when the request is wrong; left pending when the answer could
change (the Node is not registered yet, an API error). A transient problem
never denies.

By default each request is shown (requester, DNS names, IPs, age, verdict and
reasons) and you are asked before anything is written. --yes acts without
asking; --dry-run only shows. --watch runs as a controller until
interrupted, deciding each request as it arrives (one log line per decision
on standard error); 'hybridctl render' can deploy it inside the cluster.

Exit codes: 0 nothing wrong (approved, or left pending for a Node not yet
registered); 1 a request was denied (or would be, with --dry-run); 2 usage
error; 3 could not complete (API unreachable, an API error).`,
		Example: `  # Review each pending request and confirm
  hybridctl csr approve

  # The same, checking IPs against the inventory, not against what nodes report
  hybridctl csr approve -f cluster.yaml

  # In a script: decide everything, JSON out, exit 1 if something was denied
  hybridctl csr approve --yes -o json

  # Only show what would happen
  hybridctl csr approve --dry-run

  # Run as a controller
  hybridctl csr approve --watch -f cluster.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), s, args)
		},
	}
	o.config.AddFlags(cmd.Flags())
	addTimeout(cmd, &o.timeout)
	o.spec.add(cmd)
	f := cmd.Flags()
	f.BoolVarP(&o.yes, "yes", "y", false, "approve and deny without asking")
	f.BoolVar(&o.dryRun, "dry-run", false, "show the decisions, write nothing")
	f.BoolVar(&o.watch, "watch", false, "run as a controller until interrupted, deciding requests as they arrive")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json (with --watch: the log format)")
	f.DurationVar(&o.maxExpiration, "max-expiration", csr.DefaultMaxExpiration, "largest spec.expirationSeconds to approve")
	f.IntVar(&o.workers, "workers", 8, "with --watch: requests decided in parallel")
	return cmd
}

func (o *csrApproveOptions) validate(args []string) error {
	out, err := checkFormat(o.output, []string{FormatTable, "json"})
	if err != nil {
		return err
	}
	o.output = out
	if o.watch && len(args) > 0 {
		return Usagef("--watch decides every kubelet-serving request; it takes no CSR names (got %q)", args)
	}
	if o.maxExpiration < 10*time.Minute {
		return Usagef("--max-expiration %s is below the API's 10-minute minimum", o.maxExpiration)
	}
	if o.workers < 1 {
		return Usagef("--workers must be at least 1")
	}
	if o.spec.file == "-" && !o.yes && !o.dryRun && !o.watch {
		return Usagef("-f - reads the spec from standard input, which the confirmation prompt needs; use a file or --yes")
	}
	return nil
}

func (o *csrApproveOptions) run(ctx context.Context, s Streams, args []string) error {
	if err := o.validate(args); err != nil {
		return err
	}
	opts := csr.Options{MaxExpiration: o.maxExpiration}
	if o.spec.file != "" {
		r, err := o.spec.load(ctx, s.In, s.Err)
		if err != nil {
			return err
		}
		inv, err := csr.InventoryFromSpec(r.Cluster)
		if err != nil {
			return Problem(fmt.Errorf("%s: %w", r.File, err))
		}
		opts.Inventory = inv
	}
	cfg, err := o.config.RESTConfig(s.Err)
	if err != nil {
		return Incomplete(err)
	}
	if o.watch {
		// Decisions must not queue behind client-side throttling.
		cfg.QPS, cfg.Burst = 200, 400
	}
	client, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return Incomplete(fmt.Errorf("building the API client: %w", err))
	}
	if o.watch {
		return o.runWatch(ctx, s, client, opts, cfg.Host)
	}
	if opts.Inventory == nil {
		opts.Cluster = csr.APIClusterView(client, cfg.Host)
	}
	// Unattended, the whole review has a deadline; at the prompt the
	// person decides how long it takes (each request still has one).
	if o.yes || o.dryRun {
		var cancel context.CancelFunc
		ctx, cancel = withTimeout(ctx, o.timeout)
		defer cancel()
	}
	return o.runOnce(ctx, s, client, opts, args)
}

func (o *csrApproveOptions) runWatch(ctx context.Context, s Streams, client kubeclient.Interface, opts csr.Options, server string) error {
	var h slog.Handler = slog.NewTextHandler(s.Err, nil)
	if o.output == "json" {
		// slog's JSON leaves C1 and bidirectional controls raw.
		h = slog.NewJSONHandler(termtext.JSONLines(s.Err), nil)
	}
	c, err := csr.NewController(client, csr.ControllerOptions{Options: opts, Server: server, DryRun: o.dryRun, Workers: o.workers, Logger: slog.New(h)})
	if err != nil {
		return Incomplete(err)
	}
	if err := c.Run(ctx); err != nil {
		return Incomplete(err)
	}
	return nil
}

// runOnce reviews the pending requests once.
func (o *csrApproveOptions) runOnce(ctx context.Context, s Streams, client kubeclient.Interface, opts csr.Options, names []string) error {
	pending, err := csr.ListPending(ctx, client, names)
	if err != nil {
		return apiFailure(ctx, "csr approve", o.timeout, err)
	}
	if len(names) > 0 {
		found := map[string]bool{}
		for _, c := range pending {
			found[c.Name] = true
		}
		for _, n := range names {
			if !found[n] {
				fmt.Fprintf(s.Err, "warning: %s is not a pending kubelet-serving CertificateSigningRequest; skipped\n", termtext.Name(n))
			}
		}
	}
	if opts.Cluster != nil && len(pending) > 0 {
		// Read once before the first review, so that what could not be
		// read is said once, before any verdict.
		view, err := opts.Cluster(ctx)
		if err != nil {
			return apiFailure(ctx, "csr approve", o.timeout, err)
		}
		for _, w := range view.Warnings {
			fmt.Fprintf(s.Err, "warning: %s\n", termtext.Line(w))
		}
	}
	// In JSON mode the prompts go to standard error, keeping stdout JSON.
	promptOut := s.Out
	if o.output == "json" {
		promptOut = s.Err
	}
	interactive := !o.yes && !o.dryRun
	in := bufio.NewReader(s.In)
	getNode := csr.APINodeGetter(client)

	outcomes := []csr.Outcome{}
	var reviews []*csr.Review
	var apiErrs []error
	denied := false
	for i := range pending {
		c := &pending[i]
		rv := csr.ReviewCSR(ctx, c, getNode, opts)
		if rv.Decision == csr.Deny {
			denied = true
		}
		if rv.APIError != nil {
			apiErrs = append(apiErrs, fmt.Errorf("CertificateSigningRequest %s: %w", c.Name, rv.APIError))
		}
		out := csr.Outcome{Name: rv.Name, Node: rv.Node, Decision: rv.Decision, Reasons: rv.Reasons()}
		if interactive || (o.output == "table" && o.dryRun) {
			printReview(promptOut, rv)
		}
		act := rv.Decision == csr.Approve || rv.Decision == csr.Deny
		if act && interactive {
			verb := map[csr.Decision]string{csr.Approve: "Approve", csr.Deny: "Deny"}[rv.Decision]
			if !confirm(promptOut, in, fmt.Sprintf("%s %s? [y/N]: ", verb, printable(rv.Name))) {
				act = false
				out.Decision = csr.LeavePending
				out.Reasons = append([]string{fmt.Sprintf("not confirmed at the prompt (verdict: %s)", rv.Decision)}, out.Reasons...)
			}
		}
		if act && !o.dryRun {
			rv2, err := csr.ApplyWithRetry(ctx, client, c, rv, opts)
			if err != nil {
				apiErrs = append(apiErrs, err)
				out.Decision = csr.LeavePending
				out.Reasons = append([]string{err.Error()}, out.Reasons...)
			} else {
				rv = rv2
				out.Decision, out.Reasons = rv.Decision, rv.Reasons()
			}
		}
		outcomes = append(outcomes, out)
		reviews = append(reviews, rv)
	}

	switch o.output {
	case "json":
		if err := termtext.EncodeJSON(s.Out, outcomes); err != nil {
			return Incomplete(err)
		}
	default:
		printOutcomes(s.Out, outcomes, reviews, o.dryRun)
	}
	switch {
	case denied:
		return &ExitError{Code: ExitProblem, Err: errors.New("a kubelet-serving request was denied"), Silent: true}
	case len(apiErrs) > 0:
		return apiFailure(ctx, "csr approve", o.timeout, errors.Join(apiErrs...))
	}
	return nil
}

// csrCheckList is the help's list of checks, from csr.Checks.
func csrCheckList() string {
	var b strings.Builder
	for _, c := range csr.Checks() {
		fmt.Fprintf(&b, "  %-15s %s\n", c.Name, c.Summary)
	}
	return b.String()
}

// confirm asks a yes/no question; anything but y/yes (including end of
// input) is no.
func confirm(w io.Writer, in *bufio.Reader, question string) bool {
	fmt.Fprint(w, question)
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(w)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}

// orNone joins list for display, quoting any entry a terminal could
// misread: names in a request are chosen by whoever made it, and an escape
// sequence in a DNS name must not repaint the reviewer's screen.
func orNone(list []string) string {
	if len(list) == 0 {
		return "<none>"
	}
	return strings.Join(termtext.Names(list), ", ")
}

// printable is termtext.Name: names shown as they are, or Go-quoted when
// they hold anything but printable ASCII.
func printable(s string) string { return termtext.Name(s) }

// printReview shows one request the way a reviewer needs it.
func printReview(w io.Writer, rv *csr.Review) {
	fmt.Fprintf(w, "\n%s  requested by %s, %s ago\n", printable(rv.Name), printable(rv.Requester), age(rv.Created))
	fmt.Fprintf(w, "  DNS names: %s\n", orNone(rv.DNSNames))
	fmt.Fprintf(w, "  IPs:       %s\n", orNone(rv.IPs))
	if len(rv.Emails)+len(rv.URIs) > 0 {
		fmt.Fprintf(w, "  other:     %s\n", orNone(append(append([]string{}, rv.Emails...), rv.URIs...)))
	}
	fmt.Fprintf(w, "  usages:    %s\n", orNone(rv.Usages))
	verdict := map[csr.Decision]string{csr.Approve: "approve", csr.Deny: "deny", csr.LeavePending: "leave pending"}[rv.Decision]
	fmt.Fprintf(w, "  verdict:   %s\n", verdict)
	for _, r := range rv.Reasons() {
		fmt.Fprintf(w, "    - %s\n", termtext.Line(r))
	}
}

func printOutcomes(w io.Writer, outs []csr.Outcome, reviews []*csr.Review, dryRun bool) {
	if len(outs) == 0 {
		fmt.Fprintln(w, "No pending kubelet-serving CertificateSigningRequests.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nNAME\tNODE\tREQUESTER\tAGE\tDNS NAMES\tIPS\tDECISION\tREASONS")
	for i, o := range outs {
		rv := reviews[i]
		d := string(o.Decision)
		if dryRun {
			d += " (dry run)"
		}
		// NODE is the JSON's node: empty (<none>) when the requester is
		// not a node; REQUESTER is who asked.
		node := printable(o.Node)
		if node == "" {
			node = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(o.Name), node, printable(rv.Requester), age(rv.Created), orNone(rv.DNSNames), orNone(rv.IPs), d, termtext.Line(strings.Join(o.Reasons, "; ")))
	}
	_ = tw.Flush()
}
