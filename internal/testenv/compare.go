package testenv

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// NewRESTMapper returns a RESTMapper backed by the API server's discovery
// (cached in memory), which knows every built-in kind and every served
// custom resource.
func NewRESTMapper(cfg *rest.Config) (meta.ResettableRESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}

// Subset reports where got does not contain want: every key of a map in
// want must be in got with a value that contains want's, a list in got must
// start with want's items, in order (admission appends: service-account
// token volumes, default tolerations), and scalars must be equal (whole numbers compare equal across int64 and float64). It returns
// one line per difference, with the field path, in a stable order; nil
// means got contains want. Use it to compare fixtures with what the API
// server returns, which adds defaults and metadata.
func Subset(want, got any) []string {
	var diffs []string
	subset("", want, got, &diffs)
	return diffs
}

func subset(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want an object", orRoot(path), describe(got)))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				if w[k] == nil {
					continue
				}
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing, want %s", path, k, describe(w[k])))
				continue
			}
			subset(path+"."+k, w[k], gv, diffs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want a list", orRoot(path), describe(got)))
			return
		}
		if len(g) < len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %d items, want at least %d", orRoot(path), len(g), len(w)))
			return
		}
		for i := range w {
			subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	default:
		if !scalarEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %s, want %s", orRoot(path), describe(got), describe(want)))
		}
	}
}

func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%#v", v)
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
