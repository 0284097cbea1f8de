package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/render"
)

type renderFlags struct {
	spec              specFlags
	out, manifestsDir string
	force             bool
	opts              render.Options
}

func newRenderCmd(s Streams) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render -f cluster.yaml -o DIR",
		Short: "Write every file the guide writes by hand, plus a runbook",
		Long: `render writes, from one cluster spec, every artifact the hybrid cluster guide
writes by hand: the kubeadm configuration, Calico's resources, the Windows
RuntimeClasses and kube-proxy, a preparation script and join file for every
node, the check workloads, DNS records and runbook.md - the guide's steps in
order, each with the file it uses and what to check after it.

DIR is written completely or not at all. A non-empty DIR is refused unless
--force is given and DIR is a previous render, which is then replaced.

Join files hold placeholders for the bootstrap token and CA hash unless
--token and --ca-cert-hash are given (then they are written with mode 0600);
hybridctl apply fills the placeholders itself. Secrets are never printed.

See docs/render.md for every file and the guide step it replaces.`,
		Example: `  # the guide's lab
  hybridctl init -o cluster.yaml
  hybridctl render -f cluster.yaml -o out/

  # render again with the join secrets kubeadm printed
  hybridctl render -f cluster.yaml -o out/ --force \
      --token 6w1r8t.p3k9m2x7c5v0b4n1 --ca-cert-hash sha256:7b2e...f7b

  # air-gapped: Calico's manifests from a local copy of the release
  hybridctl render -f cluster.yaml -o out/ --manifests-dir ./calico-v3.33.0/manifests`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd, s, f) },
	}
	fl := cmd.Flags()
	f.spec.add(cmd)
	fl.StringVarP(&f.out, "output-dir", "o", "", "directory to write (required)")
	fl.BoolVar(&f.force, "force", false, "replace DIR when it holds a previous render")
	fl.StringVar(&f.opts.Token, "token", "", "bootstrap token for the join files (kubeadm token create)")
	fl.StringVar(&f.opts.CACertHash, "ca-cert-hash", "", "discovery CA hash for the join files (sha256:...)")
	fl.StringVar(&f.opts.CertificateKey, "certificate-key", "", "control-plane certificate key for further control-plane nodes' join files (kubeadm init --upload-certs)")
	fl.StringVar(&f.manifestsDir, "manifests-dir", "", "directory with Calico's CRD and operator manifests to copy (air-gapped sites)")
	fl.StringVar(&f.opts.InstallContainerdURL, "install-containerd-url", "", "URL of Install-Containerd.ps1 (default: sig-windows-tools at "+render.SigWindowsToolsCommit[:12]+")")
	fl.StringVar(&f.opts.InstallContainerdSHA256, "install-containerd-sha256", "", "SHA256 of the script at --install-containerd-url (empty: not checked)")
	fl.StringVar(&f.opts.PrepareNodeURL, "prepare-node-url", "", "URL of PrepareNode.ps1 (default: sig-windows-tools at "+render.SigWindowsToolsCommit[:12]+")")
	fl.StringVar(&f.opts.PrepareNodeSHA256, "prepare-node-sha256", "", "SHA256 of the script at --prepare-node-url (empty: not checked)")
	fl.StringVar(&f.opts.CSRApproverImage, "csr-approver-image", "", "also write cluster/csr-approver.yaml: the verified kubelet-serving CSR approver as an in-cluster Deployment running this hybridctl image")
	return cmd
}

func runRender(cmd *cobra.Command, s Streams, f *renderFlags) error {
	ctx := cmd.Context()
	if f.out == "" {
		return Usagef("-o/--output-dir is required: the directory to write")
	}
	if (f.opts.InstallContainerdSHA256 != "" && f.opts.InstallContainerdURL == "") || (f.opts.PrepareNodeSHA256 != "" && f.opts.PrepareNodeURL == "") {
		return Usagef("a --*-sha256 flag needs its --*-url flag")
	}
	if err := f.opts.Validate(); err != nil {
		return Usage(err)
	}
	res, err := f.spec.load(ctx, s.In, s.Err)
	if err != nil {
		return err
	}
	if f.opts.CSRApproverImage != "" {
		// The approver checks addresses against the effective spec.
		if f.opts.CSRApproverSpec, err = yaml.Marshal(res.Cluster); err != nil {
			return Incomplete(err)
		}
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		return Problem(fmt.Errorf("%s: %w", res.File, err))
	}
	if f.manifestsDir != "" {
		m, err := render.ReadManifests(ctx, f.manifestsDir, p)
		if err != nil {
			return Problem(err)
		}
		f.opts.Manifests = m
	}
	files, err := render.Render(p, f.opts)
	if err != nil {
		return Problem(err)
	}
	if err := render.WriteDir(ctx, f.out, files, f.force); err != nil {
		if errors.Is(err, render.ErrNotEmpty) {
			return Usage(err)
		}
		return Incomplete(err)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(s.Err, "warning: %s: %s\n", w.Path, w.Message)
	}
	fmt.Fprintf(s.Out, "wrote %d files to %s; start with %s\n", len(files)+1, f.out, "runbook.md")
	return nil
}
