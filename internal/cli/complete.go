package cli

import (
	"context"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/diagnose"
	"github.com/hybridctl/hybridctl/internal/explain"
	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/termtext"
)

// NamespaceCompletionTimeout bounds the API call that completes -n: a
// completion that waits on an unreachable server blocks the shell.
const NamespaceCompletionTimeout = 3 * time.Second

// outputValues are the -o values of each command, by command path, for
// completion (TestCompletionOutputValues checks each against the flag's
// help). Commands whose -o is a file or directory are not here.
func outputValues() map[string][]string {
	return map[string][]string{
		"hybridctl plan":               {"table", "json", "yaml"},
		"hybridctl apply":              {"table", "json"},
		"hybridctl reset":              {"table", "json"},
		"hybridctl diff":               {"table", "json"},
		"hybridctl upgrade":            {"table", "json"},
		"hybridctl csr approve":        {"table", "json"},
		"hybridctl kubeconfig import":  {"table", "json"},
		"hybridctl kubeconfig list":    {"table", "json"},
		"hybridctl kubeconfig remove":  {"table", "json"},
		"hybridctl version":            {"table", "json"},
		"hybridctl bundle list":        {"table", "json"},
		"hybridctl bundle verify":      {"table", "json"},
		"hybridctl doctor":             report.Formats(),
		"hybridctl lint":               report.Formats(),
		"hybridctl check connectivity": connectivity.Formats(),
		"hybridctl node diagnose":      diagnose.Formats(),
		"hybridctl explain":            explain.Formats(),
	}
}

// flagCompletion is the dynamic completion of one flag name on the commands
// that have it (when applies is nil or says so).
type flagCompletion struct {
	flag    string
	applies func(cmd *cobra.Command) bool
	fn      cobra.CompletionFunc
}

// flagCompletions is the ordered list of dynamic completions, by flag name.
func flagCompletions() []flagCompletion {
	hasKube := func(cmd *cobra.Command) bool {
		return cmd.Flags().Lookup("kubeconfig") != nil && cmd.Flags().Lookup("context") != nil
	}
	provisioning := func(cmd *cobra.Command) bool { return cmd.Name() == "apply" || cmd.Name() == "reset" }
	return []flagCompletion{
		{"output", func(cmd *cobra.Command) bool { return outputValues()[cmd.CommandPath()] != nil }, completeOutput},
		{"context", hasKube, completeKubeconfig(func(k *kubeNames) []string { return k.contexts })},
		{"cluster", hasKube, completeKubeconfig(func(k *kubeNames) []string { return k.clusters })},
		{"user", hasKube, completeKubeconfig(func(k *kubeNames) []string { return k.users })},
		{"namespace", hasKube, completeNamespaces},
		{"checks", nil, completeChecks(false)},
		{"skip", func(cmd *cobra.Command) bool { return cmd.Flags().Lookup("checks") != nil }, completeChecks(false)},
		{"explain", nil, completeChecks(true)},
		{"fail-on", nil, fixed(false, finding.FailOnValues()...)},
		{"only", provisioning, completePhases},
		{"skip-phases", provisioning, completePhases},
		{"ignore-preflight-errors", nil, fixed(true, append(preflight.Names(), "all")...)},
		{"node", func(cmd *cobra.Command) bool { return cmd.Name() == "reset" }, completeNodes},
		{"tests", nil, fixed(true, connectivity.Names()...)},
		{"skip", func(cmd *cobra.Command) bool { return cmd.Flags().Lookup("tests") != nil }, fixed(true, connectivity.Names()...)},
		{"probe-kit", nil, fixed(false, connectivity.KitNames()...)},
	}
}

// addCompletions registers the dynamic completions on every command of the
// tree; cobra answers them through its hidden __complete command.
func addCompletions(root *cobra.Command) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, c := range flagCompletions() {
			if cmd.Flags().Lookup(c.flag) == nil || (c.applies != nil && !c.applies(cmd)) {
				continue
			}
			_ = cmd.RegisterFlagCompletionFunc(c.flag, c.fn)
		}
		if cmd.CommandPath() == "hybridctl kubeconfig remove" {
			cmd.ValidArgsFunction = completeContextArg
		}
		if cmd.CommandPath() == "hybridctl node diagnose" {
			cmd.ValidArgsFunction = completeNodes
		}
		if cmd.CommandPath() == "hybridctl explain" {
			cmd.ValidArgsFunction = completeExplain
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// match returns the candidates ("value" or "value\tdescription") that start
// with toComplete, case-insensitively. With list set the flag takes a
// comma-separated list: the values before the last comma are kept, are not
// offered again, and the last one is completed.
func match(candidates []string, toComplete string, list bool) []string {
	return matchSame(candidates, toComplete, list, nil)
}

// matchSame is match where two values can name one thing (a check's ID and
// its name): same maps a lower-cased value to what it names, and a thing
// chosen under either value is not offered again under the other.
func matchSame(candidates []string, toComplete string, list bool, same map[string]string) []string {
	key := func(v string) string {
		if k, ok := same[v]; ok {
			return k
		}
		return v
	}
	head, partial := "", toComplete
	var chosen []string
	if i := strings.LastIndex(toComplete, ","); list && i >= 0 {
		head, partial = toComplete[:i+1], toComplete[i+1:]
		for _, c := range strings.Split(strings.ToLower(toComplete[:i]), ",") {
			chosen = append(chosen, key(c))
		}
	}
	out := []string{}
	for _, c := range candidates {
		value, desc, hasDesc := strings.Cut(c, "\t")
		// Values from a kubeconfig or a spec are the files' authors':
		// one a terminal would act on is never offered (the shell would
		// print it and put it on the command line), and descriptions are
		// escaped.
		if !termtext.IsSafe(value) {
			continue
		}
		if hasDesc {
			c = value + "\t" + termtext.Line(desc)
		}
		v := strings.ToLower(value)
		if strings.HasPrefix(v, strings.ToLower(partial)) && !slices.Contains(chosen, key(v)) {
			out = append(out, head+c)
		}
	}
	return out
}

func fixed(list bool, values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return match(values, toComplete, list), cobra.ShellCompDirectiveNoFileComp
	}
}

