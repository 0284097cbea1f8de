package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// usage writes a command's usage as cobra's default does, with one
// difference: the Kubernetes connection flags (--kubeconfig, --context,
// --server, the impersonation flags, -v and the others kubeclient adds)
// come after the command's own flags, under a heading of their own, as
// kubectl shows its global options apart.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, connection := splitFlags(c.LocalFlags())
	if s := own.FlagUsages(); strings.TrimSpace(s) != "" {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", strings.TrimRight(s, " \t\n"))
	}
	if s := connection.FlagUsages(); strings.TrimSpace(s) != "" {
		fmt.Fprintf(&b, "\n\nKubernetes connection flags (as kubectl's):\n%s", strings.TrimRight(s, " \t\n"))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", strings.TrimRight(c.InheritedFlags().FlagUsages(), " \t\n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

// splitFlags parts fs into the command's own flags and the connection
// flags (kubeclient.IsConnectionFlag).
func splitFlags(fs *pflag.FlagSet) (own, connection *pflag.FlagSet) {
	own = pflag.NewFlagSet("own", pflag.ContinueOnError)
	connection = pflag.NewFlagSet("connection", pflag.ContinueOnError)
	fs.VisitAll(func(fl *pflag.Flag) {
		if kubeclient.IsConnectionFlag(fl) {
			connection.AddFlag(fl)
		} else {
			own.AddFlag(fl)
		}
	})
	return own, connection
}
