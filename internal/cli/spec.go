package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/spf13/cobra"
)

// specFlags is the -f flag every spec-reading command shares.
type specFlags struct {
	file string
}

func (f *specFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "cluster spec file (hybridctl.dev/v1alpha1 Cluster); - reads standard input")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml")
}

// load reads and validates the spec. Diagnostics (errors and warnings) of an
// invalid spec are printed to errOut one per line, compiler style, and the
// returned error is a silent exit 1. I/O errors are exit 3.
func (f *specFlags) load(ctx context.Context, in io.Reader, errOut io.Writer) (*spec.Result, error) {
	if f.file == "" {
		return nil, Usagef("-f/--filename is required (try 'hybridctl init' for an example spec)")
	}
	var r *spec.Result
	if f.file == "-" {
		data, err := io.ReadAll(io.LimitReader(in, spec.MaxSpecBytes+1))
		if err != nil {
			return nil, Incomplete(fmt.Errorf("reading cluster spec from standard input: %w", err))
		}
		if len(data) > spec.MaxSpecBytes {
			return nil, Incomplete(fmt.Errorf("reading cluster spec from standard input: larger than %d bytes", spec.MaxSpecBytes))
		}
		r = spec.Parse("<stdin>", data)
		r.ReadRegistryCA(ctx, ".") // a CA named by a spec on standard input is beside the working directory
	} else {
		var err error
		r, err = spec.LoadFile(ctx, f.file)
		if err != nil {
			return nil, Incomplete(err)
		}
	}
	if r.Err() != nil {
		for _, d := range r.Diagnostics {
			fmt.Fprintln(errOut, d.String())
		}
		if n := len(r.Diagnostics.Errors()); n == 1 {
			fmt.Fprintf(errOut, "%s: 1 error; the spec is invalid\n", r.File)
		} else {
			fmt.Fprintf(errOut, "%s: %d errors; the spec is invalid\n", r.File, n)
		}
		return nil, &ExitError{Code: ExitProblem, Err: r.Err(), Silent: true}
	}
	return r, nil
}
