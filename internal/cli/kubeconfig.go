package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

const kubeconfigTrap = `Why: kubeadm names every cluster "kubernetes", every user "kubernetes-admin"
and every context "kubernetes-admin@kubernetes". Listing two admin.conf files
in KUBECONFIG does not give you two clusters: client-go merges the files and
the first file to define a name wins, so the "second" context silently uses
the first cluster's address and credentials. Copying the entries by hand takes
five kubectl config commands, and "kubectl config view --flatten > file"
leaves a private key world-readable.`

// kubeconfigFlags are the flags every kubeconfig subcommand shares.
type kubeconfigFlags struct {
	kubeconfig  string
	output      string
	lockTimeout time.Duration
}

func (f *kubeconfigFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file to change (default: the first file in $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	cmd.Flags().DurationVar(&f.lockTimeout, "lock-timeout", kubeconfig.DefaultLockTimeout, "how long to wait for another program writing the same kubeconfig")
}

func (f *kubeconfigFlags) validate() error {
	out, err := checkFormat(f.output, []string{FormatTable, "json"})
	f.output = out
	return err
}

func (f *kubeconfigFlags) store() (*kubeconfig.Store, error) {
	p, err := kubeconfig.TargetPath(f.kubeconfig, os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, kubeconfigExit(err)
	}
	return &kubeconfig.Store{Path: p, LockTimeout: f.lockTimeout}, nil
}

// kubeconfigExit maps the package's error kinds to exit codes (design §5).
func kubeconfigExit(err error) error {
	switch kubeconfig.KindOf(err) {
	case kubeconfig.KindConflict, kubeconfig.KindVerify, kubeconfig.KindInvalid:
		return Problem(err)
	case kubeconfig.KindUsage:
		return Usage(err)
	default:
		return Incomplete(err)
	}
}

func newKubeconfigCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Import a cluster's admin.conf into your kubeconfig under its own names, list and remove",
		Long: `Manage the contexts in your kubeconfig safely.

` + kubeconfigTrap + `

"hybridctl kubeconfig import" renames the cluster, user and context together
(NAME, NAME-admin, NAME) and merges them into one file: atomically, locked
against other writers, mode 0600, with a timestamped backup of the previous
file. Key material is never printed.`,
		Example: `  # the guide's lab cluster next to the cluster you already have
  ssh user@k8s-lab-master-1 sudo cat /etc/kubernetes/admin.conf \
    | hybridctl kubeconfig import - --name lab --verify --set-current
  hybridctl kubeconfig list
  kubectl --context lab get nodes
  hybridctl kubeconfig remove lab`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(graceful(newKubeconfigImportCmd(s), ""), newKubeconfigListCmd(s), graceful(newKubeconfigRemoveCmd(s), ""))
	return cmd
}

