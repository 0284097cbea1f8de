package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// newSpecCmd is `hybridctl spec`: facts about the cluster spec format.
func newSpecCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Facts about the cluster spec format",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the cluster spec",
		Long: `Print the JSON Schema (draft 2020-12) of hybridctl.dev/v1alpha1 Cluster,
generated from the spec's Go types: field descriptions, enums, defaults,
ranges and required fields. It is also docs/cluster.schema.json in the
repository. Editors use it for completion and checks; with the YAML language
server, start the spec with

  # yaml-language-server: $schema=cluster.schema.json

The schema checks each field on its own; 'hybridctl plan' checks everything
(overlapping networks, addresses inside the node network, Windows rules).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := spec.Schema()
			if err != nil {
				return Incomplete(err)
			}
			if _, err := s.Out.Write(b); err != nil {
				return Incomplete(err)
			}
			return nil
		},
	})
	cmd.AddCommand(newSpecEffectiveCmd(s))
	return cmd
}

// newSpecEffectiveCmd is `hybridctl spec effective`: the spec as hybridctl
// reads it, every default filled in.
func newSpecEffectiveCmd(s Streams) *cobra.Command {
	var sf specFlags
	cmd := &cobra.Command{
		Use:   "effective -f cluster.yaml",
		Short: "Print the effective spec: the cluster spec with every default filled in",
		Long: `Print the cluster spec as every command reads it: validated, with every
default filled in (versions, networks, ports, SSH users, the check
workloads' image), as YAML. It is itself a valid spec that plans the same as
the original. An invalid spec prints its problems instead, as plan does.

Exit codes: 0 printed; 1 the spec is invalid; 2 usage error; 3 the file
could not be read.`,
		Example: `  # what a field defaults to
  hybridctl spec effective -f cluster.yaml | grep -A3 checkWorkloads`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := sf.load(cmd.Context(), s.In, s.Err)
			if err != nil {
				return err
			}
			enc := yaml.NewEncoder(s.Out)
			enc.SetIndent(2)
			if err := enc.Encode(r.Cluster); err != nil {
				return Incomplete(fmt.Errorf("writing the effective spec: %w", err))
			}
			return enc.Close()
		},
	}
	sf.add(cmd)
	return cmd
}
