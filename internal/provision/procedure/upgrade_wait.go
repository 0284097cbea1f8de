package procedure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// The kinds of workload whose availability upgrade waits for after a
// drain, as `kubectl get` names them.
const (
	kindDeployment  = "deployment"
	kindStatefulSet = "statefulset"
	kindReplicaSet  = "replicaset"
	kindPDB         = "poddisruptionbudget"
)

// workloadRef names a workload (or a PodDisruptionBudget) in a namespace.
type workloadRef struct{ kind, namespace, name string }

func (w workloadRef) String() string { return w.kind + " " + w.namespace + "/" + w.name }

// evicted is what one drain evicted and must be available again before
// the next node is drained: the Deployments, StatefulSets and ReplicaSets
// (those a Deployment does not own) whose pods were evicted, each with
// its available replicas just before the evictions, and the
// PodDisruptionBudgets that were healthy then (currentHealthy >=
// desiredHealthy). A budget already short before the drain is not the
// drain's doing: it is named (unhealthyBefore), not waited for.
type evicted struct {
	node            string
	before          map[workloadRef]int32
	pdbs            []workloadRef
	unhealthyBefore []string
	// others are evicted pods' controllers of other kinds (a Job, an
	// operator's resource): not waited for, named.
	others []string
}

// workloads are the workloads, sorted.
func (e *evicted) workloads() []workloadRef {
	out := make([]workloadRef, 0, len(e.before))
	for w := range e.before {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b workloadRef) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// what says what is waited for, for people.
func (e *evicted) what() string {
	var parts []string
	for _, w := range e.workloads() {
		parts = append(parts, fmt.Sprintf("%s (%d available before the drain)", w, e.before[w]))
	}
	if len(e.pdbs) > 0 {
		var names []string
		for _, p := range e.pdbs {
			names = append(names, p.namespace+"/"+p.name)
		}
		parts = append(parts, "PodDisruptionBudgets healthy again: "+strings.Join(names, ", "))
	}
	return strings.Join(parts, "; ")
}

// empty: nothing was evicted that upgrade can wait for.
func (e *evicted) empty() bool { return len(e.before) == 0 && len(e.pdbs) == 0 }

// snapshotEvictions reads, just before a drain evicts pods (the pods
// about to be evicted from node), the available replicas of their
// workloads and which PodDisruptionBudgets are healthy.
func snapshotEvictions(ctx context.Context, client kubeclient.Interface, node string, pods []corev1.Pod) (*evicted, error) {
	e := &evicted{node: node, before: map[workloadRef]int32{}}
	others := map[string]bool{}
	for _, p := range pods {
		if finished(&p) {
			continue
		}
		ref := metav1.GetControllerOf(&p)
		if ref == nil {
			continue
		}
		w, err := workloadOf(ctx, client, p.Namespace, ref)
		if err != nil {
			return nil, err
		}
		if w.kind == "" {
			others[strings.ToLower(ref.Kind)+" "+p.Namespace+"/"+ref.Name] = true
			continue
		}
		if _, seen := e.before[w]; seen {
			continue
		}
		st, err := workloadStatus(ctx, client, w)
		if apierrors.IsNotFound(err) {
			continue // gone: nothing to come back
		}
		if err != nil {
			return nil, err
		}
		e.before[w] = st.available
	}
	for o := range others {
		e.others = append(e.others, o)
	}
	slices.Sort(e.others)
	pdbs, err := client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the PodDisruptionBudgets before draining %s: %w", node, err)
	}
	for _, b := range pdbs.Items {
		ref := workloadRef{kindPDB, b.Namespace, b.Name}
		if b.Status.CurrentHealthy >= b.Status.DesiredHealthy {
			e.pdbs = append(e.pdbs, ref)
		} else {
			e.unhealthyBefore = append(e.unhealthyBefore, fmt.Sprintf("%s/%s (%d healthy, %d desired)", b.Namespace, b.Name, b.Status.CurrentHealthy, b.Status.DesiredHealthy))
		}
	}
	slices.SortFunc(e.pdbs, func(a, b workloadRef) int { return strings.Compare(a.String(), b.String()) })
	slices.Sort(e.unhealthyBefore)
	return e, nil
}

// workloadOf is the workload upgrade waits for when a pod controlled by
// ref is evicted: a ReplicaSet's Deployment (or the ReplicaSet, when no
// Deployment controls it), a StatefulSet; another kind gives a zero ref.
func workloadOf(ctx context.Context, client kubeclient.Interface, ns string, ref *metav1.OwnerReference) (workloadRef, error) {
	if ref.APIVersion != "apps/v1" {
		return workloadRef{}, nil
	}
	switch ref.Kind {
	case "StatefulSet":
		return workloadRef{kindStatefulSet, ns, ref.Name}, nil
	case "ReplicaSet":
		rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return workloadRef{kindReplicaSet, ns, ref.Name}, nil
		}
		if err != nil {
			return workloadRef{}, fmt.Errorf("reading replicaset %s/%s: %w", ns, ref.Name, err)
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.APIVersion == "apps/v1" && d.Kind == "Deployment" {
			return workloadRef{kindDeployment, ns, d.Name}, nil
		}
		return workloadRef{kindReplicaSet, ns, ref.Name}, nil
	}
	return workloadRef{}, nil
}

// workloadState is what a workload's controller last wrote: its available
// replicas, the replicas it wants, and whether it has seen its latest
// spec (observedGeneration).
type workloadState struct {
	available, wanted int32
	observed          bool
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1 // the API's default
	}
	return *r
}

