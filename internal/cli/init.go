package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/adopt"
	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

func newInitCmd(s Streams) *cobra.Command {
	var out, name string
	var force, fromCluster bool
	var timeout time.Duration
	kf := kubeclient.NewFlags().WithoutNamespace()
	cmd := &cobra.Command{
		Use:   "init [--output-file cluster.yaml] [--from-cluster [--context NAME]]",
		Short: "Write a cluster spec: the guide's lab as an example, or one describing a running kubeadm cluster",
		Long: `Without --from-cluster, init writes an example cluster spec: the guide's lab
of one control plane, two Linux workers and one Windows Server 2025 worker.
Every field carries a comment with its meaning and default. Edit names,
addresses and versions, then run 'hybridctl plan -f cluster.yaml'.

With --from-cluster, init reads a running kubeadm cluster (--kubeconfig,
--context; read-only) and writes a spec that describes it, to adopt it: the
Kubernetes version, controlPlaneEndpoint, pod and service networks and DNS
domain (kube-system/kubeadm-config), kube-proxy's mode, the kubelet's
cgroup settings, every Node with its address, role, OS and Windows build,
and Calico's encapsulation, block size and BGP setting when the Tigera
operator runs it. What the cluster cannot tell (SSH users, the nodes' DNS
and NTP servers) is written as commented fields to fill in. What hybridctl
cannot manage as it is (a CNI it does not know, an IPIP or BGP pool where
Windows needs VXLAN) is listed as notes at the top of the file and on
standard error, with what to change; nothing is rewritten. 'hybridctl diff'
then shows what apply would change: nothing on the nodes already there.
A cluster kubeadm did not build is refused (exit 1).

init refuses to overwrite an existing file unless --force is given; the
file is written atomically. '-o -' prints the spec instead.`,
		Example: `  hybridctl init                   # writes ./cluster.yaml (the guide's lab)
  hybridctl init --output-file lab.yaml
  hybridctl init --output-file - | less

  # describe the cluster of the current context, to add a Windows worker to it
  hybridctl init --from-cluster --output-file cluster.yaml
  hybridctl init --from-cluster --context kubernetes-admin@kubernetes --name prod --output-file prod.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warnOldFlag(cmd, s, "output", "--output-file")
			data := examples.Lab
			if fromCluster {
				ctx, cancel := withTimeout(cmd.Context(), timeout)
				defer cancel()
				cfg, err := kf.RESTConfig(s.Err)
				if err != nil {
					return Incomplete(err)
				}
				a, err := adopt.Read(ctx, cfg, name)
				switch {
				case errors.Is(err, adopt.ErrNotKubeadm):
					return Problem(err)
				case err != nil:
					return apiFailure(ctx, "reading the cluster", timeout, err)
				}
				source := "context " + *kf.Config.Context
				if *kf.Config.Context == "" {
					source = "the current context"
				}
				data = a.YAML(source)
				for _, n := range a.Notes {
					fmt.Fprintf(s.Err, "%s: %s: %s\n", n.Severity, termtext.Line(n.Path), termtext.Line(n.Message))
				}
			} else if cmd.Flags().Changed("name") {
				return Usagef("--name is for --from-cluster (the example is the guide's lab)")
			}
			if out == "-" {
				_, err := s.Out.Write(data)
				return err
			}
			err := atomicfile.Write(cmd.Context(), out, data, 0o644, atomicfile.Options{NoClobber: !force})
			if errors.Is(err, atomicfile.ErrExists) {
				return Usagef("%s already exists; use --force to overwrite it", out)
			}
			if err != nil {
				return Incomplete(err)
			}
			// Success messages go to standard output in every command
			// (render, bundle download, kubeconfig import).
			fmt.Fprintf(s.Out, "wrote %s; next: hybridctl plan -f %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "output-file", "cluster.yaml", "file to write; - prints to standard output")
	// -o selects an output format in every other command; -o FILE is kept,
	// hidden, for scripts written against earlier releases.
	cmd.Flags().StringVarP(&out, "output", "o", "cluster.yaml", "file to write")
	_ = cmd.Flags().MarkHidden("output")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	cmd.Flags().BoolVar(&fromCluster, "from-cluster", false, "describe the running kubeadm cluster of --kubeconfig/--context instead of writing the example")
	cmd.Flags().StringVar(&name, "name", "", "with --from-cluster: the spec's metadata.name (default: kubeadm's clusterName)")
	cmd.Flags().DurationVar(&timeout, "timeout", DefaultReadTimeout, "with --from-cluster: give up when reading the cluster has not finished by then")
	kf.AddFlags(cmd.Flags())
	return cmd
}
