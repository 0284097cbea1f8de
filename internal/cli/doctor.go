package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/termcolor"
)

// auditFlags are the flags doctor and lint share.
type auditFlags struct {
	output string
	failOn string
	only   []string
	skip   []string
	config string
	// explain and listChecks print the catalogue instead of checking.
	explain    string
	listChecks bool
	// spec is the cluster spec the checks compare with (doctor -f).
	spec *checks.Spec
}

func (f *auditFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(report.Formats(), ", "))
	fl.StringVar(&f.failOn, "fail-on", "error", "exit 1 when there are findings at or above this severity: error, warning, info, or none")
	fl.StringSliceVar(&f.only, "checks", nil, "run only these checks (IDs or names, comma-separated)")
	fl.StringSliceVar(&f.skip, "skip", nil, "do not run these checks (IDs or names, comma-separated)")
	fl.StringVar(&f.config, "config", "", "YAML file with findings to ignore (ignore: [{check, namespace, kind, name, reason}])")
	fl.StringVar(&f.explain, "explain", "", "print the documentation of a check (ID or name, or all) and exit")
	fl.BoolVar(&f.listChecks, "list-checks", false, "list every check (ID, name, severity, what it finds) and exit; -o json for scripts")
}

// catalogue handles --explain and --list-checks; done is true when one was
// given and the command has nothing else to do.
func (f *auditFlags) catalogue(s Streams) (done bool, err error) {
	if f.explain == "" && !f.listChecks {
		return false, nil
	}
	if f.explain != "" && f.listChecks {
		return true, Usagef("--explain and --list-checks are alternatives")
	}
	docs, err := checks.Catalogue()
	if err != nil {
		return true, err
	}
	if f.listChecks {
		switch f.output {
		case "json":
			type row struct {
				ID       string `json:"id"`
				Name     string `json:"name"`
				Severity string `json:"severity"`
				Title    string `json:"title"`
			}
			rows := []row{}
			for _, d := range docs {
				rows = append(rows, row{d.ID, d.Name, string(d.Severity), d.Title})
			}
			return true, writeJSON(s.Out, rows)
		case "table":
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSEVERITY\tWHAT")
			for _, d := range docs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Severity, d.Title)
			}
			return true, tw.Flush()
		}
		return true, Usagef("--list-checks prints -o table or json, not %q", f.output)
	}
	if f.explain == "all" {
		for i, d := range docs {
			if i > 0 {
				fmt.Fprintln(s.Out)
			}
			fmt.Fprint(s.Out, checks.Explain(d))
		}
		return true, nil
	}
	return true, explainCheck(s, f.explain)
}

// parseFailOn reads --fail-on (doctor, lint, node diagnose).
func parseFailOn(v string) (finding.FailOn, error) {
	f, ok := finding.ParseFailOn(v)
	if !ok {
		return f, Usagef("--fail-on %q: want error, warning, info or none", v)
	}
	return f, nil
}

// options validates the flags and builds the engine's options.
func (f *auditFlags) options() (checks.Options, error) {
	opts := checks.Options{Only: f.only, Skip: f.skip, Spec: f.spec}
	out, err := checkFormat(f.output, report.Formats())
	if err != nil {
		return opts, err
	}
	f.output = out
	if _, err := parseFailOn(f.failOn); err != nil {
		return opts, err
	}
	if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return opts, Incomplete(fmt.Errorf("read --config: %w", err))
		}
		c, err := checks.ParseConfig(b)
		if err != nil {
			return opts, Usage(fmt.Errorf("--config %s: %w", f.config, err))
		}
		opts.Ignores = c.Ignore
	}
	if _, _, err := checks.Selected(opts); err != nil {
		return opts, Usage(err)
	}
	return opts, nil
}

// finish runs the checks, writes the report and maps findings to the exit
// code.
func (f *auditFlags) finish(s Streams, tool string, snap *snapshot.Snapshot, opts checks.Options) error {
	res, err := checks.Run(snap, opts)
	if err != nil {
		return Usage(err)
	}
	return f.report(s, tool, res, snap.Len())
}