func workloadStatus(ctx context.Context, client kubeclient.Interface, w workloadRef) (workloadState, error) {
	apps := client.AppsV1()
	switch w.kind {
	case kindDeployment:
		d, err := apps.Deployments(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return workloadState{}, err
		}
		return workloadState{d.Status.AvailableReplicas, replicas(d.Spec.Replicas), d.Status.ObservedGeneration >= d.Generation}, nil
	case kindStatefulSet:
		s, err := apps.StatefulSets(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return workloadState{}, err
		}
		return workloadState{s.Status.AvailableReplicas, replicas(s.Spec.Replicas), s.Status.ObservedGeneration >= s.Generation}, nil
	case kindReplicaSet:
		r, err := apps.ReplicaSets(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return workloadState{}, err
		}
		return workloadState{r.Status.AvailableReplicas, replicas(r.Spec.Replicas), r.Status.ObservedGeneration >= r.Generation}, nil
	}
	return workloadState{}, fmt.Errorf("%s: not a workload upgrade waits for", w)
}

// unavailable lists what is not available again, one entry each, sorted
// (workloads first, then budgets): a workload with fewer available
// replicas than before the drain (or than it now wants, if it was scaled
// down), or whose controller has not seen its latest spec; a budget whose
// currentHealthy is below desiredHealthy or whose status is older than its
// spec. A workload or budget deleted meanwhile is not waited for; an API
// error is reported as pending (the API server may be restarting).
func (e *evicted) unavailable(ctx context.Context, client kubeclient.Interface) []string {
	var out []string
	for _, w := range e.workloads() {
		st, err := workloadStatus(ctx, client, w)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", w, err))
		case !st.observed:
			out = append(out, fmt.Sprintf("%s: its controller has not seen its latest spec", w))
		case st.available < min(e.before[w], st.wanted):
			out = append(out, fmt.Sprintf("%s: %d of %d available", w, st.available, min(e.before[w], st.wanted)))
		}
	}
	for _, ref := range e.pdbs {
		b, err := client.PolicyV1().PodDisruptionBudgets(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", ref, err))
		case b.Status.ObservedGeneration < b.Generation:
			out = append(out, fmt.Sprintf("%s: the disruption controller has not seen its latest spec", ref))
		case b.Status.CurrentHealthy < b.Status.DesiredHealthy:
			out = append(out, fmt.Sprintf("%s: %d healthy, %d desired", ref, b.Status.CurrentHealthy, b.Status.DesiredHealthy))
		}
	}
	return out
}

// errNotAvailableAgain is the wait's failure: what a drain evicted did not
// become available again in time. The node itself is upgraded and
// uncordoned then; the upgrade drains no other node in this run.
var errNotAvailableAgain = errors.New("not available again")

// awaitEvicted waits, after node's upgrade (the node is upgraded and
// uncordoned), until everything its drain evicted is available again, for
// up to timeout, polling every poll. It reports what it waits for as
// progress events of the step (when it starts, whenever the list of what
// is still unavailable changes, and when it is done). On timeout the
// error wraps errNotAvailableAgain, names what is still unavailable and
// says that the node is upgraded and uncordoned; on cancellation it wraps
// the context's error and says the same.
func awaitEvicted(ctx context.Context, client kubeclient.Interface, e *evicted, timeout, poll time.Duration) error {
	if len(e.unhealthyBefore) > 0 {
		engine.Warn(ctx, "PodDisruptionBudgets already below their budget before %s was drained, not waited for: %s", e.node, strings.Join(e.unhealthyBefore, ", "))
	}
	if len(e.others) > 0 {
		engine.Progress(ctx, "not waited for (upgrade waits for Deployments, StatefulSets and ReplicaSets): %s", strings.Join(e.others, ", "))
	}
	if e.empty() {
		return nil
	}
	engine.Progress(ctx, "waiting up to %s for what the drain of %s evicted to be available again: %s", timeout, e.node, e.what())
	start := time.Now()
	var last string
	pending, err := waitUntil(ctx, timeout, poll, func(ctx context.Context) (bool, string) {
		left := e.unavailable(ctx, client)
		state := strings.Join(left, "; ")
		if len(left) > 0 && state != last {
			engine.Progress(ctx, "waiting for %s", state)
		}
		last = state
		return len(left) == 0, state
	})
	switch {
	case err == nil:
		engine.Progress(ctx, "what the drain of %s evicted is available again after %s", e.node, time.Since(start).Round(100*time.Millisecond))
		return nil
	case errors.Is(err, errWaitTimedOut):
		return fmt.Errorf("what the drain of %s evicted is %w within %s: %s (%s is upgraded and uncordoned; no other node is drained in this run: once these are available, run hybridctl upgrade again)",
			e.node, errNotAvailableAgain, timeout, pending, e.node)
	default:
		return fmt.Errorf("waiting for what the drain of %s evicted to be available again (%s; %s is upgraded and uncordoned): %w", e.node, pending, e.node, err)
	}
}

// drainGate is shared by the upgrade's node phases of one run: once what
// a drain evicted did not become available again in time, no further node
// is drained; a node that would be says why.
type drainGate struct {
	mu     sync.Mutex
	closed error
}

func (g *drainGate) close(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = err
	}
}

// check is nil while nodes may be drained.
func (g *drainGate) check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}
