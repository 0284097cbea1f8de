package kubeconfig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	api "k8s.io/client-go/tools/clientcmd/api"
)

// ContextInfo is one row of `kubeconfig list`.
type ContextInfo struct {
	Name      string `json:"name"`
	Current   bool   `json:"current"`
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
	Server    string `json:"server,omitempty"`
	// Imported is set when hybridctl imported the context; it holds when
	// and from where.
	Imported *Marker `json:"imported,omitempty"`
	// Problems are dangling references (a cluster or user that is not
	// defined).
	// Always present in JSON, [] when there are none.
	Problems []string `json:"problems"`
}

// ListResult is what `kubeconfig list` prints.
type ListResult struct {
	File           string        `json:"file"`
	CurrentContext string        `json:"currentContext"`
	Contexts       []ContextInfo `json:"contexts"`
	// Shadowed are the names that files later in $KUBECONFIG also define
	// with different content: client-go takes the first file's entry, so the
	// later one is silently ignored (the guide's trap).
	// Always present in JSON, [] when there are none.
	Shadowed []Shadow `json:"shadowed"`
}

// Shadow is a name defined by two files of a KUBECONFIG list with different
// content.
type Shadow struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Winner   string `json:"winner"`
	Shadowed string `json:"shadowed"`
}

// List describes the contexts of one kubeconfig file.
func List(ctx context.Context, st *Store) (*ListResult, error) {
	cfg, err := st.Read(ctx)
	if err != nil {
		return nil, err
	}
	return describe(st.Path, cfg), nil
}

func describe(file string, cfg *api.Config) *ListResult {
	res := &ListResult{File: file, CurrentContext: cfg.CurrentContext, Contexts: []ContextInfo{}, Shadowed: []Shadow{}}
	for _, n := range sortedKeys(cfg.Contexts) {
		c := cfg.Contexts[n]
		if c == nil {
			continue
		}
		ci := ContextInfo{Name: n, Current: n == cfg.CurrentContext, Cluster: c.Cluster, User: c.AuthInfo, Namespace: c.Namespace, Problems: []string{}}
		if cl, ok := cfg.Clusters[c.Cluster]; ok && cl != nil {
			ci.Server = cl.Server
		} else {
			ci.Problems = append(ci.Problems, fmt.Sprintf("cluster %q is not defined", c.Cluster))
		}
		if u, ok := cfg.AuthInfos[c.AuthInfo]; !ok || u == nil {
			ci.Problems = append(ci.Problems, fmt.Sprintf("user %q is not defined", c.AuthInfo))
		}
		if m, ok := MarkerOf(c.Extensions); ok {
			ci.Imported = m
		}
		res.Contexts = append(res.Contexts, ci)
	}
	return res
}

// FindShadows loads every file of a KUBECONFIG list and reports the names
// that a later file defines with different content than an earlier one.
// Files that do not exist are skipped, as client-go does.
func FindShadows(ctx context.Context, files []string) ([]Shadow, error) {
	type seen struct {
		file, id string
	}
	clusters, users, contexts := map[string]seen{}, map[string]seen{}, map[string]seen{}
	var out []Shadow
	check := func(m map[string]seen, kind, name, file, id string) {
		if prev, ok := m[name]; ok {
			if prev.id != id {
				out = append(out, Shadow{Kind: kind, Name: name, Winner: prev.file, Shadowed: file})
			}
			return
		}
		m[name] = seen{file, id}
	}
	done := map[string]bool{}
	for _, f := range files {
		if f == "" {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil || done[abs] {
			continue
		}
		done[abs] = true
		if err := ctx.Err(); err != nil {
			return nil, newErr(KindIO, "reading "+f, err)
		}
		data, err := os.ReadFile(abs)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, newErr(KindIO, "reading kubeconfig "+f, err)
		}
		cfg, err := LoadConfig(f, data)
		if err != nil {
			return nil, err
		}
		for _, n := range sortedKeys(cfg.Clusters) {
			check(clusters, "cluster", n, f, ClusterIdentity(cfg.Clusters[n]))
		}
		for _, n := range sortedKeys(cfg.AuthInfos) {
			check(users, "user", n, f, UserIdentity(cfg.AuthInfos[n]))
		}
		for _, n := range sortedKeys(cfg.Contexts) {
			c := cfg.Contexts[n]
			if c == nil {
				continue
			}
			check(contexts, "context", n, f, c.Cluster+"\x00"+c.AuthInfo+"\x00"+c.Namespace)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// RemoveResult says what Remove did.
type RemoveResult struct {
	Target  string   `json:"target"`
	Context string   `json:"context"`
	Removed []string `json:"removed"` // "context NAME", "cluster NAME", "user NAME"
	// Kept are the cluster and user of the context that other contexts
	// still use.
	Kept []string `json:"kept,omitempty"`
	// ClearedCurrent is true when the removed context was the current one.
	ClearedCurrent bool `json:"clearedCurrent,omitempty"`
	UpdateResult
}

// Remove deletes a context, plus the cluster and user it referenced when no
// other context references them.
func Remove(ctx context.Context, st *Store, name string) (*RemoveResult, error) {
	res := &RemoveResult{Target: st.Path, Context: name}
	upd, err := st.Update(ctx, func(cfg *api.Config) (bool, error) {
		res.Removed, res.Kept, res.ClearedCurrent = nil, nil, false
		c, ok := cfg.Contexts[name]
		if !ok {
			return false, newErr(KindUsage, fmt.Sprintf("%s: no context %q (it has: %s)", st.Path, name, joinOrNone(sortedKeys(cfg.Contexts))), nil)
		}
		delete(cfg.Contexts, name)
		res.Removed = append(res.Removed, "context "+name)
		clusterUsed, userUsed := false, false
		for _, o := range cfg.Contexts {
			if o == nil {
				continue
			}
			clusterUsed = clusterUsed || o.Cluster == c.Cluster
			userUsed = userUsed || o.AuthInfo == c.AuthInfo
		}
		if _, ok := cfg.Clusters[c.Cluster]; ok {
			if clusterUsed {
				res.Kept = append(res.Kept, "cluster "+c.Cluster)
			} else {
				delete(cfg.Clusters, c.Cluster)
				res.Removed = append(res.Removed, "cluster "+c.Cluster)
			}
		}
		if _, ok := cfg.AuthInfos[c.AuthInfo]; ok {
			if userUsed {
				res.Kept = append(res.Kept, "user "+c.AuthInfo)
			} else {
				delete(cfg.AuthInfos, c.AuthInfo)
				res.Removed = append(res.Removed, "user "+c.AuthInfo)
			}
		}
		if cfg.CurrentContext == name {
			cfg.CurrentContext = ""
			res.ClearedCurrent = true
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	res.UpdateResult = upd
	return res, nil
}

func joinOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
