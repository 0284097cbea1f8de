package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

func newBundleCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle list|download|verify -f cluster.yaml",
		Short: "List, download and verify the files an offline install needs (packages.source: bundle)",
		Long: `A bundle is a directory holding every binary and manifest an install of the
spec's cluster needs without the internet, with a SHA256SUMS file:

  DIR/SHA256SUMS                   sha256sum format, sorted by path
  DIR/linux-amd64/...              containerd, runc, CNI plugins, crictl, kubelet, kubeadm, kubectl
  DIR/windows-amd64/...            containerd, crictl, kubelet.exe, kubeadm.exe, kubectl.exe, nssm
                                   (only when a node runs Windows)
  DIR/manifests/...                the Calico manifests and add-on manifests apply applies

File names are the upstream release file names, at the spec's versions.
Make the bundle on a machine with the internet (bundle download), carry the
directory to the workstation that runs apply, check it there (bundle
verify), and install from it (packages.source: bundle, apply --bundle DIR).
Images are not in the bundle: they come from images.registry.

See docs/bundle.md for each file and where its checksum comes from.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBundleListCmd(s), graceful(newBundleDownloadCmd(s), ""), newBundleVerifyCmd(s))
	return cmd
}

// bundleArtifacts loads the spec and computes its artifact list.
func bundleArtifacts(ctx context.Context, sf *specFlags, s Streams) (*plan.Plan, []bundle.Artifact, error) {
	r, err := sf.load(ctx, s.In, s.Err)
	if err != nil {
		return nil, nil, err
	}
	p, err := plan.Derive(r.Cluster, r.Diagnostics)
	if err != nil {
		return nil, nil, Problem(err)
	}
	arts, err := bundle.Artifacts(p)
	if err != nil {
		return nil, nil, Problem(fmt.Errorf("%s: %w", r.File, err))
	}
	return p, arts, nil
}

type bundleListOptions struct {
	spec   specFlags
	output string
}

func newBundleListCmd(s Streams) *cobra.Command {
	o := &bundleListOptions{}
	cmd := &cobra.Command{
		Use:   "list -f cluster.yaml",
		Short: "Every file of the spec's bundle with its path, upstream URL and checksum source",
		Long: `List every file the spec's bundle holds, in the order apply uses them: where
it is used (linux, windows, or workstation for manifests apply sends to the
API server), its name and version, its path in the bundle, its upstream URL,
and where its sha256 comes from:

  upstream-file    the upstream publishes a checksum file beside it (its URL is
                   checksumURL in -o json); bundle download checks against it
  first-download   the upstream publishes none (nssm, manifests): bundle
                   download records the sha256 of what it received; compare it
                   with a second source before you trust the bundle
  pinned           hybridctl's source fixes it (sha256 in -o json)

list reads nothing but the spec and connects to nothing.

Exit codes: 0 listed; 1 the spec is invalid; 2 usage error; 3 the spec could
not be read.`,
		Example: `  hybridctl bundle list -f cluster.yaml
  # for scripts: [{"name","os","version","path","url","sha256","checksumFrom","checksumURL","purpose"}]
  hybridctl bundle list -f cluster.yaml -o json | jq -r '.[] | select(.os=="linux") | .url'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := checkFormat(o.output, []string{FormatTable, "json"})
			if err != nil {
				return err
			}
			o.output = out
			_, arts, err := bundleArtifacts(cmd.Context(), &o.spec, s)
			if err != nil {
				return err
			}
			if o.output == "json" {
				if arts == nil {
					arts = []bundle.Artifact{}
				}
				return writeJSON(s.Out, arts)
			}
			tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "OS\tNAME\tVERSION\tPATH\tCHECKSUM\tURL")
			for _, a := range arts {
				sum := a.ChecksumFrom
				if a.SHA256 != "" {
					sum = a.SHA256
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.OS, a.Name, termtext.Line(a.Version), termtext.Line(a.Path), termtext.Line(sum), termtext.Line(a.URL))
			}
			if err := tw.Flush(); err != nil {
				return Incomplete(err)
			}
			return nil
		},
	}
	o.spec.add(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table or json (an array of {name, os, version, path, url, sha256, checksumFrom, checksumURL, purpose})")
	return cmd
}

