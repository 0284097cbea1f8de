package procedure

import (
	"context"
	"errors"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// sourced is one object a phase server-side applies, with where it comes
// from (a rendered file, a release manifest) for messages.
type sourced struct {
	obj   *unstructured.Unstructured
	where string
}

// doc is a named stream of YAML or JSON documents.
type doc struct {
	name string
	data []byte
}

// objectsOf decodes the documents of several streams into sourced objects.
func objectsOf(srcs ...doc) ([]sourced, error) {
	// One alias budget for all the documents: they are applied together.
	var aliases manifest.AliasBudget
	return objectsWithin(&aliases, srcs...)
}

// objectsWithin is objectsOf with the caller's alias budget, for objects
// read in several calls but applied together.
func objectsWithin(aliases *manifest.AliasBudget, srcs ...doc) ([]sourced, error) {
	var out []sourced
	for _, s := range srcs {
		objs, err := decodeDocs(s.name, s.data, aliases)
		if err != nil {
			return nil, err
		}
		for _, u := range objs {
			out = append(out, sourced{u, s.name})
		}
	}
	return out, nil
}

// applyAll server-side applies objects in order; errors are joined, each
// naming its object and source.
func applyAll(ctx context.Context, restConfig func(context.Context) (*rest.Config, error), objs []sourced) error {
	a, err := newApplier(ctx, restConfig)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range objs {
		if err := a.apply(ctx, s.obj, s.where); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// diffObjects compares objects with the live cluster the way `kubectl
// diff --server-side` does: a server-side apply dry run with hybridctl's
// field manager (forced, as apply is) gives each object as apply would
// leave it; it differs from the live object in the fields hybridctl owns
// or would take. Each difference is a Change with a unified diff. A
// cluster not built yet, or a kind whose CRD is not installed, makes every
// object a "create". With first, it stops at the first change (enough to
// decide whether a phase must run).
func diffObjects(ctx context.Context, restConfig func(context.Context) (*rest.Config, error), objs []sourced, first bool) ([]engine.Change, error) {
	create := func(s sourced, why string) engine.Change {
		return engine.Change{Object: describeObject(s.obj), Action: engine.ActionCreate,
			Summary: "create " + describeObject(s.obj) + " from " + s.where + why}
	}
	cfg, err := restConfig(ctx)
	if errors.Is(err, inventory.ErrNoCluster) {
		var out []engine.Change
		for _, s := range objs {
			out = append(out, create(s, " (the cluster is not built yet)"))
			if first {
				break
			}
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := newApplier(ctx, func(context.Context) (*rest.Config, error) { return cfg, nil })
	if err != nil {
		return nil, err
	}
	var out []engine.Change
	for _, s := range objs {
		c, err := a.diff(ctx, s)
		if err != nil {
			return out, err
		}
		if c != nil {
			if c.Action == engine.ActionCreate {
				*c = create(s, c.Summary)
			}
			out = append(out, *c)
			if first {
				break
			}
		}
	}
	return out, nil
}

// diff is one object's change, nil when the live object is already as
// apply would leave it. A create's Summary holds only why (its kind is not
// served yet), for the caller to complete.
func (a *applier) diff(ctx context.Context, s sourced) (*engine.Change, error) {
	u := s.obj
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return &engine.Change{Action: engine.ActionCreate, Summary: " (its kind " + gvk.Kind + " is not served yet: its CRD comes first)"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", describeObject(u), s.where, err)
	}
	ri := a.dyn.Resource(m.Resource)
	var live *unstructured.Unstructured
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := u.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		live, err = ri.Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			var dry *unstructured.Unstructured
			dry, err = ri.Namespace(ns).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
			return changeOf(live, dry, err, u, s.where)
		}
	} else {
		live, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			var dry *unstructured.Unstructured
			dry, err = ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
			return changeOf(live, dry, err, u, s.where)
		}
	}
	if apierrors.IsNotFound(err) {
		return &engine.Change{Action: engine.ActionCreate}, nil
	}
	return nil, fmt.Errorf("reading %s (%s): %w", describeObject(u), s.where, err)
}

func changeOf(live, dry *unstructured.Unstructured, err error, u *unstructured.Unstructured, where string) (*engine.Change, error) {
	if err != nil {
		return nil, fmt.Errorf("dry-run apply of %s (%s): %w", describeObject(u), where, err)
	}
	a, err := comparable(live)
	if err != nil {
		return nil, err
	}
	b, err := comparable(dry)
	if err != nil {
		return nil, err
	}
	if a == b {
		return nil, nil
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "live " + describeObject(u), ToFile: "after apply (" + where + ")", Context: 3,
	})
	if err != nil {
		return nil, err
	}
	return &engine.Change{Object: describeObject(u), Action: engine.ActionUpdate,
		Summary: "update " + describeObject(u) + " from " + where, Diff: d}, nil
}

// comparable is an object as YAML without what the server keeps for its
// own bookkeeping (managed fields, resource version, generation): two
// objects that print the same hold the same content.
func comparable(u *unstructured.Unstructured) (string, error) {
	c := u.DeepCopy()
	c.SetManagedFields(nil)
	c.SetResourceVersion("")
	c.SetGeneration(0)
	b, err := yaml.Marshal(c.Object)
	if err != nil {
		return "", fmt.Errorf("%s: %w", describeObject(u), err)
	}
	return string(b), nil
}

// shouldApply is a Skipper's answer for a phase that applies objs: run
// when at least one differs from the cluster.
func shouldApply(ctx context.Context, restConfig func(context.Context) (*rest.Config, error), objs []sourced) (bool, string, error) {
	changes, err := diffObjects(ctx, restConfig, objs, true)
	if err != nil {
		return false, "", err
	}
	if len(changes) == 0 {
		return false, fmt.Sprintf("%d objects already as the spec wants them (server-side dry run)", len(objs)), nil
	}
	return true, "", nil
}
