package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/termcolor"
)

type planOptions struct {
	spec   specFlags
	output string
}

func newPlanCmd(s Streams) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan -f cluster.yaml",
		Short: "Validate a cluster spec and print its address plan, ports, DNS records and topology",
		Long: `Validate a cluster spec and print what hybridctl derives from it: the node
table (max pods, RuntimeClass, taints), the pod, service and node networks
(API service IP, DNS service IP, blocks), the VXLAN overlay and pod MTU,
the Calico manifests that apply, the ports to open, the DNS records to
create, warnings and a topology diagram. plan touches nothing.

Every problem in the spec is reported at once, one per line, with its file,
line and field path:

  cluster.yaml:42: spec.nodes[3].name: "k8s-lab-windows-01" is 18 characters; a Windows computer name is at most 15 [S301 windows-computer-name]

Exit codes: 0 the spec is valid (warnings may be printed); 1 the spec is
invalid; 2 usage error; 3 the file could not be read.`,
		Example: `  # The guide's lab
  hybridctl plan -f examples/lab.yaml

  # For scripts: the derived numbers as JSON (or the same object as YAML)
  hybridctl plan -f cluster.yaml -o json | jq '.nodes[] | {name, maxPods, runtimeClass}'

  # The effective spec, with every default filled in
  hybridctl spec effective -f cluster.yaml`,
		// kubeadm, kubectl and Helm users look for a validate command.
		SuggestFor: []string{"validate", "check-spec"},
		Args:       noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := checkFormat(o.output, []string{FormatTable, "json", "yaml"})
			if err != nil {
				return err
			}
			o.output = out
			if o.output != FormatTable {
				o.spec.problemsOut, o.spec.problemsFormat = s.Out, o.output
			}
			r, err := o.spec.load(cmd.Context(), s.In, s.Err)
			if err != nil {
				return err
			}
			p, err := plan.Derive(r.Cluster, r.Diagnostics)
			if err != nil {
				return Problem(err)
			}
			p.LocateWarnings(r.File, r.Line)
			if o.output != FormatTable {
				return encodeAs(s.Out, o.output, p)
			}
			return p.WriteTextColor(s.Out, termcolor.Auto(s.Out, os.Getenv))
		},
	}
	o.spec.add(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table; json or yaml (the derived plan, or {\"problems\":[...]} for an invalid spec, one object in either encoding; the effective spec is 'hybridctl spec effective')")
	return cmd
}
