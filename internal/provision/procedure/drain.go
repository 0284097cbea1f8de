package procedure

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// resetNodes are the nodes a reset takes apart: the ones named, or all.
func resetNodes(d Deps) []string {
	if len(d.ResetNodes) > 0 {
		return d.ResetNodes
	}
	var out []string
	for _, h := range d.Hosts {
		out = append(out, h.Name)
	}
	return out
}

// drainPhase cordons and drains the nodes being reset, as the guide does
// with kubectl drain NODE --ignore-daemonsets --delete-emptydir-data, with
// kubectl's semantics (drainer: evictions respect PodDisruptionBudgets).
// Resetting every node drains nothing: there is nowhere to move pods to.
type drainPhase struct {
	nodes      []string
	all        bool
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	// gracePeriod overrides the pods' termination grace period; -1 keeps
	// each pod's own (kubectl's default).
	gracePeriod int
}

func (p *drainPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	if p.all {
		return []string{"nothing to drain: every node is reset (pods have nowhere to go)"}, nil
	}
	grace := "" // -1: each pod's own grace period, kubectl's default
	if p.gracePeriod >= 0 {
		grace = fmt.Sprintf(" --grace-period %d", p.gracePeriod)
	}
	var out []string
	for _, n := range p.nodes {
		out = append(out, fmt.Sprintf("kubectl drain %s --ignore-daemonsets --delete-emptydir-data%s --timeout %s (cordon, then evict its pods)", n, grace, p.timeout))
	}
	return out, nil
}

func (p *drainPhase) Run(ctx context.Context, _ engine.Host) error {
	if p.all {
		engine.Warn(ctx, "every node is reset: nothing drained")
		return nil
	}
	client, err := clientFor(ctx, p.restConfig, "drain")
	if err != nil {
		return err
	}
	for _, node := range p.nodes {
		err := drainNode(ctx, client, node, p.timeout, p.gracePeriod, nil)
		if apierrors.IsNotFound(err) {
			engine.Warn(ctx, "node %s is not in the cluster: nothing to drain", node)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// drainNode cordons node and evicts its pods as `kubectl drain NODE
// --ignore-daemonsets --delete-emptydir-data` does (drainer: evictions
// respect PodDisruptionBudgets, a blocked one is retried until timeout and
// then names the pod; a pod with no controller stops it). gracePeriod -1
// keeps each pod's own. What was passed over goes out as warnings of the
// running phase. A node not in the cluster gives the API's NotFound.
// beforeEvict (may be nil) is the drainer's: called with the pods about
// to be evicted, before the first eviction.
func drainNode(ctx context.Context, client kubeclient.Interface, node string, timeout time.Duration, gracePeriod int, beforeEvict func(context.Context, []corev1.Pod) error) error {
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("drain %s: %w", node, err)
	}
	d := &drainer{client: client, gracePeriod: gracePeriod, timeout: timeout, evictRetry: 5 * time.Second, poll: time.Second, chunk: 500, beforeEvict: beforeEvict}
	warnings, err := d.drain(ctx, n)
	if err != nil {
		return fmt.Errorf("drain %s: %w%s", node, err, indent(strings.Join(warnings, "\n")))
	}
	for _, w := range warnings {
		engine.Warn(ctx, "drain %s: %s", node, w)
	}
	return nil
}

// uncordonNode makes node schedulable again (kubectl uncordon).
func uncordonNode(ctx context.Context, client kubeclient.Interface, node string) error {
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":null}}`), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("uncordon %s: %w", node, err)
	}
	return nil
}

func indent(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return "\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// deleteNodePhase deletes the Node objects of the nodes being reset
// (kubectl delete node NODE); a node already gone is fine.
type deleteNodePhase struct {
	nodes      []string
	restConfig func(ctx context.Context) (*rest.Config, error)
}

func (p *deleteNodePhase) DryRun(context.Context, engine.Host) ([]string, error) {
	var out []string
	for _, n := range p.nodes {
		out = append(out, "kubectl delete node "+n)
	}
	return out, nil
}

func (p *deleteNodePhase) Run(ctx context.Context, _ engine.Host) error {
	client, err := clientFor(ctx, p.restConfig, "delete-node")
	if err != nil {
		return err
	}
	for _, node := range p.nodes {
		err := client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", node, err)
		}
	}
	return nil
}

func clientFor(ctx context.Context, restConfig func(ctx context.Context) (*rest.Config, error), phase string) (kubeclient.Interface, error) {
	cfg, err := restConfig(ctx)
	if err != nil {
		return nil, err
	}
	c, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", phase, err)
	}
	return c, nil
}
