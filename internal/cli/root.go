// Package cli holds hybridctl's cobra commands. Each command is a flags
// struct and one call into a domain package; nothing here decides what is
// right or wrong about a cluster.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/suggest"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// Streams are the standard streams a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// commands is the ordered list of top-level commands. Adding a command means
// adding one line here: there is no init() registration.
func commands(s Streams) []*cobra.Command {
	return []*cobra.Command{
		graceful(newInitCmd(s), ""),
		newPlanCmd(s),
		graceful(newRenderCmd(s), ""),
		graceful(newApplyCmd(s), ""),
		graceful(newResetCmd(s), ""),
		newDiffCmd(s),
		graceful(newUpgradeCmd(s), ""),
		newCSRCmd(s),
		newBundleCmd(s),
		newKubeconfigCmd(s),
		newVersionCmd(s),
		newDoctorCmd(s),
		newNodeCmd(s),
		newLintCmd(s),
		newExplainCmd(s),
		newSpecCmd(s),
		newCheckCmd(s),
		newCompletionCmd(s),
	}
}

// NewRootCmd builds the hybridctl command tree.
func NewRootCmd(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "hybridctl",
		Short: "Build, verify and keep healthy hybrid Linux/Windows Kubernetes clusters",
		Long: `hybridctl builds and audits hybrid Kubernetes clusters: a kubeadm control
plane, Linux workers and Windows Server workers, networked by Calico in VXLAN
mode.

Start from one declarative spec:

  hybridctl init --output-file cluster.yaml           # a commented example (the guide's lab)
  hybridctl plan -f cluster.yaml           # validate; address plan, ports, diagram
  hybridctl render -f cluster.yaml --output-dir out  # every file the guide writes by hand, and a runbook
  hybridctl diff -f cluster.yaml           # what apply would change (read-only)
  hybridctl apply -f cluster.yaml          # provision the nodes over SSH, phase by phase
  hybridctl bundle download -f cluster.yaml -d bundle/   # the files of an offline install

Keep any hybrid cluster healthy, built by hybridctl or not:

  hybridctl doctor                         # audit a live cluster (read-only)
  helm template ... | hybridctl lint -     # the same checks on manifests
  hybridctl check connectivity             # pod, Service, DNS and node tests across the OSes
  hybridctl explain HC101                  # what any check, rule or test ID means
  hybridctl csr approve                    # kubelet serving certificates, verified
  hybridctl kubeconfig import admin.conf --name lab   # without the merge trap

Exit codes: 0 success; 1 the thing checked is wrong (invalid spec, findings,
failed phase); 2 usage error; 3 could not complete (I/O, unreachable API).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	// --version prints one line (cobra's flag, with hybridctl's template);
	// `hybridctl version` prints every field.
	root.Version = buildVersion().Version
	root.SetVersionTemplate(versionLine(buildVersion()))
	// Declared here so that cobra does not give it -v, which every command
	// that talks to the API uses for its log level, as kubectl does.
	root.Flags().Bool("version", false, "print hybridctl's version in one line (hybridctl version: every field)")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	root.SetUsageFunc(usage)
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range commands(s) {
		root.AddCommand(c)
	}
	addCompletions(root)
	return root
}

// Main runs hybridctl with args and returns the process exit code. It is the
// only place that turns errors into exit codes; main.main calls os.Exit.
func Main(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	return runMain(ctx, args, Streams{In: in, Out: out, Err: errOut}, nil)
}

// runMain is Main; started, when set, is called with the command about to run
// (its flags parsed).
func runMain(ctx context.Context, args []string, s Streams, started func(*cobra.Command)) int {
	errOut := s.Err
	root := NewRootCmd(s)
	root.SetArgs(args)
	if started != nil {
		root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { started(cmd) }
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if !errors.As(err, &ee) && isCobraUsageError(err) {
		err = Usage(err)
	}
	if !errors.As(err, &ee) || !ee.Silent {
		// Errors echo input (names, paths, what a node or the API
		// said): escaped, newlines kept.
		fmt.Fprintf(errOut, "Error: %s\n", termtext.Text(err.Error()))
		if codeOf(err) == ExitUsage {
			if cmd == nil {
				cmd = root
			}
			fmt.Fprintf(errOut, "See '%s --help'.\n", cmd.CommandPath())
		}
	}
	return codeOf(err)
}

// isCobraUsageError recognises the errors cobra itself returns for bad
// command lines (it has no typed errors for these).
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	// A spec given as an argument, as kubectl users type it: say how.
	if len(args) == 1 && cmd.Flags().Lookup("filename") != nil && looksLikeSpecFile(args[0]) {
		return Usagef("%s reads the spec from -f: %s -f %s", cmd.CommandPath(), cmd.CommandPath(), args[0])
	}
	msg := fmt.Sprintf("%q takes no arguments, got %q", cmd.CommandPath(), args)
	if cmd.HasAvailableSubCommands() {
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		if sub, ok := suggest.Closest(args[0], names); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", cmd.CommandPath()+" "+sub)
		}
	}
	return Usagef("%s", msg)
}

// looksLikeSpecFile reports whether an argument names a YAML or JSON file.
func looksLikeSpecFile(arg string) bool {
	switch strings.ToLower(filepath.Ext(arg)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return arg == "-"
}
