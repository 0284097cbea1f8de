package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/manifest"
)

// Object is one fixture document with where it came from.
type Object struct {
	*unstructured.Unstructured
	// Source is "file:line" of the document's first line.
	Source string
}

// Ref names the object for messages: "Kind namespace/name (file:line)".
func (o Object) Ref() string {
	n := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		n = ns + "/" + n
	}
	return fmt.Sprintf("%s %s (%s)", o.GetKind(), n, o.Source)
}

// ReadDir reads every *.yaml, *.yml and *.json file under dir (recursively,
// in lexical order) as multi-document YAML and returns the objects. List
// kinds (v1 List, or any kind ending in "List" with items) are flattened.
// Empty documents are skipped; a document without apiVersion, kind or
// metadata.name is an error naming its file and line.
func ReadDir(dir string) ([]Object, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read fixtures %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read fixtures %s: no .yaml, .yml or .json files", dir)
	}
	sort.Strings(files)
	var all []Object
	for _, f := range files {
		objs, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

// ReadFile reads one multi-document YAML (or JSON) file; see ReadDir.
func ReadFile(path string) ([]Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fixtures: %w", err)
	}
	return Parse(path, b)
}

// Parse splits data (named name in messages) into objects; see ReadDir.
func Parse(name string, data []byte) ([]Object, error) {
	var objs []Object
	for _, d := range manifest.Documents(data) {
		src := fmt.Sprintf("%s:%d", name, d.Line)
		// Strict: a duplicate key (often a missing "---") is an error, not
		// a silently overwritten field.
		js, err := yaml.YAMLToJSONStrict(d.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		var m map[string]any
		// k8s.io/apimachinery/pkg/util/json keeps whole numbers as int64,
		// as the API machinery's unstructured objects have them.
		if err := utiljson.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("%s: not a YAML object: %w", src, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			for i := range list.Items {
				o := Object{Unstructured: &list.Items[i], Source: fmt.Sprintf("%s items[%d]", src, i)}
				if err := checkIdentity(o); err != nil {
					return nil, err
				}
				objs = append(objs, o)
			}
			continue
		}
		o := Object{Unstructured: u, Source: src}
		if err := checkIdentity(o); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

func checkIdentity(o Object) error {
	switch {
	case o.GetAPIVersion() == "":
		return fmt.Errorf("%s: apiVersion is missing", o.Source)
	case o.GetKind() == "":
		return fmt.Errorf("%s: kind is missing", o.Source)
	case o.GetName() == "" && o.GetGenerateName() == "":
		return fmt.Errorf("%s: %s has no metadata.name", o.Source, o.GetKind())
	}
	return nil
}

// LoadDir loads every object under dir (see ReadDir) into the cluster.
func (e *Env) LoadDir(ctx context.Context, dir string) error {
	objs, err := ReadDir(dir)
	if err != nil {
		return err
	}
	if err := e.Load(ctx, objs); err != nil {
		return fmt.Errorf("load %s: %w", dir, err)
	}
	return nil
}

// LoadFile loads one multi-document file into the cluster.
func (e *Env) LoadFile(ctx context.Context, path string) error {
	objs, err := ReadFile(path)
	if err != nil {
		return err
	}
	if err := e.Load(ctx, objs); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	return nil
}

// Load creates objs in dependency order, as a cluster would have them:
//
//  1. CustomResourceDefinitions, then waits until each is Established;
//  2. Namespaces, each given a "default" ServiceAccount (no
//     kube-controller-manager runs to create it);
//  3. cluster-wide policy and configuration: admission policies and
//     webhooks, PriorityClasses, RuntimeClasses, StorageClasses, RBAC,
//     ServiceAccounts, ConfigMaps, Secrets;
//  4. Nodes; 5. Services and Endpoints; 6. workload controllers;
//  7. Pods; 8. everything else (custom resources, CSRs, ...).
//
// Objects of one step are created concurrently. When an object carries a
// status and its resource has a status subresource, the status is written
// through it after the create (the API server drops status on create), as
// the owning controller or kubelet would. Nodes then get back exactly the
// fixture's taints: admission adds node.kubernetes.io/not-ready on create
// and no node lifecycle controller runs to remove it. Errors name the
// object and its file and line; all errors of a step are returned together.
func (e *Env) Load(ctx context.Context, objs []Object) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	l := &loader{env: e, dyn: dyn, mapper: mapper, discovery: cached}

	steps := make([][]Object, numSteps)
	for _, o := range objs {
		s := stepOf(o)
		steps[s] = append(steps[s], o)
	}
	for s, batch := range steps {
		if len(batch) == 0 {
			continue
		}
		began := time.Now()
		if err := l.createAll(ctx, batch); err != nil {
			return err
		}
		e.logf("testenv: created %d objects (%s) in %s", len(batch), stepName(s), time.Since(began).Round(time.Millisecond))
		switch s {
		case stepCRDs:
			began := time.Now()
			if err := l.waitEstablished(ctx, batch); err != nil {
				return err
			}
			e.logf("testenv: %d CRDs Established after %s more", len(batch), time.Since(began).Round(time.Millisecond))
			cached.Invalidate()
			mapper.Reset()
		case stepNamespaces:
			// A fixture may bring its own default ServiceAccount (for
			// example with imagePullSecrets); it is created in the next step.
			own := map[string]bool{}
			for _, o := range objs {
				if o.GetKind() == "ServiceAccount" && o.GetAPIVersion() == "v1" && o.GetName() == defaultServiceAccount {
					own[o.GetNamespace()] = true
				}
			}
			names := make([]string, 0, len(batch))
			for _, o := range batch {
				if !own[o.GetName()] {
					names = append(names, o.GetName())
				}
			}
			if err := e.ensureServiceAccounts(ctx, names...); err != nil {
				return err
			}
		}
	}
	return nil
}

const (
	stepCRDs = iota
	stepNamespaces
	stepPolicy
	stepNodes
	stepServices
	stepWorkloads
	stepPods
	stepOther
	numSteps
)

func stepName(s int) string {
	return [numSteps]string{"CRDs", "namespaces", "policy and configuration", "nodes", "services", "workloads", "pods", "other"}[s]
}

func stepOf(o Object) int {
	gk := o.GroupVersionKind().GroupKind()
	switch gk.Group {
	case "apiextensions.k8s.io":
		if gk.Kind == "CustomResourceDefinition" {
			return stepCRDs
		}
	case "":
		switch gk.Kind {
		case "Namespace":
			return stepNamespaces
		case "ServiceAccount", "ConfigMap", "Secret", "LimitRange", "ResourceQuota":
			return stepPolicy
		case "Node":
			return stepNodes
		case "Service", "Endpoints":
			return stepServices
		case "Pod":
			return stepPods
		case "ReplicationController":
			return stepWorkloads
		}
	case "admissionregistration.k8s.io", "rbac.authorization.k8s.io", "scheduling.k8s.io",
		"node.k8s.io", "storage.k8s.io", "flowcontrol.apiserver.k8s.io", "policy":
		return stepPolicy
	case "discovery.k8s.io":
		return stepServices
	case "apps", "batch":
		return stepWorkloads
	}
	return stepOther
}

type loader struct {
	env       *Env
	dyn       dynamic.Interface
	mapper    meta.ResettableRESTMapper
	discovery discovery.CachedDiscoveryInterface
}

// loadWorkers bounds concurrent requests; the facts measured 350-550
// objects/s with 32.
const loadWorkers = 16

func (l *loader) createAll(ctx context.Context, batch []Object) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, loadWorkers)
	)
	for _, o := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := l.create(ctx, o); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func (l *loader) resource(o Object) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gvk := o.GroupVersionKind()
	m, err := l.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: no resource for %s in the API server: %w", o.Ref(), gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := o.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		return l.dyn.Resource(m.Resource).Namespace(ns), m, nil
	}
	if o.GetNamespace() != "" {
		return nil, nil, fmt.Errorf("%s: %s is cluster-scoped but metadata.namespace is %q", o.Ref(), gvk.Kind, o.GetNamespace())
	}
	return l.dyn.Resource(m.Resource), m, nil
}