// report writes the findings and maps them to the exit code.
func (f *auditFlags) report(s Streams, tool string, res *checks.Result, objects int) error {
	var err error
	if f.output == "table" {
		err = report.TableColor(s.Out, res, objects, termcolor.Auto(s.Out, os.Getenv))
	} else {
		err = report.Write(s.Out, f.output, tool, res, objects)
	}
	if err != nil {
		return Incomplete(fmt.Errorf("write report: %w", err))
	}
	failOn, err := parseFailOn(f.failOn)
	if err != nil {
		return err
	}
	n := 0
	for _, fd := range res.Findings {
		if failOn.Fails(fd.Severity) {
			n++
		}
	}
	for _, d := range res.Diagnostics {
		if failOn.Fails(d.Severity) {
			n++
		}
	}
	if n > 0 {
		return &ExitError{Code: ExitProblem, Err: fmt.Errorf("%s at or above %s", report.Plural(n, "finding"), f.failOn), Silent: true}
	}
	return nil
}

func newDoctorCmd(s Streams) *cobra.Command {
	var f auditFlags
	var timeout time.Duration
	var consistent bool
	sf := specFlags{optional: true}
	kf := kubeclient.NewFlags()
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Audit a live hybrid cluster through the API (read-only)",
		Long: `doctor lists what the hybrid-cluster checks need from the API server (nodes,
workloads, RuntimeClasses, CSRs, Calico resources) and reports what is wrong,
each finding with a one-line fix. It never writes. A check whose objects cannot
be read (forbidden, CRD not installed) is reported as skipped with the reason.

With -f cluster.yaml, doctor also compares the cluster with its spec: a
node of the spec that has no Node object (it never joined, or was deleted)
is a finding (HC209).

Checks have stable IDs and names; --explain prints the documentation of one.
Suppress a finding with the annotation hybridctl.dev/ignore: "HC101,..." on the
object, or with a --config file.

Exit codes: 0 no findings at or above --fail-on; 1 findings at or above it;
2 usage error; 3 the API server could not be reached or listed.`,
		Example: `  # audit the current context
  hybridctl doctor

  # another cluster, JSON for scripts, fail on warnings too
  hybridctl doctor --context lab -o json --fail-on warning

  # and the spec's nodes that never joined
  hybridctl doctor -f cluster.yaml

  # only the Calico checks, skipping one
  hybridctl doctor --checks HC301,HC302,HC303,HC304,HC305,HC306 --skip calico-bgp-enabled

  # what does a check mean?
  hybridctl doctor --explain daemonset-os-selector`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := f.catalogue(s); done {
				return err
			}
			if sf.file != "" {
				r, err := sf.load(cmd.Context(), s.In, s.Err)
				if err != nil {
					return err
				}
				f.spec = specForChecks(r)
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			opts.ConsistentRead = consistent
			if os.Getenv("GOGC") == "" {
				// doctor streams far more than it keeps (150,000 pods
				// decoded, 7,500 kept): collect at 1.5 times the live
				// heap instead of twice, for ~12% more CPU
				// (bench/README.md). GOGC set by the user wins.
				defer debug.SetGCPercent(debug.SetGCPercent(50))
			}
			cfg, err := kf.RESTConfig(s.Err)
			if err != nil {
				return Incomplete(err)
			}
			ctx, cancel := withTimeout(cmd.Context(), timeout)
			defer cancel()
			res, objects, err := checks.Audit(ctx, cfg, opts, kf.Namespace(cmd.Flags()))
			if err != nil {
				return apiFailure(ctx, "doctor", timeout, err)
			}
			return f.report(s, "doctor", res, objects)
		},
	}
	f.register(cmd)
	sf.add(cmd)
	sf.flag.Usage = "cluster spec (cluster.yaml): also report the spec's nodes that are not nodes of the cluster (HC209); - reads standard input"
	cmd.Flags().BoolVar(&consistent, "consistent-read", false,
		"read each type as a watch-list stream at one consistent resourceVersion (several times the API server's CPU, ~1 s more per type) instead of one LIST from its watch cache")
	addTimeout(cmd, &timeout)
	kf.AddFlags(cmd.Flags())
	return cmd
}

// specForChecks is what the checks read from a loaded spec.
func specForChecks(r *spec.Result) *checks.Spec {
	out := &checks.Spec{File: r.File}
	for i, n := range r.Cluster.Spec.Nodes {
		out.Nodes = append(out.Nodes, checks.SpecNode{Name: n.Name, OS: n.OS, Role: n.Role,
			Line: r.Line(fmt.Sprintf("spec.nodes[%d]", i))})
	}
	return out
}

// noObjects is the error for input without a single Kubernetes object: an
// empty pipe must not pass as a clean lint.
func noObjects(args []string, diags []snapshot.Diagnostic) error {
	msg := "no Kubernetes object in the input (" + strings.Join(args, ", ") + ")"
	if len(diags) == 0 {
		return errors.New(msg + ": it is empty, or holds only comments and --- lines; did the command that made it fail?")
	}
	var b strings.Builder
	b.WriteString(msg + ":")
	for i, d := range diags {
		if i == 5 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(diags)-i)
			break
		}
		b.WriteString("\n  " + d.String())
		if d.Fix != "" {
			b.WriteString(" (fix: " + d.Fix + ")")
		}
	}
	return errors.New(b.String())
}

