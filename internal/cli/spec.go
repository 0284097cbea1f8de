package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/pflag"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/termcolor"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// DefaultSpecFile is what -f defaults to: the file `hybridctl init` writes
// (as k0sctl's k0sctl.yaml).
const DefaultSpecFile = "cluster.yaml"

// specFlags is the -f flag every spec-reading command shares.
type specFlags struct {
	file string
	// optional: no default file (csr approve works without a spec).
	optional bool
	flag     *pflag.Flag
	// problemsOut, when set, receives an invalid spec's problems as
	// {"problems":[{check,name,file,line,path,severity,message}]} in
	// problemsFormat (json or yaml) instead of the text lines (plan -o
	// json, -o yaml).
	problemsOut    io.Writer
	problemsFormat string
}

func (f *specFlags) add(cmd *cobra.Command) {
	def, usage := DefaultSpecFile, "cluster spec file (hybridctl.dev/v1alpha1 Cluster); - reads standard input"
	if f.optional {
		def = ""
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", def, usage)
	f.flag = cmd.Flags().Lookup("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml")
}

// load reads and validates the spec. Diagnostics (errors and warnings) of an
// invalid spec are printed to errOut one per line, compiler style, and the
// returned error is a silent exit 1. I/O errors are exit 3.
func (f *specFlags) load(ctx context.Context, in io.Reader, errOut io.Writer) (*spec.Result, error) {
	if f.file == "" {
		return nil, Usagef("-f/--filename is required (try 'hybridctl init' for an example spec)")
	}
	if f.flag != nil && !f.flag.Changed && f.file == DefaultSpecFile {
		if _, err := os.Stat(f.file); errors.Is(err, fs.ErrNotExist) {
			return nil, Usagef("no -f given and there is no ./%s: write one with 'hybridctl init', or pass -f FILE", DefaultSpecFile)
		}
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
	if r.Err() != nil && f.problemsOut != nil {
		out := struct {
			Problems []plan.Warning `json:"problems"`
		}{Problems: []plan.Warning{}}
		for _, d := range r.Diagnostics {
			file := d.File
			if file == "" {
				file = r.File
			}
			out.Problems = append(out.Problems, plan.Warning{Check: d.Rule, Name: d.Name, File: file, Line: d.Line, Path: d.Path, Severity: string(d.Severity), Message: d.Message})
		}
		if err := encodeAs(f.problemsOut, f.problemsFormat, out); err != nil {
			return nil, Incomplete(err)
		}
		return nil, &ExitError{Code: ExitProblem, Err: r.Err(), Silent: true}
	}
	if r.Err() != nil {
		pal := termcolor.Auto(errOut, os.Getenv)
		for _, d := range r.Diagnostics {
			fmt.Fprintln(errOut, pal.Severity(string(d.Severity), termtext.Text(d.String())))
		}
		if n := len(r.Diagnostics.Errors()); n == 1 {
			fmt.Fprintf(errOut, "%s: 1 error; the spec is invalid\n", termtext.Line(r.File))
		} else {
			fmt.Fprintf(errOut, "%s: %d errors; the spec is invalid\n", termtext.Line(r.File), n)
		}
		return nil, &ExitError{Code: ExitProblem, Err: r.Err(), Silent: true}
	}
	return r, nil
}
