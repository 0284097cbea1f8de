package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/explain"
)

func newExplainCmd(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "explain [ID|NAME|all]",
		Short: "Say what any check, rule or test ID hybridctl prints means, and how to fix it",
		Long: `explain documents every ID hybridctl prints: what it checks, why it matters and
how to fix what it reports, from the catalogue that reports it:

  HC101...  doctor and lint's cluster checks (HC000: a document lint could not check)
  S001...   the spec's rules (plan and every command that reads a spec)
  HC501...  node diagnose's node checks
  swap...   apply's preflight checks (names, as --ignore-preflight-errors takes them)
  signer... csr approve's checks
  dns-fqdn... check connectivity's tests (names)

An ID or a name is matched case-insensitively; a name that two catalogues use
(clock-skew: a preflight check and node check HC505) shows both. Without an
argument explain lists every ID. doctor --explain and lint --explain show the
cluster checks alone.

Exit codes: 0 explained; 2 an unknown ID (with the nearest known one).`,
		Example: `  # a finding's ID from doctor, lint or node diagnose
  hybridctl explain HC101

  # a spec rule, for scripts
  hybridctl explain S102 -o json

  # every ID of every catalogue
  hybridctl explain`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return Usagef("%q takes one ID, got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runExplain(s, output, args)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(explain.Formats(), ", "))
	return cmd
}

func runExplain(s Streams, output string, args []string) error {
	output, err := checkFormat(output, explain.Formats())
	if err != nil {
		return err
	}
	entries, err := explain.Entries()
	if err != nil {
		return Incomplete(err)
	}
	if len(args) == 0 {
		if err := explain.WriteList(s.Out, output, entries); err != nil {
			return Incomplete(fmt.Errorf("write: %w", err))
		}
		return nil
	}
	found, err := explain.Lookup(entries, args[0])
	var unknown *explain.UnknownError
	if errors.As(err, &unknown) {
		return Usage(err)
	}
	if err != nil {
		return Incomplete(err)
	}
	if err := explain.Write(s.Out, output, found); err != nil {
		return Incomplete(fmt.Errorf("write: %w", err))
	}
	return nil
}
