package apply

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
	"github.com/hybridctl/hybridctl/internal/provision"
)

// FieldManager is the server-side apply field manager of everything apply
// writes through the API.
const FieldManager = "hybridctl"

// manifestPhase server-side applies rendered manifests. Applying the same
// content again is a no-op on the server, so the phase is idempotent
// without a check of its own.
type manifestPhase struct {
	title, desc string
	after       []string
	paths       []string
	files       Artifacts
	restConfig  func(ctx context.Context) (*rest.Config, error)
}

func (p *manifestPhase) Title() string       { return p.title }
func (p *manifestPhase) Description() string { return p.desc }
func (p *manifestPhase) Targets([]provision.Host) []provision.Host {
	return []provision.Host{provision.ClusterHost()}
}
func (p *manifestPhase) Waits() []string { return p.after }

// objects decodes every document of the phase's files.
func (p *manifestPhase) objects() ([]*unstructured.Unstructured, []string, error) {
	var objs []*unstructured.Unstructured
	var where []string
	var aliases manifest.AliasBudget
	for _, path := range p.paths {
		f, err := p.files.get(path)
		if err != nil {
			return nil, nil, err
		}
		docs, err := decodeDocs(path, f.Data, &aliases)
		if err != nil {
			return nil, nil, err
		}
		for _, u := range docs {
			objs = append(objs, u)
			where = append(where, path)
		}
	}
	return objs, where, nil
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

func (p *manifestPhase) DryRun(context.Context, provision.Host) ([]string, error) {
	objs, where, err := p.objects()
	if err != nil {
		return nil, err
	}
	var out []string
	for i, u := range objs {
		out = append(out, fmt.Sprintf("server-side apply (field manager %s) %s from %s", FieldManager, describeObject(u), where[i]))
	}
	return out, nil
}

func (p *manifestPhase) Run(ctx context.Context, _ provision.Host) error {
	if p.restConfig == nil {
		return fmt.Errorf("%w: phase %s has no API access", provision.ErrNotImplemented, p.title)
	}
	objs, where, err := p.objects()
	if err != nil {
		return err
	}
	a, err := newApplier(ctx, p.restConfig)
	if err != nil {
		return err
	}
	var errs []error
	for i, u := range objs {
		if err := a.apply(ctx, u, where[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
		kc, ok := cfg.Contexts[t.Name]
		if !ok {
			return nil, fmt.Errorf("%s has no context %q: run the kubeconfig phase first", t.Store.Path, t.Name)
		}
		cluster, user := cfg.Clusters[kc.Cluster], cfg.AuthInfos[kc.AuthInfo]
		if cluster == nil || user == nil {
			return nil, fmt.Errorf("%s: context %q lacks its cluster or user", t.Store.Path, t.Name)
		}
		return kubeconfig.RESTConfig(cluster, user)
	}
}
