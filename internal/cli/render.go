package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

type renderFlags struct {
	spec              specFlags
	out, manifestsDir string
	force             bool
	opts              render.Options
	// tokenFile and certificateKeyFile name files holding the secrets ("-":
	// standard input), so that they stay out of argv.
	tokenFile, certificateKeyFile string
}

// The environment variables render reads the join secrets from when no
// flag gives them.
const (
	envJoinToken      = "HYBRIDCTL_JOIN_TOKEN"
	envCertificateKey = "HYBRIDCTL_CERTIFICATE_KEY"
)

// maxSecretFile bounds a --token-file or --certificate-key-file: the
// secrets are 23 and 64 characters.
const maxSecretFile = 4096

func newRenderCmd(s Streams) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render -f cluster.yaml --output-dir DIR",
		Short: "Write every file the guide writes by hand, plus a runbook",
		Long: `render writes, from one cluster spec, every artifact the hybrid cluster guide
writes by hand: the kubeadm configuration, Calico's resources, the Windows
RuntimeClasses and kube-proxy, a preparation script and join file for every
node, the check workloads, DNS records and runbook.md - the guide's steps in
order, each with the file it uses and what to check after it.

DIR is written completely or not at all. A non-empty DIR is refused unless
--force is given and DIR is a previous render, which is then replaced.
--force never deletes a file render did not write: DIR's .hybridctl-render
lists what render wrote, and anything else in DIR (a NOTES.md, a .git/)
makes it refuse, naming the files (exit 2).

Join files hold placeholders for the bootstrap token and CA hash unless both
are given (then they are written with mode 0600); one without the other is a
usage error. hybridctl apply fills the placeholders itself. Secrets are never
printed. Give the token and the certificate key so that they stay out of ps
and shell history: --token-file FILE or --certificate-key-file FILE ("-" reads
standard input), or $` + envJoinToken + ` and $` + envCertificateKey + `.
--token and --certificate-key on the command line still work, with a warning.

See docs/render.md for every file and the guide step it replaces.`,
		Example: `  # the guide's lab
  hybridctl init --output-file cluster.yaml
  hybridctl render -f cluster.yaml --output-dir out/

  # render again with the join secrets: the token on standard input
  ssh user@k8s-lab-master-1 sudo kubeadm token create \
    | hybridctl render -f cluster.yaml --output-dir out/ --force --token-file - \
        --ca-cert-hash sha256:7b2e4d0c9f1a8e3b6c5d2f0e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b

  # air-gapped: Calico's manifests from a local copy of the release
  hybridctl render -f cluster.yaml --output-dir out/ --manifests-dir ./calico-v3.33.0/manifests`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd, s, f) },
	}
	fl := cmd.Flags()
	f.spec.add(cmd)
	fl.StringVar(&f.out, "output-dir", "", "directory to write (required)")
	// -o selects an output format in every other command; -o DIR is kept,
	// hidden, for scripts written against earlier releases.
	fl.StringVarP(&f.out, "output", "o", "", "directory to write")
	_ = fl.MarkHidden("output")
	fl.BoolVar(&f.force, "force", false, "replace DIR when it holds a previous render")
	fl.StringVar(&f.opts.Token, "token", "", "bootstrap token for the join files (kubeadm token create); visible in ps: prefer --token-file or $"+envJoinToken)
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the bootstrap token (- reads standard input)")
	fl.StringVar(&f.opts.CACertHash, "ca-cert-hash", "", "discovery CA hash for the join files (sha256:...)")
	fl.StringVar(&f.opts.CertificateKey, "certificate-key", "", "control-plane certificate key for further control-plane nodes' join files (kubeadm init --upload-certs); visible in ps: prefer --certificate-key-file or $"+envCertificateKey)
	fl.StringVar(&f.certificateKeyFile, "certificate-key-file", "", "file holding the certificate key (- reads standard input)")
	fl.StringVar(&f.manifestsDir, "manifests-dir", "", "directory with Calico's CRD and operator manifests to copy (air-gapped sites)")
	fl.StringVar(&f.opts.InstallContainerdURL, "install-containerd-url", "", "URL of Install-Containerd.ps1 (default: sig-windows-tools at "+render.SigWindowsToolsCommit[:12]+"; not with packages.source: bundle)")
	fl.StringVar(&f.opts.InstallContainerdSHA256, "install-containerd-sha256", "", "SHA256 of the script at --install-containerd-url (empty: not checked)")
	fl.StringVar(&f.opts.PrepareNodeURL, "prepare-node-url", "", "URL of PrepareNode.ps1 (default: sig-windows-tools at "+render.SigWindowsToolsCommit[:12]+"; not with packages.source: bundle)")
	fl.StringVar(&f.opts.PrepareNodeSHA256, "prepare-node-sha256", "", "SHA256 of the script at --prepare-node-url (empty: not checked)")
	fl.StringVar(&f.opts.CSRApproverImage, "csr-approver-image", "", "also write cluster/csr-approver.yaml: the verified kubelet-serving CSR approver as an in-cluster Deployment running this hybridctl image")
	return cmd
}