func (l *loader) create(ctx context.Context, o Object) error {
	ri, m, err := l.resource(o)
	if err != nil {
		return err
	}
	obj := o.DeepCopy()
	status, hasStatus := obj.Object["status"]
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "hybridctl-testenv"})
	if err != nil {
		return fmt.Errorf("%s: create: %w", o.Ref(), err)
	}
	if !hasStatus || status == nil {
		return nil
	}
	sub, err := l.hasStatusSubresource(m.Resource)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref(), err)
	}
	if !sub {
		return nil // status was stored with the object
	}
	created.Object["status"] = runtimeDeepCopy(status)
	updated, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "hybridctl-testenv"})
	if err != nil {
		return fmt.Errorf("%s: update status: %w", o.Ref(), err)
	}
	if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Node"}) {
		return l.resetTaints(ctx, ri, o, updated)
	}
	return nil
}

// resetTaints sets the node's taints to the fixture's own list, dropping the
// node.kubernetes.io/not-ready taint admission added on create.
func (l *loader) resetTaints(ctx context.Context, ri dynamic.ResourceInterface, o Object, live *unstructured.Unstructured) error {
	want, _, err := unstructured.NestedSlice(o.Object, "spec", "taints")
	if err != nil {
		return fmt.Errorf("%s: spec.taints: %w", o.Ref(), err)
	}
	have, _, _ := unstructured.NestedSlice(live.Object, "spec", "taints")
	if reflect.DeepEqual(want, have) {
		return nil
	}
	if len(want) == 0 {
		unstructured.RemoveNestedField(live.Object, "spec", "taints")
	} else if err := unstructured.SetNestedSlice(live.Object, want, "spec", "taints"); err != nil {
		return fmt.Errorf("%s: spec.taints: %w", o.Ref(), err)
	}
	if _, err := ri.Update(ctx, live, metav1.UpdateOptions{FieldManager: "hybridctl-testenv"}); err != nil {
		return fmt.Errorf("%s: reset taints: %w", o.Ref(), err)
	}
	return nil
}

func runtimeDeepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}

func (l *loader) hasStatusSubresource(gvr schema.GroupVersionResource) (bool, error) {
	rl, err := l.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	return slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool {
		return r.Name == gvr.Resource+"/status"
	}), nil
}

// waitEstablished waits until every CRD in batch has the conditions
// Established=True and NamesAccepted=True. It lists once and then watches:
// the Calico CRDs are megabytes of schema, and polling them would compete
// with the API server for the CPU it needs to establish them.
func (l *loader) waitEstablished(ctx context.Context, batch []Object) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pending := map[string]Object{}
	for _, o := range batch {
		pending[o.GetName()] = o
	}
	notEstablished := func() error {
		var names []string
		for _, o := range pending {
			names = append(names, o.Ref())
		}
		sort.Strings(names)
		return fmt.Errorf("CustomResourceDefinitions not Established: %s: %w", strings.Join(names, ", "), ctx.Err())
	}
	for {
		list, err := l.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return notEstablished()
			}
			return fmt.Errorf("list CustomResourceDefinitions: %w", err)
		}
		for i := range list.Items {
			if crdEstablished(&list.Items[i]) {
				delete(pending, list.Items[i].GetName())
			}
		}
		if len(pending) == 0 {
			return nil
		}
		w, err := l.dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			if ctx.Err() != nil {
				return notEstablished()
			}
			return fmt.Errorf("watch CustomResourceDefinitions: %w", err)
		}
		for ev := range w.ResultChan() {
			if crd, ok := ev.Object.(*unstructured.Unstructured); ok && crdEstablished(crd) {
				delete(pending, crd.GetName())
				if len(pending) == 0 {
					w.Stop()
					return nil
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return notEstablished()
		}
		// The watch ended (expired or closed by the server): list again.
	}
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	ok := 0
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if (m["type"] == "Established" || m["type"] == "NamesAccepted") && m["status"] == "True" {
			ok++
		}
	}
	return ok == 2
}

// ensureServiceAccounts creates the "default" ServiceAccount in each
// namespace that lacks one, as kube-controller-manager's service-account
// controller would; the ServiceAccount admission plugin rejects pods
// without it.
func (e *Env) ensureServiceAccounts(ctx context.Context, namespaces ...string) error {
	client, err := e.Client()
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range namespaces {
		// Namespaces the API server creates itself (kube-system, kube-public)
		// can appear shortly after /readyz.
		err := retryNotFound(ctx, func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccount}}
			_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
			return err
		})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create ServiceAccount %s/%s: %w", ns, defaultServiceAccount, err))
		}
	}
	return errors.Join(errs...)
}

func retryNotFound(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