func explainCheck(s Streams, ref string) error {
	docs, err := checks.Catalogue()
	if err != nil {
		return err
	}
	d, ok := checks.Lookup(docs, ref)
	if !ok {
		return Usagef("%s: want an ID (HC101...), a name such as daemonset-os-selector, or all; --list-checks lists them", checks.Unknown(docs, ref))
	}
	fmt.Fprint(s.Out, checks.Explain(d))
	return nil
}

func newLintCmd(s Streams) *cobra.Command {
	var f auditFlags
	var specFile string
	var files []string
	cmd := &cobra.Command{
		Use:   "lint PATH... | -",
		Short: "Run the hybrid-cluster checks on manifests, directories or Helm output",
		Long: `lint runs the same checks as doctor on manifests: YAML or JSON files (several
documents each, List kinds included), directories (searched recursively for
*.yaml, *.yml and *.json) and standard input ("-"), such as the output of
helm template. Findings point at file:line.

Without a cluster, lint reasons from what the input holds: a DaemonSet that
tolerates the Windows taint and has no kubernetes.io/os: linux selector is
reported even when no Windows node is in the input. Checks that need complete
lists from a cluster ("this RuntimeClass does not exist") run only in doctor.
Kinds no check reads (CRDs such as ServiceMonitor) pass through.

A document that cannot be read (broken YAML or JSON, over 32 MiB) is an
error and one that is not a Kubernetes object (a kustomization.yaml) a
warning, each at its file:line in every output format; the other documents
are still checked. Documents, and the items of Lists, are read one at a time.

Exit codes: 0 no findings at or above --fail-on; 1 findings or unreadable
documents at or above it; 2 usage error; 3 a path cannot be read, or the
input holds no Kubernetes object at all (empty input, a failed helm template).`,
		Example: `  # a rendered chart
  helm template ne prometheus-community/prometheus-node-exporter -f values.yaml | hybridctl lint -

  # a directory of manifests, SARIF for code scanning
  hybridctl lint deploy/ -o sarif > hybridctl.sarif

  # fail the pipeline on warnings too
  hybridctl lint deploy/ --fail-on warning

  # -f as kubectl takes it: the same as a path
  hybridctl lint -f deploy/daemonset.yaml -f deploy/deployment.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if done, err := f.catalogue(s); done {
				return err
			}
			args = append(args, files...)
			if len(args) == 0 {
				return Usagef("lint needs at least one path (a file, a directory, or - for stdin), as an argument or with -f")
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			if specFile != "" {
				sf := specFlags{file: specFile}
				r, err := sf.load(cmd.Context(), s.In, s.Err)
				if err != nil {
					return err
				}
				p, err := plan.Derive(r.Cluster, r.Diagnostics)
				if err != nil {
					return Problem(fmt.Errorf("--spec %s: %w", specFile, err))
				}
				for _, n := range p.Nodes {
					if !n.IsWindows() {
						continue
					}
					if opts.WindowsTaintsFrom == "" {
						// A spec without Windows nodes says nothing about their taints.
						opts.WindowsTaints, opts.WindowsTaintsFrom = []snapshot.Taint{}, filepath.Base(specFile)
						for _, t := range n.Taints { // the plan taints every Windows node alike
							opts.WindowsTaints = append(opts.WindowsTaints, snapshot.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
						}
					}
					if n.WindowsBuild != "" {
						opts.WindowsBuilds, opts.WindowsBuildsFrom = append(opts.WindowsBuilds, n.WindowsBuild), filepath.Base(specFile)
					}
				}
			}
			snap, err := snapshot.LoadFiles(cmd.Context(), args, s.In)
			if err != nil {
				return Incomplete(err)
			}
			if snap.Len() == 0 {
				return Incomplete(noObjects(args, snap.Diagnostics))
			}
			return f.finish(s, "lint", snap, opts)
		},
	}
	f.register(cmd)
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a manifest file or directory, or - for stdin, as kubectl apply -f takes it; repeatable, the same as a PATH argument")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Flags().StringVar(&specFile, "spec", "", "cluster spec (cluster.yaml): take the Windows nodes' taints and builds from it instead of assuming the guide's os=windows:NoSchedule and any Windows Server release")
	return cmd
}