func runRender(cmd *cobra.Command, s Streams, f *renderFlags) error {
	ctx := cmd.Context()
	warnOldFlag(cmd, s, "output", "--output-dir")
	if f.out == "" {
		return Usagef("--output-dir is required: the directory to write")
	}
	if (f.opts.InstallContainerdSHA256 != "" && f.opts.InstallContainerdURL == "") || (f.opts.PrepareNodeSHA256 != "" && f.opts.PrepareNodeURL == "") {
		return Usagef("a --*-sha256 flag needs its --*-url flag")
	}
	if err := f.readSecrets(cmd, s); err != nil {
		return err
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
	if err := f.opts.ValidateFor(p); err != nil {
		return Usage(fmt.Errorf("%s: %w", res.File, err))
	}
	if f.manifestsDir != "" {
		m, err := render.ReadManifests(ctx, f.manifestsDir, p)
		if err != nil {
			return Problem(err)
		}
		f.opts.Manifests = m
	}
	// The runbook's commands that render again name this directory.
	f.opts.OutputDir = f.out
	if err := render.Check(p, f.opts); err != nil {
		return Problem(err)
	}
	// Each file goes to disk as it is rendered: memory grows with a few
	// nodes' files, not with the cluster.
	n, err := render.WriteEach(ctx, f.out, f.force, func(emit func(render.File) error) error {
		return render.Each(p, f.opts, emit)
	})
	if err != nil {
		if errors.Is(err, render.ErrNotEmpty) || errors.Is(err, render.ErrForeign) {
			return Usage(err)
		}
		return Incomplete(err)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(s.Err, "warning: %s: %s\n", w.Path, termtext.Line(w.Message))
	}
	fmt.Fprintf(s.Out, "wrote %d files to %s; start with %s\n", n, f.out, "runbook.md")
	return nil
}

// readSecrets fills the token and the certificate key from, in this order,
// the flag itself (with a warning: argv is visible in ps and kept in shell
// history), the --*-file flag, or the environment. Two sources for one
// secret, or standard input asked for twice, are usage errors.
func (f *renderFlags) readSecrets(cmd *cobra.Command, s Streams) error {
	stdinUsers := 0
	if f.spec.file == "-" {
		stdinUsers++
	}
	for _, sec := range []struct {
		flag, fileFlag, env string
		file                string
		value               *string
	}{
		{"--token", "--token-file", envJoinToken, f.tokenFile, &f.opts.Token},
		{"--certificate-key", "--certificate-key-file", envCertificateKey, f.certificateKeyFile, &f.opts.CertificateKey},
	} {
		inArgv := cmd.Flags().Changed(sec.flag[2:])
		switch {
		case inArgv && sec.file != "":
			return Usagef("%s and %s both give the secret: use one", sec.flag, sec.fileFlag)
		case inArgv:
			fmt.Fprintf(s.Err, "warning: %s on the command line is visible to other users (ps) and kept in shell history; use %s FILE|- or $%s\n", sec.flag, sec.fileFlag, sec.env)
		case sec.file == "-":
			if stdinUsers++; stdinUsers > 1 {
				return Usagef("%s -: standard input is already used (by -f - or another --*-file -)", sec.fileFlag)
			}
			v, err := readSecret(s.In)
			if err != nil {
				return Incomplete(fmt.Errorf("%s: reading standard input: %w", sec.fileFlag, err))
			}
			*sec.value = v
		case sec.file != "":
			fh, err := os.Open(sec.file)
			if err != nil {
				return Incomplete(fmt.Errorf("%s: %w", sec.fileFlag, err))
			}
			v, err := readSecret(fh)
			fh.Close()
			if err != nil {
				return Incomplete(fmt.Errorf("%s %s: %w", sec.fileFlag, sec.file, err))
			}
			*sec.value = v
		default:
			*sec.value = strings.TrimSpace(os.Getenv(sec.env))
		}
		if (sec.file != "") && *sec.value == "" {
			return Usagef("%s %s: empty; it must hold the secret", sec.fileFlag, sec.file)
		}
	}
	return nil
}

// readSecret reads one secret: at most maxSecretFile bytes, surrounding
// white space (the newline kubeadm prints) removed.
func readSecret(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("over %d bytes: not a token or key", maxSecretFile)
	}
	return strings.TrimSpace(string(b)), nil
}