func completeOutput(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return match(outputValues()[cmd.CommandPath()], toComplete, false), cobra.ShellCompDirectiveNoFileComp
}

// completeChecks offers check IDs and names (with the check's title);
// explain takes one value, or all.
func completeChecks(explain bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if cmd.CommandPath() == "hybridctl node diagnose" {
			var c []string
			same := map[string]string{}
			for _, d := range diagnose.Checks() {
				c = append(c, d.ID+"\t"+d.Name+": "+d.Title, d.Name+"\t"+d.ID+": "+d.Title)
				same[strings.ToLower(d.Name)] = strings.ToLower(d.ID)
			}
			return matchSame(c, toComplete, true, same), cobra.ShellCompDirectiveNoFileComp
		}
		docs, err := checks.Catalogue()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var c []string
		same := map[string]string{}
		for _, d := range docs {
			c = append(c, d.ID+"\t"+d.Name+": "+d.Title, d.Name+"\t"+d.ID+": "+d.Title)
			same[strings.ToLower(d.Name)] = strings.ToLower(d.ID)
		}
		if explain {
			c = append(c, "all\tevery check")
		}
		return matchSame(c, toComplete, !explain, same), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeExplain offers every ID explain knows (with its catalogue and
// what it checks), and all; one argument only.
func completeExplain(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	entries, err := explain.Entries()
	if err != nil || len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c := []string{explain.All + "\tevery entry"}
	for _, e := range entries {
		c = append(c, e.ID+"\t"+e.Catalogue+": "+e.What)
	}
	return match(c, toComplete, false), cobra.ShellCompDirectiveNoFileComp
}

// completePhases offers apply's or reset's phase names, in order.
func completePhases(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	phases := procedure.ApplyProcedure()
	if cmd.Name() == "reset" {
		phases = procedure.ResetProcedure()
	}
	var names []string
	for _, p := range phases {
		names = append(names, p.Name)
	}
	return match(names, toComplete, true), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeNodes offers the node names of the spec -f names (nothing when
// it cannot be read).
func completeNodes(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	file, _ := cmd.Flags().GetString("filename")
	if file == "" || file == "-" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(contextOf(cmd), NamespaceCompletionTimeout)
	defer cancel()
	r, err := spec.LoadFile(ctx, file)
	if err != nil || r.Cluster == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range r.Cluster.Spec.Nodes {
		if n.Name != "" {
			names = append(names, n.Name+"\t"+n.OS+" "+n.Role+" "+n.Address)
		}
	}
	return match(names, toComplete, true), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// kubeFlagsOf rebuilds the connection flags the user typed on cmd
// (--kubeconfig, --context, --server, ...), for completions that read the
// kubeconfig or call the API.
func kubeFlagsOf(cmd *cobra.Command) *kubeclient.Flags {
	kf := kubeclient.NewFlags()
	fs := pflag.NewFlagSet("completion", pflag.ContinueOnError)
	kf.AddFlags(fs)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if fs.Lookup(f.Name) != nil && f.Value.Type() != "stringSlice" {
			_ = fs.Set(f.Name, f.Value.String())
		}
	})
	kf.Verbosity = 0 // never trace into the completion's output
	return kf
}

// kubeNames are the names a kubeconfig defines, sorted.
type kubeNames struct{ contexts, clusters, users []string }

func readKubeNames(cmd *cobra.Command) *kubeNames {
	raw, err := kubeFlagsOf(cmd).Config.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return &kubeNames{}
	}
	k := &kubeNames{}
	for n := range raw.Contexts {
		k.contexts = append(k.contexts, n)
	}
	for n := range raw.Clusters {
		k.clusters = append(k.clusters, n)
	}
	for n := range raw.AuthInfos {
		k.users = append(k.users, n)
	}
	sort.Strings(k.contexts)
	sort.Strings(k.clusters)
	sort.Strings(k.users)
	return k
}

func completeKubeconfig(pick func(*kubeNames) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return match(pick(readKubeNames(cmd)), toComplete, false), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces lists the namespaces of the cluster the flags point
// at, within NamespaceCompletionTimeout; any failure completes nothing and
// prints nothing.
func completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	kf := kubeFlagsOf(cmd)
	t := NamespaceCompletionTimeout.String()
	kf.Config.Timeout = &t
	cfg, err := kf.RESTConfig(io.Discard)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(contextOf(cmd), NamespaceCompletionTimeout)
	defer cancel()
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	sort.Strings(names)
	return match(names, toComplete, false), cobra.ShellCompDirectiveNoFileComp
}

// completeContextArg completes a positional context name (kubeconfig remove).
func completeContextArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return match(readKubeNames(cmd).contexts, toComplete, false), cobra.ShellCompDirectiveNoFileComp
}
