// Command release builds hybridctl's release files from the checked-out
// commit (hack/release.sh runs it; docs/release.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/release"
)

// Exit codes, as hybridctl's: 0 built, 2 usage error, 3 could not build.
const (
	exitOK         = 0
	exitUsage      = 2
	exitIncomplete = 3
)

type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var (
		out, platforms, downloadURL, repository, version, commit, dir string
	)
	cmd := &cobra.Command{
		Use:   "hack/release.sh -o DIR [--platforms LIST]",
		Short: "Build hybridctl's release files from the checked-out commit",
		Long: `Build hybridctl's release files from the checked-out commit into DIR (new or
empty): for each platform an archive (hybridctl_VERSION_OS_ARCH.tar.gz, .zip
for Windows) holding the binary, LICENSE and README.md, and a CycloneDX SBOM
of the binary's Go modules; the krew plugin manifest (hybridctl.yaml); the
in-cluster CSR approver's image for the linux platforms as an OCI layout
tarball (hybridctl_VERSION_image.oci.tar); SHA256SUMS of them all.

The same commit gives the same bytes. The version is the v-tag on HEAD, else
v0.0.0-YYYYMMDDhhmmss-COMMIT; the build date is the commit's time
(SOURCE_DATE_EPOCH overrides it). A checkout with uncommitted changes is
refused. Outside a git checkout give --version, --commit and
SOURCE_DATE_EPOCH.

With HYBRIDCTL_SIGN_KEY and HYBRIDCTL_SIGN_CERT set (files), the Windows
executable gets an Authenticode signature with osslsigncode;
HYBRIDCTL_SIGN_PASSWORD_FILE holds the key's passphrase,
HYBRIDCTL_SIGN_TIMESTAMP_URL names an RFC 3161 timestamp server.

Exit codes: 0 built; 2 usage error; 3 could not build.`,
		Example: `  hack/release.sh -o dist
  hack/release.sh -o dist --platforms linux/amd64,windows/amd64`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q: the release takes only flags", args[0])}
			}
			return nil
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{errors.New("-o DIR is required")}
			}
			plats, err := release.ParsePlatforms(platforms)
			if err != nil {
				return usageError{err}
			}
			src, err := source(cmd.Context(), dir, version, commit, getenv("SOURCE_DATE_EPOCH"))
			if err != nil {
				return err
			}
			signer, err := release.SignerFromEnv(getenv)
			if err != nil {
				return usageError{err}
			}
			files, err := release.Build(cmd.Context(), release.Options{
				Source: src, OutDir: out, Platforms: plats, DownloadURL: downloadURL, Repository: repository,
				Signer: signer, Progress: stderr,
			})
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintf(stdout, "%s  %d  %s\n", f.SHA256, f.Size, f.Name)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "", "the directory to write the release into (new or empty)")
	fl.StringVar(&platforms, "platforms", "", "comma-separated GOOS/GOARCH list (default: linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64)")
	fl.StringVar(&downloadURL, "download-url", "", "where the archives will be published, for the krew manifest's URIs (default "+release.DefaultDownloadURL("VERSION")+")")
	fl.StringVar(&repository, "image-repository", release.DefaultRepository, "the image's repository, named in the image layout (ctr import names the image REPOSITORY:VERSION)")
	fl.StringVar(&version, "version", "", "the version to stamp, instead of git's (v1.2.3)")
	fl.StringVar(&commit, "commit", "", "the commit to stamp, instead of git's (40 hex digits)")
	fl.StringVar(&dir, "source", ".", "the main module's root")
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "release: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitIncomplete
}

// source is the release's Source: git's description of dir, with the
// version, commit and SOURCE_DATE_EPOCH given overriding it; outside a git
// checkout all three must be given.
func source(ctx context.Context, dir, version, commit, epoch string) (release.Source, error) {
	src, gitErr := release.Describe(ctx, dir)
	if gitErr != nil && (version == "" || commit == "" || epoch == "") {
		return release.Source{}, usageError{fmt.Errorf("%w\n(outside a git checkout give --version, --commit and SOURCE_DATE_EPOCH)", gitErr)}
	}
	src.Dir = dir
	if version != "" {
		src.Version = version
	}
	if commit != "" {
		src.Commit = commit
	}
	if epoch != "" {
		t, err := release.ParseEpoch(epoch)
		if err != nil {
			return release.Source{}, usageError{err}
		}
		src.Time = t
	}
	if err := src.Check(); err != nil {
		return release.Source{}, usageError{err}
	}
	return src, nil
}
