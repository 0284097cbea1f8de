package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// VersionInfo is what `hybridctl version -o json` prints.
type VersionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	Revision  string `json:"revision,omitempty"`
}

func buildVersion() VersionInfo {
	v := VersionInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Revision = s.Value
			}
		}
	}
	return v
}

func newVersionCmd(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print hybridctl's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			switch output {
			case "", "text", "table":
				fmt.Fprintf(s.Out, "hybridctl %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
				return nil
			case "json":
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			default:
				return Usagef("unknown output format %q (want text or json)", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func newCompletionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. For example, for bash:

  source <(hybridctl completion bash)

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
