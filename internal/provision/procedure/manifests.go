package procedure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// FieldManager is the server-side apply field manager of everything apply
// writes through the API.
const FieldManager = "hybridctl"

// manifestPhase server-side applies rendered manifests. Applying the same
// content again is a no-op on the server, so the phase is idempotent
// without a check of its own.
type manifestPhase struct {
	title      string
	paths      []string
	files      Artifacts
	restConfig func(ctx context.Context) (*rest.Config, error)
}

// objects decodes every document of the phase's files.
func (p *manifestPhase) objects() ([]sourced, error) {
	var docs []doc
	for _, path := range p.paths {
		f, err := p.files.get(path)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc{path, f.Data})
	}
	return objectsOf(docs...)
}

// decodeDocs decodes the YAML documents (or the stream of JSON objects)
// of one file, naming the file and document in errors; empty documents are
// skipped. YAML aliases are charged to aliases (the budget of everything
// one phase reads) before anything expands them.
func decodeDocs(name string, data []byte, aliases *manifest.AliasBudget) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	add := func(i int, m map[string]any) error {
		if len(m) == 0 {
			return nil
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetName() == "" {
			return fmt.Errorf("%s: document %d has no kind or name", name, i)
		}
		out = append(out, u)
		return nil
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 1; ; i++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				return out, nil
			} else if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
			}
			if err := add(i, m); err != nil {
				return nil, err
			}
		}
	}
	if err := manifest.CheckYAML(data, aliases); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, d := range manifest.Documents(data) {
		var m map[string]any
		if err := yaml.Unmarshal(d.Data, &m); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, d.Number, err)
		}
		if err := add(d.Number, m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func describeObject(u *unstructured.Unstructured) string {
	s := u.GetKind() + " " + u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		s = u.GetKind() + " " + ns + "/" + u.GetName()
	}
	return s
}

func (p *manifestPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	objs, err := p.objects()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("server-side apply (field manager %s) %s from %s", FieldManager, describeObject(o.obj), o.where))
	}
	return out, nil
}

func (p *manifestPhase) Run(ctx context.Context, _ engine.Host) error {
	objs, err := p.objects()
	if err != nil {
		return err
	}
	return applyAll(ctx, p.restConfig, objs)
}

// ShouldRun implements engine.Skipper: only when an object differs from
// the cluster (a server-side dry run).
func (p *manifestPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	objs, err := p.objects()
	if err != nil {
		return false, "", err
	}
	return shouldApply(ctx, p.restConfig, objs)
}

// Diff implements engine.Differ.
func (p *manifestPhase) Diff(ctx context.Context, _ engine.Host) ([]engine.Change, error) {
	objs, err := p.objects()
	if err != nil {
		return nil, err
	}
	return diffObjects(ctx, p.restConfig, objs, false)
}

// applier server-side applies objects of any kind known to the API server.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(ctx context.Context, restConfig func(context.Context) (*rest.Config, error)) (*applier, error) {
	cfg, err := restConfig(ctx)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// resource maps u's kind; a kind that is not served yet (a CRD just
// created and not yet established) is retried with fresh discovery for up
// to crdWait.
func (a *applier) resource(ctx context.Context, u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	deadline := time.Now().Add(crdWait)
	for {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ns := u.GetNamespace()
				if ns == "" {
					ns = metav1.NamespaceDefault
				}
				return a.dyn.Resource(m.Resource).Namespace(ns), nil
			}
			return a.dyn.Resource(m.Resource), nil
		}
		if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return nil, err
		}
		a.mapper.Reset()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, where string) error {
	ri, err := a.resource(ctx, u)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", describeObject(u), where, err)
	}
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying %s (%s): %w", describeObject(u), where, err)
	}
	return nil
}

// crdWait bounds the wait for a just-created CRD's kind to be served.
const crdWait = 60 * time.Second

// RESTConfigFrom returns the REST configuration of the context the
// kubeconfig phase imported (the cluster's name), for the phases that
// talk to the API.
func RESTConfigFrom(t *KubeconfigTarget) func(ctx context.Context) (*rest.Config, error) {
	return func(ctx context.Context) (*rest.Config, error) {
		cfg, err := t.Store.Read(ctx)
		if err != nil {
			return nil, err
		}
		name := t.context()
		kc, ok := cfg.Contexts[name]
		if !ok {
			return nil, fmt.Errorf("%s has no context %q: run the kubeconfig phase first: %w", t.Store.Path, name, inventory.ErrNoCluster)
		}
		cluster, user := cfg.Clusters[kc.Cluster], cfg.AuthInfos[kc.AuthInfo]
		if cluster == nil || user == nil {
			return nil, fmt.Errorf("%s: context %q lacks its cluster or user", t.Store.Path, name)
		}
		return kubeconfig.RESTConfig(cluster, user)
	}
}
