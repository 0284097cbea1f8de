package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
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

// objects decodes every document of the phase's files, naming file and
// document in errors.
func (p *manifestPhase) objects() ([]*unstructured.Unstructured, []string, error) {
	var objs []*unstructured.Unstructured
	var where []string
	for _, path := range p.paths {
		f, err := p.files.get(path)
		if err != nil {
			return nil, nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f.Data), 4096)
		for i := 1; ; i++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetKind() == "" || u.GetName() == "" {
				return nil, nil, fmt.Errorf("%s: document %d has no kind or name", path, i)
			}
			objs = append(objs, u)
			where = append(where, path)
		}
	}
	return objs, where, nil
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
	cfg, err := p.restConfig(ctx)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	var errs []error
	for i, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", describeObject(u), where[i], err))
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := u.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("applying %s (%s): %w", describeObject(u), where[i], err))
		}
	}
	return errors.Join(errs...)
}

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