func newKubeconfigImportCmd(s Streams) *cobra.Command {
	var f kubeconfigFlags
	var o kubeconfig.ImportOptions
	cmd := &cobra.Command{
		Use:   "import FILE|- --name NAME",
		Short: "Import a kubeconfig (a kubeadm admin.conf) under new names",
		Long: `Import one context of FILE (a kubeadm admin.conf, or "-" for standard input)
into your kubeconfig as cluster NAME, user NAME-admin and context NAME.

` + kubeconfigTrap + `

What import does:
  - takes FILE's current context (or --source-context) with its cluster and
    user; files they reference (certificate-authority, client-certificate,
    client-key, tokenFile) are read only inside FILE's own directory and
    embedded, so the result does not depend on FILE any more. Absolute
    paths, "..", symbolic links that lead out, FIFOs, files over 1 MiB and
    any file reference from standard input are refused;
  - never runs anything: a user with an exec credential plugin or an
    auth-provider is refused, naming the command, unless --allow-exec
    (then it is stored, and runs only when the context is used);
    --verify never runs a plugin;
  - warns about insecure-skip-tls-verify, proxy-url and basic auth;
  - compares by content, not by name: a cluster is its server URL and CA
    fingerprint, a user its client-certificate fingerprint or token hash.
    Entries already there with identical content are reused (importing twice
    changes nothing); a name already used for different content is refused
    with both sides described, unless --overwrite;
  - with --verify, connects with the NEW credentials before writing: the
    server's certificate must chain to the imported CA, /version must answer
    and the server must authenticate the credentials. On failure nothing is
    written;
  - writes the target (--kubeconfig, else the first file of $KUBECONFIG,
    else ~/.kube/config) atomically, mode 0600, under a lock, and keeps the
    previous file as FILE.hybridctl-backup-TIMESTAMP (0600, the last 5);
  - marks the entries with the extension "hybridctl.dev/imported" (time and
    source fingerprint), which "kubeconfig list" shows.

Exit codes: 0 imported (or already there); 1 refused (name used for different
content, --verify failed at the server, FILE not a valid kubeconfig, a plugin
or a file reference refused); 2 usage; 3 I/O error, or --verify got no answer
from the server (refused, unresolved, timed out).`,
		Example: `  # straight from the control plane: the key never lands in a file of its own
  ssh user@k8s-lab-master-1 sudo cat /etc/kubernetes/admin.conf \
    | hybridctl kubeconfig import - --name lab --verify

  # from a copied file, and switch to it
  hybridctl kubeconfig import ~/lab-admin.conf --name lab --set-current
  shred -u ~/lab-admin.conf

  # a file with several contexts: pick one
  hybridctl kubeconfig import multi.conf --source-context prod-admin@prod --name prod

  # admin.conf names an address the workstation does not use
  hybridctl kubeconfig import admin.conf --name lab --server https://k8s-lab-api.example.com:6443 --verify

  # the cluster was rebuilt (new CA): replace the old entries
  hybridctl kubeconfig import admin.conf --name lab --overwrite --verify`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("import takes exactly one FILE (or - for standard input), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if o.Name == "" {
				return Usagef("--name is required: the name of the new context (the cluster becomes NAME, the user NAME-admin)")
			}
			if err := kubeconfig.ValidateName(o.Name); err != nil {
				return kubeconfigExit(err)
			}
			o.Source = args[0]
			if o.Source == "-" {
				data, err := io.ReadAll(io.LimitReader(s.In, 16<<20+1))
				if err != nil {
					return Incomplete(fmt.Errorf("reading standard input: %w", err))
				}
				o.SourceData = data
			}
			st, err := f.store()
			if err != nil {
				return err
			}
			res, err := kubeconfig.Import(cmd.Context(), st, o)
			if err != nil {
				return kubeconfigExit(err)
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(s.Err, "Warning:", termtext.Line(w))
			}
			if res.LooseMode != "" {
				fmt.Fprintf(s.Err, "Warning: %s is mode %s, open to other users, and it holds private keys: chmod 600 %s\n", termtext.Line(res.Target), res.LooseMode, termtext.Line(res.Target))
			}
			// With several files in $KUBECONFIG, say which entries of later
			// files the imported names now hide (the first file wins).
			if env := filepath.SplitList(os.Getenv("KUBECONFIG")); f.kubeconfig == "" && len(env) > 1 {
				if sh, err := kubeconfig.FindShadows(cmd.Context(), env); err == nil {
					for _, x := range sh {
						if x.Winner == res.Target || sameFile(x.Winner, res.Target) {
							for _, e := range res.Entries {
								if e.Kind == x.Kind && e.Name == x.Name {
									fmt.Fprintf(s.Err, "Warning: %s %q in %s is hidden by the imported one: %s comes first in $KUBECONFIG\n", x.Kind, x.Name, termtext.Line(x.Shadowed), termtext.Line(x.Winner))
								}
							}
						}
					}
				}
			}
			if f.output == "json" {
				return writeJSON(s.Out, res)
			}
			printImport(s.Out, res)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&o.Name, "name", "", "name of the new context; the cluster becomes NAME and the user NAME-admin (required)")
	cmd.Flags().StringVar(&o.SourceContext, "source-context", "", "context of FILE to import (default: FILE's current context)")
	cmd.Flags().StringVar(&o.Server, "server", "", "use this API server URL instead of FILE's (e.g. https://k8s-lab-api.example.com:6443)")
	cmd.Flags().BoolVar(&o.Overwrite, "overwrite", false, "replace entries named NAME / NAME-admin whose content differs")
	cmd.Flags().BoolVar(&o.SetCurrent, "set-current", false, "make NAME the current context")
	cmd.Flags().BoolVar(&o.Verify, "verify", false, "connect with the new credentials and check the server certificate against the imported CA before writing")
	cmd.Flags().BoolVar(&o.AllowExec, "allow-exec", false, "accept a user with an exec credential plugin or auth-provider: stored, never run by the import (it runs when the context is used)")
	cmd.Flags().DurationVar(&o.VerifyTimeout, "verify-timeout", kubeconfig.DefaultVerifyTimeout, "time limit for --verify")
	return cmd
}

