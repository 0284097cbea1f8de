package procedure

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// checkWorkloadsPhase applies the check workloads and waits until each
// Deployment has rolled out; a pod whose image pull fails for good
// (snapshot.PullWatch: ImagePullBackOff, or ErrImagePull still after
// pullGrace) fails the phase then, naming the pod, its node and the image.
type checkWorkloadsPhase struct {
	*manifestPhase
	timeout, poll time.Duration
	// pullGrace is how long a first ErrImagePull is given to clear
	// (0: snapshot.DefaultPullGrace).
	pullGrace time.Duration
}

func (p *checkWorkloadsPhase) DryRun(ctx context.Context, h engine.Host) ([]string, error) {
	lines, err := p.manifestPhase.DryRun(ctx, h)
	if err != nil {
		return nil, err
	}
	deps, err := p.deployments()
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		lines = append(lines, fmt.Sprintf("kubectl -n %s rollout status deployment %s --timeout=%s (a pod that cannot pull its image fails it: ImagePullBackOff, or ErrImagePull for %s)", d.Namespace, d.Name, p.timeout, p.grace()))
	}
	return lines, nil
}

// deployments are the Deployments among the phase's objects.
func (p *checkWorkloadsPhase) deployments() ([]*appsv1.Deployment, error) {
	objs, err := p.objects()
	if err != nil {
		return nil, err
	}
	var out []*appsv1.Deployment
	for _, o := range objs {
		if o.obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.obj.Object, d); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", o.where, describeObject(o.obj), err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *checkWorkloadsPhase) Run(ctx context.Context, h engine.Host) error {
	if err := p.manifestPhase.Run(ctx, h); err != nil {
		return err
	}
	deps, err := p.deployments()
	if err != nil {
		return err
	}
	cs, err := clientFor(ctx, p.restConfig, p.title)
	if err != nil {
		return err
	}
	for _, want := range deps {
		name := want.Namespace + "/" + want.Name
		selector := metav1.FormatLabelSelector(want.Spec.Selector)
		var pullErr error
		watch := &snapshot.PullWatch{Grace: p.grace()}
		state, err := waitUntil(ctx, p.timeout, p.poll, func(ctx context.Context) (bool, string) {
			pods, err := cs.CoreV1().Pods(want.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err.Error()
			}
			if f := firstPullFailure(pods.Items, watch, time.Now()); f != "" {
				pullErr = fmt.Errorf("check workload %s: %s: the image must exist for the node's OS, Windows build and architecture and be reachable from the node (spec.checkWorkloads.image; a private one needs spec.checkWorkloads.imagePullSecret and that Secret in namespace %s)", name, f, want.Namespace)
				return true, ""
			}
			d, err := cs.AppsV1().Deployments(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return rolledOut(d)
		})
		switch {
		case pullErr != nil:
			return pullErr
		case err == errWaitTimedOut:
			return fmt.Errorf("check workload %s not rolled out after %s: %s (kubectl -n %s describe deployment %s)", name, p.timeout, state, want.Namespace, want.Name)
		case err != nil:
			return fmt.Errorf("waiting for check workload %s: %w", name, err)
		}
	}
	return nil
}

func (p *checkWorkloadsPhase) grace() time.Duration {
	if p.pullGrace > 0 {
		return p.pullGrace
	}
	return snapshot.DefaultPullGrace
}

// firstPullFailure says which pod cannot pull which image, on which node
// and why, or "" when none is known to fail for good. Every container's
// state at now is recorded in watch.
func firstPullFailure(pods []corev1.Pod, watch *snapshot.PullWatch, now time.Time) string {
	msg := ""
	for _, pod := range pods {
		for _, cs := range pod.Status.ContainerStatuses {
			reason := ""
			if w := cs.State.Waiting; w != nil {
				reason = w.Reason
			}
			if !watch.Lasting(string(pod.UID)+"/"+pod.Name+"/"+cs.Name, reason, now) || msg != "" {
				continue
			}
			w := cs.State.Waiting
			image := cs.Image
			for _, c := range pod.Spec.Containers {
				if image == "" && c.Name == cs.Name {
					image = c.Image
				}
			}
			msg = fmt.Sprintf("pod %s on node %s cannot pull %s (container %s): %s", pod.Name, pod.Spec.NodeName, image, cs.Name, w.Reason)
			if m, _, _ := strings.Cut(strings.TrimSpace(w.Message), "\n"); m != "" {
				msg += ": " + m
			}
		}
	}
	return msg
}
