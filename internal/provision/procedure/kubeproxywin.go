package procedure

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// The kube-proxy-windows DaemonSet updates OnDelete: its start.ps1 deletes
// every HNS policy list when it starts, so a node's Services route nowhere
// until the new pod has rebuilt them. hybridctl restarts each node's pod
// itself, one node at a time: upgrade in that node's own window (drained),
// apply and upgrade's kube-proxy-win-pods for any pod still older
// than the DaemonSet's template.
const (
	kubeProxyWindowsName     = "kube-proxy-windows"
	kubeProxyWindowsSelector = "k8s-app=kube-proxy-windows"
	// revisionHashLabel is the label the DaemonSet controller puts on its
	// ControllerRevisions and pods: the hash of the pod template.
	revisionHashLabel = "controller-revision-hash"
)

// kubeProxyWindowsRevision is the hash of the kube-proxy-windows
// DaemonSet's current template (its ControllerRevision of the highest
// revision), once the DaemonSet controller has seen the DaemonSet's
// generation; "" without the DaemonSet.
func kubeProxyWindowsRevision(ctx context.Context, client kubeclient.Interface, timeout, poll time.Duration) (string, error) {
	var hash string
	var failure error
	state, err := waitUntil(ctx, timeout, poll, func(ctx context.Context) (bool, string) {
		failure = nil
		ds, err := client.AppsV1().DaemonSets("kube-system").Get(ctx, kubeProxyWindowsName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			hash = ""
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		if ds.Status.ObservedGeneration < ds.Generation {
			return false, fmt.Sprintf("the DaemonSet controller has seen generation %d of %d", ds.Status.ObservedGeneration, ds.Generation)
		}
		h, err := currentRevisionHash(ctx, client, ds)
		if err != nil {
			failure = err
			return true, ""
		}
		if h == "" {
			return false, "no ControllerRevision yet"
		}
		hash = h
		return true, ""
	})
	if failure != nil {
		return "", failure
	}
	if err != nil {
		return "", fmt.Errorf("kube-system/%s: its current template not known after %s: %s: %w", kubeProxyWindowsName, timeout, state, err)
	}
	return hash, nil
}

// currentRevisionHash is the controller-revision-hash of the DaemonSet's
// ControllerRevision with the highest revision, among those it owns.
func currentRevisionHash(ctx context.Context, client kubeclient.Interface, ds *appsv1.DaemonSet) (string, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("kube-system/%s: its selector: %w", ds.Name, err)
	}
	revs, err := client.AppsV1().ControllerRevisions(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", fmt.Errorf("kube-system/%s: listing its ControllerRevisions: %w", ds.Name, err)
	}
	var best *appsv1.ControllerRevision
	for i := range revs.Items {
		r := &revs.Items[i]
		if !metav1.IsControlledBy(r, ds) {
			continue
		}
		if best == nil || r.Revision > best.Revision {
			best = r
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Labels[revisionHashLabel], nil
}

// restartKubeProxyWindows deletes node's kube-proxy-windows pods that run
// a template older than hash, then waits until a pod of hash runs Ready
// on node; nothing when node's pod is already of hash and Ready. It says
// whether it deleted a pod.
func restartKubeProxyWindows(ctx context.Context, client kubeclient.Interface, node, hash string, timeout, poll time.Duration) (bool, error) {
	pods := client.CoreV1().Pods("kube-system")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return false, fmt.Errorf("listing the kube-proxy-windows pods on %s: %w", node, err)
	}
	deleted := false
	for _, pod := range list.Items {
		if pod.Labels[revisionHashLabel] == hash || pod.DeletionTimestamp != nil {
			continue
		}
		uid := pod.UID
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("restarting kube-system/%s on %s: %w", pod.Name, node, err)
		}
		deleted = true
	}
	state, err := waitUntil(ctx, timeout, poll, func(ctx context.Context) (bool, string) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector, FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, pod := range list.Items {
			switch {
			case pod.DeletionTimestamp != nil:
				seen = append(seen, pod.Name+" terminating")
			case pod.Labels[revisionHashLabel] != hash:
				seen = append(seen, pod.Name+" of the old template")
			case !podIsReady(&pod):
				seen = append(seen, pod.Name+" not Ready ("+string(pod.Status.Phase)+")")
			default:
				return true, ""
			}
		}
		if len(seen) == 0 {
			return false, "no pod on the node yet"
		}
		sort.Strings(seen)
		return false, strings.Join(seen, ", ")
	})
	if err != nil {
		return deleted, fmt.Errorf("kube-proxy-windows on %s not Ready with the DaemonSet's template after %s: %s: %w", node, timeout, state, err)
	}
	return deleted, nil
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubeProxyWindowsRolloutPhase restarts, one Windows node at a time, every
// kube-proxy-windows pod older than the DaemonSet's template: the
// DaemonSet updates OnDelete, so a changed template (a new version, or
// adopting a DaemonSet that differed) reaches a node only this way or in
// upgrade's window for that node.
type kubeProxyWindowsRolloutPhase struct {
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
}

func (p *kubeProxyWindowsRolloutPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	return []string{
		"for each Windows node whose kube-proxy-windows pod runs an older template than the DaemonSet's (updateStrategy OnDelete), one node at a time: kubectl -n kube-system delete pod (that node's kube-proxy-windows pod)",
		fmt.Sprintf("wait up to %s until the pod that replaces it on that node is Ready, before the next node", p.timeout),
	}, nil
}

// outdated are the nodes that run a kube-proxy-windows pod older than
// hash, sorted.
func outdatedKubeProxyWindows(ctx context.Context, client kubeclient.Interface, hash string) ([]string, error) {
	list, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: kubeProxyWindowsSelector})
	if err != nil {
		return nil, fmt.Errorf("listing the kube-proxy-windows pods: %w", err)
	}
	seen := map[string]bool{}
	var nodes []string
	for _, pod := range list.Items {
		if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Labels[revisionHashLabel] == hash || seen[pod.Spec.NodeName] {
			continue
		}
		seen[pod.Spec.NodeName] = true
		nodes = append(nodes, pod.Spec.NodeName)
	}
	sort.Strings(nodes)
	return nodes, nil
}

// ShouldRun implements engine.Skipper: the phase has work when a pod is
// older than the DaemonSet's template.
func (p *kubeProxyWindowsRolloutPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	client, err := clientFor(ctx, p.restConfig, "kube-proxy-win-pods")
	if errors.Is(err, inventory.ErrNoCluster) {
		return true, "", nil // a cluster not built yet: its pods start at the template
	}
	if err != nil {
		return false, "", err
	}
	hash, err := kubeProxyWindowsRevision(ctx, client, p.timeout, p.poll)
	if err != nil {
		return false, "", err
	}
	if hash == "" {
		return false, "no kube-proxy-windows DaemonSet", nil
	}
	nodes, err := outdatedKubeProxyWindows(ctx, client, hash)
	if err != nil {
		return false, "", err
	}
	if len(nodes) == 0 {
		return false, "every kube-proxy-windows pod runs the DaemonSet's template", nil
	}
	return true, "", nil
}

func (p *kubeProxyWindowsRolloutPhase) Run(ctx context.Context, _ engine.Host) error {
	client, err := clientFor(ctx, p.restConfig, "kube-proxy-win-pods")
	if err != nil {
		return err
	}
	hash, err := kubeProxyWindowsRevision(ctx, client, p.timeout, p.poll)
	if err != nil || hash == "" {
		return err
	}
	nodes, err := outdatedKubeProxyWindows(ctx, client, hash)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		engine.Progress(ctx, "restarting kube-proxy-windows on %s", node)
		if _, err := restartKubeProxyWindows(ctx, client, node, hash, p.timeout, p.poll); err != nil {
			return err
		}
	}
	return nil
}

// kubeProxyWindowsRolloutDoes describes kube-proxy-win-pods.
const kubeProxyWindowsRolloutDoes = "restart, one Windows node at a time, each kube-proxy-windows pod older than the DaemonSet's template (it updates OnDelete) and wait until its replacement is Ready; nothing when every pod is current"

func (b *applyBinding) kubeProxyWindowsRollout(timeout time.Duration) (engine.Runner, error) {
	if err := needs(b.d.api()); err != nil {
		return nil, err
	}
	return &kubeProxyWindowsRolloutPhase{restConfig: b.d.RESTConfig, timeout: timeout, poll: 2 * time.Second}, nil
}