func printImport(w io.Writer, r *kubeconfig.ImportResult) {
	switch {
	case !r.Written:
		fmt.Fprintf(w, "%s: context %q is already there with the same content; nothing changed.\n", termtext.Line(r.Target), r.Context)
	case r.Created:
		fmt.Fprintf(w, "Created %s (mode 0600) with context %q from %s (context %q).\n", termtext.Line(r.Target), r.Context, termtext.Line(r.Source), r.SourceContext)
	default:
		fmt.Fprintf(w, "Imported %s (context %q) into %s as %q.\n", termtext.Line(r.Source), r.SourceContext, termtext.Line(r.Target), r.Context)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range r.Entries {
		extra := ""
		if len(e.SameAs) > 0 {
			extra = " (same as " + strings.Join(e.SameAs, ", ") + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Kind, termtext.Line(e.Name), e.Action, termtext.Line(e.Describe+extra))
	}
	tw.Flush()
	if r.Verified != nil {
		who := ""
		if r.Verified.Username != "" {
			who = fmt.Sprintf(", authenticated as %s", r.Verified.Username)
			if len(r.Verified.Groups) > 0 {
				who += " [" + strings.Join(r.Verified.Groups, " ") + "]"
			}
		}
		fmt.Fprintf(w, "Verified: server %s, certificate trusted by %s.\n", termtext.Line(r.Verified.ServerVersion), termtext.Line(r.Verified.TrustedBy+who))
	}
	if r.TightenedFrom != "" {
		fmt.Fprintf(w, "The file was mode %s; it is 0600 now.\n", r.TightenedFrom)
	}
	if r.Backup != "" {
		fmt.Fprintf(w, "Previous file kept as %s.\n", termtext.Line(r.Backup))
	}
	if r.CurrentContext == r.Context {
		fmt.Fprintf(w, "Current context: %s.\n", r.Context)
	} else {
		fmt.Fprintf(w, "Use it: kubectl --context %s get nodes   (or: kubectl config use-context %s)\n", r.Context, r.Context)
	}
}

func newKubeconfigListCmd(s Streams) *cobra.Command {
	var f kubeconfigFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the contexts of the kubeconfig with their servers and which hybridctl imported",
		Long: `List the contexts of one kubeconfig file (--kubeconfig, else the first file of
$KUBECONFIG, else ~/.kube/config): the current marker, server, user,
namespace and whether hybridctl imported the entries (and when).

When $KUBECONFIG lists several files and no --kubeconfig is given, list also
warns about names that a later file defines differently: client-go ignores
those entries silently (the first file wins), which is the trap import avoids.

Exit codes: 0 listed; 1 the file is not a valid kubeconfig; 3 I/O error.`,
		Example: `  hybridctl kubeconfig list
  hybridctl kubeconfig list -o json | jq -r '.contexts[] | select(.imported) | .name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			st, err := f.store()
			if err != nil {
				return err
			}
			res, err := kubeconfig.List(cmd.Context(), st)
			if err != nil {
				return kubeconfigExit(err)
			}
			if env := os.Getenv("KUBECONFIG"); f.kubeconfig == "" && len(filepath.SplitList(env)) > 1 {
				sh, err := kubeconfig.FindShadows(cmd.Context(), filepath.SplitList(env))
				if err != nil {
					return kubeconfigExit(err)
				}
				if sh != nil {
					res.Shadowed = sh
				}
			}
			if f.output == "json" {
				return writeJSON(s.Out, res)
			}
			printList(s.Out, res)
			for _, sh := range res.Shadowed {
				fmt.Fprintf(s.Err, "Warning: %s %q in %s is ignored: %s defines the same name differently and comes first in $KUBECONFIG\n", sh.Kind, sh.Name, termtext.Line(sh.Shadowed), termtext.Line(sh.Winner))
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func printList(w io.Writer, r *kubeconfig.ListResult) {
	if len(r.Contexts) == 0 {
		fmt.Fprintf(w, "%s: no contexts\n", termtext.Line(r.File))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tUSER\tNAMESPACE\tIMPORTED")
	for _, c := range r.Contexts {
		cur := ""
		if c.Current {
			cur = "*"
		}
		imp := "-"
		if c.Imported != nil {
			imp = c.Imported.ImportedAt.UTC().Format(time.RFC3339)
		}
		server := c.Server
		if len(c.Problems) > 0 {
			server = "(" + strings.Join(c.Problems, "; ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cur, termtext.Line(c.Name), termtext.Line(server), termtext.Line(c.User), termtext.Line(c.Namespace), imp)
	}
	tw.Flush()
}

func newKubeconfigRemoveCmd(s Streams) *cobra.Command {
	var f kubeconfigFlags
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a context, and its cluster and user when no other context uses them",
		Long: `Remove context NAME from the kubeconfig, and the cluster and user it refers
to when no other context refers to them. The file is rewritten atomically,
under the same lock as import, and the previous file is kept as a backup.
If NAME was the current context, no context is current afterwards.

Exit codes: 0 removed; 2 no such context; 3 I/O error.`,
		Example: `  hybridctl kubeconfig remove lab`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("remove takes exactly one context NAME, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			st, err := f.store()
			if err != nil {
				return err
			}
			res, err := kubeconfig.Remove(cmd.Context(), st, args[0])
			if err != nil {
				return kubeconfigExit(err)
			}
			if f.output == "json" {
				return writeJSON(s.Out, res)
			}
			fmt.Fprintf(s.Out, "%s: removed %s.\n", termtext.Line(res.Target), termtext.Line(strings.Join(res.Removed, ", ")))
			if len(res.Kept) > 0 {
				fmt.Fprintf(s.Out, "Kept %s: other contexts use them.\n", termtext.Line(strings.Join(res.Kept, ", ")))
			}
			if res.ClearedCurrent {
				fmt.Fprintln(s.Out, "It was the current context; none is current now (kubectl config use-context NAME).")
			}
			if res.Backup != "" {
				fmt.Fprintf(s.Out, "Previous file kept as %s.\n", termtext.Line(res.Backup))
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func writeJSON(w io.Writer, v any) error {
	if err := termtext.EncodeJSON(w, v); err != nil {
		return Incomplete(fmt.Errorf("writing output: %w", err))
	}
	return nil
}
