package cli

import (
	"github.com/spf13/cobra"

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
	return cmd
}
