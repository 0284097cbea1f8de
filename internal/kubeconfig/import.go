package kubeconfig

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	api "k8s.io/client-go/tools/clientcmd/api"
)

// ImportOptions describe one import.
type ImportOptions struct {
	// Source is the kubeconfig to import (a kubeadm admin.conf); "-" reads
	// SourceData instead and names it <stdin>.
	Source     string
	SourceData []byte
	// SourceContext picks the source's context; its current context when empty.
	SourceContext string
	// Name is the new name: cluster NAME, user NAME-admin, context NAME.
	Name string
	// Server, when set, replaces the source's server URL (for example the
	// control-plane endpoint's DNS name instead of an address only the
	// nodes reach). --verify then checks the certificate against this name.
	Server string
	// Overwrite replaces entries of the same names whose content differs.
	Overwrite bool
	// SetCurrent makes NAME the current context.
	SetCurrent bool
	// Verify connects with the new credentials before anything is written.
	Verify        bool
	VerifyTimeout time.Duration
	// AllowExec accepts a source user with an exec credential plugin or an
	// auth-provider: it is stored, never run by the import (--verify
	// refuses it). Without it such a source is refused.
	AllowExec bool
}

// Action is what happened to one entry.
type Action string

const (
	Added     Action = "added"
	Unchanged Action = "unchanged" // an identical entry was already there
	Replaced  Action = "replaced"  // --overwrite replaced different content
)

// EntryResult is the outcome for one of the three entries.
type EntryResult struct {
	Kind   string `json:"kind"` // cluster, user or context
	Name   string `json:"name"`
	Action Action `json:"action"`
	// Describe is the entry's identity for people (server and CA
	// fingerprint, certificate subject and fingerprint); never secrets.
	Describe string `json:"describe,omitempty"`
	// SameAs lists other entries in the target with identical content.
	SameAs []string `json:"sameAs,omitempty"`
}

