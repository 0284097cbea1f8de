package procedure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// drainer is kubectl drain NODE --ignore-daemonsets --delete-emptydir-data
// (--force not given), with kubectl's semantics: the node is cordoned; its
// pods are taken through kubectl's filters in kubectl's order (mirror pods
// and DaemonSet pods are left alone, a DaemonSet pod whose DaemonSet is gone
// and a pod with no controller stop the drain, emptyDir data is deleted,
// finished pods always go); every other pod is evicted through the
// Eviction API, so PodDisruptionBudgets hold (a refused eviction is retried
// every evictRetry until timeout), and the drain waits until each evicted
// pod is gone or replaced by a new one of the same name.
type drainer struct {
	client kubeclient.Interface
	// gracePeriod overrides the pods' termination grace period; -1 keeps
	// each pod's own.
	gracePeriod int
	timeout     time.Duration
	evictRetry  time.Duration // kubectl's: 5 s
	poll        time.Duration // kubectl's: 1 s
	chunk       int64         // pods listed per request (kubectl's: 500)
	// beforeEvict, when set, is called with the pods about to be evicted,
	// after the drain's checks passed and before the first eviction; an
	// error stops the drain there.
	beforeEvict func(ctx context.Context, pods []corev1.Pod) error
}

// The reasons a pod stops a drain or is passed over, in kubectl's words
// without its flags.
const (
	daemonSetWarning    = "ignoring DaemonSet-managed Pods"
	localStorageWarning = "deleting Pods with local storage"
	unmanagedFatal      = "Pods that declare no controller (no ReplicaSet, Job, StatefulSet... would recreate them; delete them or give them one)"
)

// podVerdict is one pod's fate: evicted or not, and why.
type podVerdict struct {
	pod     corev1.Pod
	evict   bool
	warning string // passed over or evicted with a warning
	fatal   string // stops the drain
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// verdict applies kubectl's filters in kubectl's order; the first that does
// not evict decides.
func (d *drainer) verdict(ctx context.Context, p corev1.Pod) podVerdict {
	v := podVerdict{pod: p, evict: true}
	ref := metav1.GetControllerOf(&p)
	// DaemonSet pods: recreated on the node at once, so left alone; one
	// whose DaemonSet is gone would not come back.
	if ref != nil && ref.Kind == "DaemonSet" && ref.APIVersion == "apps/v1" && !finished(&p) {
		if _, err := d.client.AppsV1().DaemonSets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
			return podVerdict{pod: p, fatal: err.Error()}
		}
		return podVerdict{pod: p, warning: daemonSetWarning}
	}
	// Mirror pods (static pods): the kubelet owns them.
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return podVerdict{pod: p}
	}
	if !finished(&p) && slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil }) {
		v.warning = localStorageWarning
	}
	if !finished(&p) && ref == nil {
		return podVerdict{pod: p, fatal: unmanagedFatal}
	}
	return v
}

// podsOf lists the pods bound to node, a chunk at a time.
func (d *drainer) podsOf(ctx context.Context, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(), Limit: d.chunk}
	var pods []corev1.Pod
	for {
		list, err := d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
		}
		pods = append(pods, list.Items...)
		if list.Continue == "" {
			return pods, nil
		}
		opts.Continue = list.Continue
	}
}

// cordon marks node unschedulable, unless it already is.
func (d *drainer) cordon(ctx context.Context, n *corev1.Node) error {
	if n.Spec.Unschedulable {
		return nil
	}
	_, err := d.client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	return err
}

// groupNames is "message: ns/a, ns/b" per message, messages sorted.
func groupNames(vs []podVerdict, msg func(podVerdict) string) []string {
	by := map[string][]string{}
	for _, v := range vs {
		if m := msg(v); m != "" {
			by[m] = append(by[m], v.pod.Namespace+"/"+v.pod.Name)
		}
	}
	var out []string
	for m, pods := range by {
		out = append(out, m+": "+strings.Join(pods, ", "))
	}
	slices.Sort(out)
	return out
}

