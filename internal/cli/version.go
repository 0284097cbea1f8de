package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/version"
)

// VersionInfo is what `hybridctl version -o json` prints. Every field is
// always present; what is not known is "".
type VersionInfo struct {
	// Version is the release version (v1.2.3, or v0.0.0-DATE-COMMIT
	// between tags), the module version of a go install, or "(devel)".
	Version string `json:"version"`
	// Commit is the commit it was built from; BuildDate that commit's time
	// (RFC 3339, UTC), which a release uses as its build date.
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	// Modified: built from a checkout with uncommitted changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Targets are the versions a spec gets when it names none.
	Targets VersionTargets `json:"targets"`
}

// VersionTargets are the versions hybridctl installs by default: the
// spec's defaults (spec.SetDefaults on an empty spec).
type VersionTargets struct {
	Kubernetes string `json:"kubernetes"`
	Calico     string `json:"calico"`
	Containerd string `json:"containerd"`
}

func buildVersion() VersionInfo {
	in := version.Get()
	var c spec.Cluster
	spec.SetDefaults(&c)
	return VersionInfo{
		Version: in.Version, Commit: in.Commit, BuildDate: in.Date, Modified: in.Modified,
		GoVersion: in.GoVersion, Platform: in.Platform,
		Targets: VersionTargets{
			Kubernetes: c.Spec.KubernetesVersion,
			Calico:     c.Spec.Calico.Version,
			Containerd: c.Spec.Containerd.Version,
		},
	}
}

// orUnknown is s, or "unknown" when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// versionLine is the one line --version prints.
func versionLine(v VersionInfo) string {
	commit := v.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if v.Modified {
		commit += "+modified"
	}
	return fmt.Sprintf("hybridctl %s (commit %s, built %s, %s %s)\n", v.Version, orUnknown(commit), orUnknown(v.BuildDate), v.GoVersion, v.Platform)
}

// writeVersionTable prints v for people, one field a line.
func writeVersionTable(w io.Writer, v VersionInfo) error {
	commit := orUnknown(v.Commit)
	if v.Modified {
		commit += " (with uncommitted changes)"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"VERSION", v.Version},
		{"COMMIT", commit},
		{"BUILD DATE", orUnknown(v.BuildDate)},
		{"GO", v.GoVersion},
		{"PLATFORM", v.Platform},
		{"KUBERNETES", v.Targets.Kubernetes + " (default target)"},
		{"CALICO", v.Targets.Calico + " (default target)"},
		{"CONTAINERD", v.Targets.Containerd + " (default target)"},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func newVersionCmd(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print hybridctl's version, commit, build date and default target versions",
		Long: `Print hybridctl's version, the commit and date it was built from, the Go
toolchain and platform, and the versions of Kubernetes, Calico and containerd
a spec gets when it names none (the spec's defaults).

A release binary carries the version it was stamped with (v1.2.3, or
v0.0.0-DATE-COMMIT between tags); a binary from go install carries its
module version and, from a checkout, the commit. -o json prints every field
for scripts: version, commit, buildDate, modified, goVersion, platform and
targets (kubernetes, calico, containerd). hybridctl --version prints one line.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			format, err := checkFormat(output, []string{FormatTable, "json"})
			if err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			return writeVersionTable(s.Out, v)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", FormatTable, "output format: table (one field a line) or json")
	return cmd
}

func newCompletionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script.

bash: the script needs the bash-completion package (version 2; Debian and
Ubuntu: apt-get install bash-completion, macOS: brew install
bash-completion@2), as kubectl's and Helm's do. Then, for this shell:

  source <(hybridctl completion bash)

and for every new one:

  hybridctl completion bash > ~/.local/share/bash-completion/completions/hybridctl

zsh: source <(hybridctl completion zsh) (compinit must have run; with
oh-my-zsh it has). fish: hybridctl completion fish | source. PowerShell:
hybridctl completion powershell | Out-String | Invoke-Expression.

Besides commands and flags, values are completed: --context, --cluster and
--user from the kubeconfig; -n from the cluster's namespaces (asked with a
deadline of 3 s; nothing is offered when the cluster cannot be reached);
--checks, --skip and --explain with check IDs and names; --only and
--skip-phases with apply's or reset's phase names; --ignore-preflight-errors
with the preflight check names; reset --node with the node names of the
spec -f names; -o with the command's output formats.`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("completion takes exactly one shell name: bash, zsh, fish or powershell")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(s.Out, true)
			case "zsh":
				return root.GenZshCompletion(s.Out)
			case "fish":
				return root.GenFishCompletion(s.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(s.Out)
			}
			return Usagef("unknown shell %q: want bash, zsh, fish or powershell", args[0])
		},
	}
}