// ImportResult says what Import did.
type ImportResult struct {
	Target         string        `json:"target"`
	Source         string        `json:"source"`
	SourceContext  string        `json:"sourceContext"`
	Context        string        `json:"context"`
	Entries        []EntryResult `json:"entries"`
	CurrentContext string        `json:"currentContext"`
	Verified       *Verified     `json:"verified,omitempty"`
	UpdateResult
	Warnings []string `json:"warnings,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// ValidateName checks an import name: 1-63 letters, digits, '.', '_' or
// '-', starting and ending with a letter or digit, so that it works
// unquoted in shells, in `kubectl --context` and in a prompt.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return newErr(KindUsage, fmt.Sprintf("--name %q: use 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", name), nil)
	}
	return nil
}

// UserName is the user entry name an import of name creates.
func UserName(name string) string { return name + "-admin" }

// Import reads the source, optionally verifies it against the cluster, and
// merges it into the store's file under the new names. On any error the
// target file is unchanged.
func Import(ctx context.Context, st *Store, opts ImportOptions) (*ImportResult, error) {
	if err := ValidateName(opts.Name); err != nil {
		return nil, err
	}
	src, err := readSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.Server != "" {
		src.Cluster.Server = opts.Server
		if err := checkCluster(src.Cluster, "--server"); err != nil {
			return nil, newErr(KindUsage, err.Error(), nil)
		}
	}
	res := &ImportResult{Target: st.Path, Source: src.Name, SourceContext: src.Context, Context: opts.Name}
	res.Warnings = SourceWarnings(src)
	if opts.Verify {
		v, err := Verify(ctx, src.Cluster, src.User, opts.VerifyTimeout, fmt.Sprintf("verifying %s context %q", src.Name, src.Context))
		if err != nil {
			return nil, err
		}
		res.Verified = v
	}

	now := st.now()
	marker, err := markerObject(Marker{
		ImportedAt: now, Source: src.Path, SourceSHA256: src.SHA256,
		SourceContext: src.Context, SourceCluster: src.ClusterName, SourceUser: src.UserName,
	})
	if err != nil {
		return nil, newErr(KindIO, "encoding the import marker", err)
	}
	clusterName, userName := opts.Name, UserName(opts.Name)
	newCluster := src.Cluster.DeepCopy()
	newCluster.Extensions = map[string]runtimeObject{ExtensionName: marker}
	newUser := src.User.DeepCopy()
	newUser.Extensions = map[string]runtimeObject{ExtensionName: marker}
	newContext := &api.Context{Cluster: clusterName, AuthInfo: userName, Namespace: src.Namespace,
		Extensions: map[string]runtimeObject{ExtensionName: marker}}

	upd, err := st.Update(ctx, func(cfg *api.Config) (bool, error) {
		changed, err := mergeImport(cfg, opts.Name, newCluster, newUser, newContext, opts.Overwrite, res)
		if err != nil {
			if e, ok := err.(*Error); ok && e.Kind == KindConflict {
				e.Msg = fmt.Sprintf("refusing to import %s as %q into %s: %s", src.Name, opts.Name, st.Path, e.Msg)
			}
			return false, err
		}
		if opts.SetCurrent && cfg.CurrentContext != opts.Name {
			cfg.CurrentContext = opts.Name
			changed = true
		}
		res.CurrentContext = cfg.CurrentContext
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	res.UpdateResult = upd
	return res, nil
}

// entryChange is one of the three entries an import writes.
type entryChange struct {
	kind, name        string
	exists, same      bool
	inFile, importing string
	set               func()
}

// mergeImport puts the three entries into cfg. An entry of the same name and
// the same content is left as it is; one with different content is a
// conflict unless overwrite is set. All conflicts are reported at once.
func mergeImport(cfg *api.Config, name string, cluster *api.Cluster, user *api.AuthInfo, kctx *api.Context, overwrite bool, res *ImportResult) (bool, error) {
	clusterName, userName := kctx.Cluster, kctx.AuthInfo
	var changes []entryChange
	{
		old := cfg.Clusters[clusterName]
		ch := entryChange{kind: "cluster", name: clusterName, exists: old != nil, importing: DescribeCluster(cluster),
			set: func() { cfg.Clusters[clusterName] = cluster }}
		if old != nil {
			ch.same, ch.inFile = ClusterIdentity(old) == ClusterIdentity(cluster), DescribeCluster(old)
		}
		changes = append(changes, ch)
	}
	{
		old := cfg.AuthInfos[userName]
		ch := entryChange{kind: "user", name: userName, exists: old != nil, importing: DescribeUser(user),
			set: func() { cfg.AuthInfos[userName] = user }}
		if old != nil {
			ch.same, ch.inFile = UserIdentity(old) == UserIdentity(user), DescribeUser(old)
		}
		changes = append(changes, ch)
	}
	{
		old := cfg.Contexts[name]
		desc := func(c *api.Context) string {
			d := fmt.Sprintf("cluster %q, user %q", c.Cluster, c.AuthInfo)
			if c.Namespace != "" {
				d += fmt.Sprintf(", namespace %q", c.Namespace)
			}
			return d
		}
		ch := entryChange{kind: "context", name: name, exists: old != nil, importing: desc(kctx),
			set: func() { cfg.Contexts[name] = kctx }}
		if old != nil {
			ch.same = old.Cluster == kctx.Cluster && old.AuthInfo == kctx.AuthInfo && old.Namespace == kctx.Namespace
			ch.inFile = desc(old)
		}
		changes = append(changes, ch)
	}

	var conflicts []string
	for _, ch := range changes {
		if ch.exists && !ch.same {
			conflicts = append(conflicts, fmt.Sprintf("  %s %q\n    in the file: %s\n    importing:   %s", ch.kind, ch.name, ch.inFile, ch.importing))
		}
	}
	if len(conflicts) > 0 && !overwrite {
		return false, newErr(KindConflict, fmt.Sprintf(
			"these names are already used for something else:\n%s\nNothing was written. Pick another --name, or pass --overwrite to replace them (the old file is kept as a backup)",
			strings.Join(conflicts, "\n")), nil)
	}

	changed := false
	res.Entries = res.Entries[:0]
	for _, ch := range changes {
		a := Added
		switch {
		case ch.exists && ch.same:
			a = Unchanged
		case ch.exists:
			a = Replaced
		}
		if a != Unchanged {
			ch.set()
			changed = true
		}
		res.Entries = append(res.Entries, EntryResult{Kind: ch.kind, Name: ch.name, Action: a, Describe: ch.importing})
	}
	// When the cluster or user changed, the context's marker must say so
	// too (list shows the context's import time and source).
	if changed && res.Entries[2].Action == Unchanged {
		changes[2].set()
	}
	// The same cluster or user may already be known under another name
	// (for example kubeadm's kubernetes / kubernetes-admin); say so.
	clusterID, userID := ClusterIdentity(cluster), UserIdentity(user)
	for n, c := range cfg.Clusters {
		if n != clusterName && c != nil && ClusterIdentity(c) == clusterID {
			res.Entries[0].SameAs = append(res.Entries[0].SameAs, n)
		}
	}
	for n, u := range cfg.AuthInfos {
		if n != userName && u != nil && UserIdentity(u) == userID {
			res.Entries[1].SameAs = append(res.Entries[1].SameAs, n)
		}
	}
	sort.Strings(res.Entries[0].SameAs)
	sort.Strings(res.Entries[1].SameAs)
	return changed, nil
}

func readSource(ctx context.Context, opts ImportOptions) (*Source, error) {
	if err := ctx.Err(); err != nil {
		return nil, newErr(KindIO, "reading "+opts.Source, err)
	}
	if opts.Source == "" {
		return nil, newErr(KindUsage, "no source kubeconfig given", nil)
	}
	so := SourceOptions{Context: opts.SourceContext, AllowExec: opts.AllowExec}
	if opts.Source == "-" {
		// No directory: a file reference from standard input is refused.
		return ParseSource("<stdin>", opts.SourceData, so)
	}
	abs, err := filepath.Abs(opts.Source)
	if err != nil {
		return nil, newErr(KindIO, opts.Source, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, newErr(KindIO, "reading source kubeconfig", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, newErr(KindIO, "reading source kubeconfig", err)
	}
	if fi.IsDir() {
		return nil, newErr(KindUsage, fmt.Sprintf("%s is a directory, not a kubeconfig", opts.Source), nil)
	}
	if fi.Size() > maxSourceSize {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: %d bytes is too large for a kubeconfig", opts.Source, fi.Size()), nil)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSourceSize+1))
	if err != nil {
		return nil, newErr(KindIO, "reading source kubeconfig", err)
	}
	root, err := os.OpenRoot(filepath.Dir(abs))
	if err != nil {
		return nil, newErr(KindIO, "opening the source's directory", err)
	}
	defer root.Close()
	so.Dir = root
	src, err := ParseSource(opts.Source, data, so)
	if err != nil {
		return nil, err
	}
	src.Path = abs
	return src, nil
}

// SourceWarnings name the settings of an imported cluster and user that
// weaken or redirect the connection: insecure-skip-tls-verify, a proxy-url
// (its password masked) and basic auth. Import returns them; the CLI and
// apply show them.
func SourceWarnings(src *Source) []string {
	var w []string
	if src.Cluster.InsecureSkipTLSVerify {
		w = append(w, fmt.Sprintf("%s: cluster %q sets insecure-skip-tls-verify: the server's identity is not checked", src.Name, src.ClusterName))
	}
	if src.Cluster.ProxyURL != "" {
		w = append(w, fmt.Sprintf("%s: cluster %q sets proxy-url %s: every request to the API server goes through that proxy", src.Name, src.ClusterName, maskURL(src.Cluster.ProxyURL)))
	}
	if src.User.Username != "" || src.User.Password != "" {
		w = append(w, fmt.Sprintf("%s: user %q uses basic auth (username %q and a password): the password goes with every request, and kube-apiserver has not accepted basic auth since Kubernetes 1.19", src.Name, src.UserName, src.User.Username))
	}
	if p := DescribePlugin(src.User); p != "" {
		w = append(w, fmt.Sprintf("%s: user %q has %s (stored because of --allow-exec; it runs whenever the context is used)", src.Name, src.UserName, p))
	}
	return w
}

// maskURL prints a URL with any password replaced by "xxxxx"; a value that
// does not parse is not printed at all.
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a value that is not a URL)"
	}
	return u.Redacted()
}