// drain cordons node n and evicts its pods. warnings lists what was passed
// over or deleted with a warning (kubectl prints them as WARNING:).
func (d *drainer) drain(ctx context.Context, n *corev1.Node) (warnings []string, err error) {
	if err := d.cordon(ctx, n); err != nil {
		return nil, fmt.Errorf("cordon %s: %w", n.Name, err)
	}
	pods, err := d.podsOf(ctx, n.Name)
	if err != nil {
		return nil, err
	}
	var verdicts []podVerdict
	for _, p := range pods {
		verdicts = append(verdicts, d.verdict(ctx, p))
	}
	if fatal := groupNames(verdicts, func(v podVerdict) string { return v.fatal }); len(fatal) > 0 {
		var errs []error
		for _, f := range fatal {
			errs = append(errs, errors.New("cannot delete "+f))
		}
		return nil, errors.Join(errs...)
	}
	warnings = groupNames(verdicts, func(v podVerdict) string { return v.warning })
	if d.beforeEvict != nil {
		var evict []corev1.Pod
		for _, v := range verdicts {
			if v.evict {
				evict = append(evict, v.pod)
			}
		}
		if err := d.beforeEvict(ctx, evict); err != nil {
			return warnings, err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(verdicts))
	for i, v := range verdicts {
		if !v.evict {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.evict(ctx, v.pod)
		}()
	}
	wg.Wait()
	return warnings, errors.Join(errs...)
}

// evict evicts p, retrying while a PodDisruptionBudget (429) or a
// terminating namespace refuses it, then waits until it is gone.
func (d *drainer) evict(ctx context.Context, p corev1.Pod) error {
	opts := metav1.DeleteOptions{}
	if d.gracePeriod >= 0 {
		g := int64(d.gracePeriod)
		opts.GracePeriodSeconds = &g
	}
	pods := d.client.CoreV1().Pods(p.Namespace)
	var refused error // the last refusal, said when the time is up
	var budget string // the budget that refused it, when one did
	timedOut := func() error {
		switch {
		case budget != "":
			return fmt.Errorf("evicting pod %s/%s: not done within %s: %s: %w", p.Namespace, p.Name, d.timeout, budget, refused)
		case refused != nil:
			return fmt.Errorf("evicting pod %s/%s: not done within %s: %w", p.Namespace, p.Name, d.timeout, refused)
		}
		return fmt.Errorf("evicting pod %s/%s: not done within %s", p.Namespace, p.Name, d.timeout)
	}
	for {
		err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, DeleteOptions: &opts})
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) && p.DeletionTimestamp != nil:
			// Being deleted already with its namespace: wait for it.
		case apierrors.IsTooManyRequests(err), apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			refused = err
			if b := d.refusingBudget(ctx, p, err); b != "" {
				budget = b
			}
			select {
			case <-ctx.Done():
				return timedOut()
			case <-time.After(d.evictRetry):
			}
			if fresh, err := pods.Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
				p = *fresh
			}
			continue
		case ctx.Err() != nil:
			return timedOut()
		case transientAPIError(err):
			// The API server restarting (a control plane's upgrade, a
			// load balancer moving): asked again until the timeout.
			refused = err
			select {
			case <-ctx.Done():
				return timedOut()
			case <-time.After(d.evictRetry):
			}
			continue
		default:
			return fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		break
	}
	// Evicted: wait until it is gone or another pod took its name; an API
	// server that does not answer for a while is asked again.
	var last error
	for {
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), err == nil && cur.UID != p.UID:
			return nil
		case err != nil && ctx.Err() == nil && !transientAPIError(err):
			return fmt.Errorf("waiting for pod %s/%s to terminate: %w", p.Namespace, p.Name, err)
		case err != nil:
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for pod %s/%s to terminate: not gone within %s (the API server's last answer: %w)", p.Namespace, p.Name, d.timeout, last)
			}
			return fmt.Errorf("waiting for pod %s/%s to terminate: not gone within %s", p.Namespace, p.Name, d.timeout)
		case <-time.After(d.poll):
		}
	}
}

// retryTransient calls call until it succeeds, fails otherwise than with a
// transientAPIError, or limit has passed (then it returns the last error).
func retryTransient(ctx context.Context, limit, poll time.Duration, call func(ctx context.Context) error) error {
	deadline := time.Now().Add(limit)
	for {
		err := call(ctx)
		if !transientAPIError(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(poll):
		}
	}
}

// transientAPIError says whether err is the API server not answering for
// now (connection refused or reset, a timeout, 429, 500, 503, 504) rather
// than an answer about the object: worth asking again.
func transientAPIError(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// refusingBudget names the PodDisruptionBudgets that refused evicting p
// (those in its namespace whose selector matches it, as the API server
// finds them) with the API server's reason, when err is a budget's
// refusal; "" otherwise.
func (d *drainer) refusingBudget(ctx context.Context, p corev1.Pod, err error) string {
	var reasons []string
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				reasons = append(reasons, c.Message)
			}
		}
	}
	if len(reasons) == 0 {
		return ""
	}
	var names []string
	if list, err := d.client.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, b := range list.Items {
			if b.Spec.Selector == nil {
				continue // selects nothing
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err == nil && sel.Matches(labels.Set(p.Labels)) {
				names = append(names, b.Namespace+"/"+b.Name)
			}
		}
	}
	slices.Sort(names)
	who := "a PodDisruptionBudget"
	switch len(names) {
	case 0:
	case 1:
		who = "PodDisruptionBudget " + names[0]
	default:
		who = "PodDisruptionBudgets " + strings.Join(names, ", ")
	}
	return "blocked by " + who + " (" + strings.Join(reasons, "; ") + ")"
}