type bundleDownloadOptions struct {
	spec        specFlags
	dir         string
	mirror      string
	timeout     time.Duration
	idleTimeout time.Duration
}

func newBundleDownloadCmd(s Streams) *cobra.Command {
	o := &bundleDownloadOptions{}
	cmd := &cobra.Command{
		Use:   "download -f cluster.yaml -d DIR [--mirror URL]",
		Short: "Download the spec's bundle into DIR (on a machine with the internet)",
		Long: `Download every file of 'bundle list' into DIR, check each against the
upstream's published checksum, and write DIR/SHA256SUMS last.

It is safe to interrupt and to run again:
  - each file is written to a temporary file beside it and renamed into place
    only when its sha256 is right: an interrupted run leaves the old file or
    none, never a part (Ctrl-C stops cleanly; a second Ctrl-C exits at once);
  - a file already in DIR with the right sha256 is not fetched again;
  - SHA256SUMS keeps the lines of files in DIR the spec does not name (one
    directory can hold the bundle of several specs); it is written only when
    every file is in place.

Every request has a deadline (--timeout from start to the last byte,
--idle-timeout for each wait for data); a file is capped at 1 GiB. The
proxy settings of the environment (HTTPS_PROXY, NO_PROXY) apply.

--mirror URL fetches from a site mirror instead: each upstream URL's scheme
and host are replaced, https://dl.k8s.io/release/... becoming
URL/dl.k8s.io/release/..., so a mirror serves the upstream paths under a
directory per host (github.com, dl.k8s.io, raw.githubusercontent.com,
k8stestinfrabinaries.blob.core.windows.net).

Files whose upstream publishes no checksum (nssm, the manifests) are
recorded with the sha256 of what was received, and the command says so:
compare those with a second source.

Exit codes: 0 every file is in DIR and SHA256SUMS is written; 1 the spec is
invalid or a file did not match its checksum (nothing of it was kept);
2 usage error; 3 could not complete (network, deadline, disk, interrupted:
run it again to resume).`,
		Example: `  # on a machine with the internet
  hybridctl bundle download -f cluster.yaml -d bundle/
  # from the site's mirror of the release sites
  hybridctl bundle download -f cluster.yaml -d bundle/ --mirror https://mirror.example.internal/upstream
  # carry bundle/ to the workstation, then
  hybridctl bundle verify -f cluster.yaml -d bundle/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.dir == "" {
				return Usagef("-d/--dir is required: the directory to download the bundle into")
			}
			if o.timeout <= 0 || o.idleTimeout <= 0 {
				return Usagef("--timeout and --idle-timeout must be positive")
			}
			if o.mirror != "" {
				if _, err := bundle.MirrorURL(o.mirror, "https://dl.k8s.io/"); err != nil {
					return Usage(err)
				}
			}
			_, arts, err := bundleArtifacts(cmd.Context(), &o.spec, s)
			if err != nil {
				return err
			}
			var unpinned []bundle.Result
			opts := bundle.DownloadOptions{
				Mirror: o.mirror, RequestTimeout: o.timeout, IdleTimeout: o.idleTimeout,
				Progress: func(r bundle.Result) {
					fmt.Fprintf(s.Out, "%-10s  %s  %s  sha256 %s (%s)\n", r.Action, termtext.Line(r.Artifact.Path), size(r.Bytes), r.SHA256, termtext.Line(r.ChecksumFrom))
					if r.ChecksumFrom == bundle.ChecksumNone {
						unpinned = append(unpinned, r)
					}
				},
			}
			_, err = bundle.Download(cmd.Context(), o.dir, arts, opts)
			var ce *bundle.ChecksumError
			switch {
			case errors.As(err, &ce):
				return Problem(err)
			case err != nil:
				return Incomplete(err)
			}
			fmt.Fprintf(s.Out, "wrote %s (%d files)\n", termtext.Line(filepath.Join(o.dir, bundle.SumsFile)), len(arts))
			for _, r := range unpinned {
				fmt.Fprintf(s.Err, "note: %s: %s publishes no checksum; recorded sha256 %s of what was received: compare it with a second source\n", termtext.Line(r.Artifact.Path), termtext.Line(r.Artifact.URL), r.SHA256)
			}
			return nil
		},
	}
	o.spec.add(cmd)
	cmd.Flags().StringVarP(&o.dir, "dir", "d", "", "bundle directory (created if missing)")
	cmd.Flags().StringVar(&o.mirror, "mirror", "", "fetch from URL/<upstream host>/<upstream path> instead of the upstream sites")
	cmd.Flags().DurationVar(&o.timeout, "timeout", bundle.DefaultRequestTimeout, "deadline of each request, from start to the last byte")
	cmd.Flags().DurationVar(&o.idleTimeout, "idle-timeout", bundle.DefaultIdleTimeout, "deadline of each wait for data (response headers, the next block)")
	return cmd
}

type bundleVerifyOptions struct {
	spec   specFlags
	dir    string
	output string
}

func newBundleVerifyCmd(s Streams) *cobra.Command {
	o := &bundleVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify -f cluster.yaml -d DIR",
		Short: "Check that DIR holds the spec's whole bundle, intact",
		Long: `Check DIR against the spec's bundle: every file 'bundle list' names is
there, a regular file (a symbolic link only when it stays inside DIR), listed
in DIR/SHA256SUMS, and has that sha256. A SHA256SUMS line with a path that
leaves DIR (../, an absolute or Windows path) or a path listed twice is
refused, naming its line. Files in DIR the spec does not need are listed as
extra and are not an error. verify reads DIR only.

Exit codes: 0 the bundle is complete and intact; 1 a file is missing or
corrupted, or SHA256SUMS is missing or refused (each named on standard
error); 2 usage error; 3 DIR or a file could not be read.`,
		Example: `  hybridctl bundle verify -f cluster.yaml -d bundle/
  hybridctl bundle verify -f cluster.yaml -d bundle/ -o json | jq .problems`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.dir == "" {
				return Usagef("-d/--dir is required: the bundle directory to check")
			}
			out, err := checkFormat(o.output, []string{FormatTable, "json"})
			if err != nil {
				return err
			}
			o.output = out
			_, arts, err := bundleArtifacts(cmd.Context(), &o.spec, s)
			if err != nil {
				return err
			}
			rep, err := bundle.VerifyArtifacts(cmd.Context(), o.dir, arts)
			if err != nil {
				return Incomplete(err)
			}
			if o.output == "json" {
				if err := writeJSON(s.Out, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.OK {
					fmt.Fprintf(s.Out, "ok       %s\n", termtext.Line(p))
				}
				for _, p := range rep.Extra {
					fmt.Fprintf(s.Out, "extra    %s (not needed by this spec)\n", termtext.Line(p))
				}
			}
			if len(rep.Problems) > 0 {
				for _, p := range rep.Problems {
					fmt.Fprintf(s.Err, "%s: %s\n", termtext.Line(filepath.Join(o.dir, filepath.FromSlash(p.Path))), termtext.Line(p.Message))
				}
				return &ExitError{Code: ExitProblem, Err: fmt.Errorf("%s: %d problems; the bundle is not complete or not intact", o.dir, len(rep.Problems)), Silent: o.output == "json"}
			}
			if o.output == "table" {
				fmt.Fprintf(s.Out, "%s: %d files, complete and intact\n", termtext.Line(o.dir), len(rep.OK))
			}
			return nil
		},
	}
	o.spec.add(cmd)
	cmd.Flags().StringVarP(&o.dir, "dir", "d", "", "bundle directory")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table or json ({\"ok\":[paths],\"problems\":[{path,message}],\"extra\":[paths]})")
	return cmd
}

// size prints a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
