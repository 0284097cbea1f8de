package cli

import (
	"errors"
	"fmt"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/spf13/cobra"
)

func newInitCmd(s Streams) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "init [-o cluster.yaml]",
		Short: "Write an example cluster spec (the guide's lab) with a comment on every field",
		Long: `Write an example cluster spec: the guide's lab of one control plane, two
Linux workers and one Windows Server 2025 worker. Every field carries a
comment with its meaning and default. Edit names, addresses and versions,
then run 'hybridctl plan -f cluster.yaml'.

init refuses to overwrite an existing file unless --force is given; the
file is written atomically. '-o -' prints the spec instead.`,
		Example: `  hybridctl init                   # writes ./cluster.yaml
  hybridctl init -o lab.yaml
  hybridctl init -o - | less`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "-" {
				_, err := s.Out.Write(examples.Lab)
				return err
			}
			err := atomicfile.Write(cmd.Context(), out, examples.Lab, 0o644, atomicfile.Options{NoClobber: !force})
			if errors.Is(err, atomicfile.ErrExists) {
				return Usagef("%s already exists; use --force to overwrite it", out)
			}
			if err != nil {
				return Incomplete(err)
			}
			fmt.Fprintf(s.Err, "Wrote %s. Next: hybridctl plan -f %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "cluster.yaml", "file to write; - prints to standard output")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return cmd
}
