package kubeconfig

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/client-go/tools/clientcmd/api"
)

type runtimeObject = runtime.Object

// ExtensionName is the key under which hybridctl marks the cluster, user and
// context it imported, in each entry's `extensions` list. kubectl keeps
// extensions it does not know when it rewrites the file.
const ExtensionName = "hybridctl.dev/imported"

// Marker is the content of the hybridctl.dev/imported extension.
type Marker struct {
	// ImportedAt is when the entry was written (UTC).
	ImportedAt time.Time `json:"importedAt"`
	// Source is the file the entry came from ("<stdin>" for standard input).
	Source string `json:"source,omitempty"`
	// SourceSHA256 is the SHA-256 of the source file's bytes.
	SourceSHA256 string `json:"sourceSHA256,omitempty"`
	// SourceContext, SourceCluster and SourceUser are the entries' names in
	// the source (kubeadm: kubernetes-admin@kubernetes, kubernetes,
	// kubernetes-admin).
	SourceContext string `json:"sourceContext,omitempty"`
	SourceCluster string `json:"sourceCluster,omitempty"`
	SourceUser    string `json:"sourceUser,omitempty"`
}

// markerObject encodes m the way clientcmd stores extensions it does not
// know: a runtime.Unknown holding JSON, written verbatim into the file.
func markerObject(m Marker) (runtime.Object, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}, nil
}

// MarkerOf returns the hybridctl.dev/imported marker in exts, if any.
func MarkerOf(exts map[string]runtime.Object) (*Marker, bool) {
	obj, ok := exts[ExtensionName]
	if !ok || obj == nil {
		return nil, false
	}
	var raw []byte
	switch o := obj.(type) {
	case *runtime.Unknown:
		raw = o.Raw
	default:
		b, err := json.Marshal(o)
		if err != nil {
			return nil, false
		}
		raw = b
	}
	var m Marker
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return &m, true
}

// ContextImported reports whether the context and the cluster and user it
// refers to all carry hybridctl's marker.
func ContextImported(cfg *api.Config, name string) (*Marker, bool) {
	c, ok := cfg.Contexts[name]
	if !ok || c == nil {
		return nil, false
	}
	return MarkerOf(c.Extensions)
}
