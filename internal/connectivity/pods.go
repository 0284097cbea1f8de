// Waiting for the probe pods: their state read from the API, a pull
// failure named at once.

package connectivity

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// wait polls the probe pods until all are ready or ReadyTimeout passes;
// the probes' states end in st.status.
func (r *Runner) wait(ctx context.Context, p *Plan, st *state) error {
	wctx, cancel := context.WithTimeout(ctx, r.ReadyTimeout)
	defer cancel()
	last := ""
	for {
		ready, err := r.readPods(wctx, p, st)
		if err != nil && wctx.Err() == nil {
			return err
		}
		if err == nil {
			if ready == len(p.Probes) {
				r.progress("%d probe pods ready", ready)
				return nil
			}
			// A probe whose image cannot be pulled will not get ready:
			// once every other one is, the wait ends with the images named.
			if n := len(st.pullFailed); n > 0 && ready+n == len(p.Probes) {
				var why []string
				for _, pr := range p.Probes {
					if m, ok := st.pullFailed[pr.Name]; ok {
						why = append(why, m)
					}
				}
				return fmt.Errorf("%d of %d probe pods cannot pull their image (the image must exist for the node's OS, Windows build and architecture and be reachable from the node; --linux-image, --windows-image, or spec.checkWorkloads.image with -f): %s",
					n, len(p.Probes), strings.Join(why, "; "))
			}
			if line := r.waitingLine(p, st, ready); line != last {
				r.progress("%s", line)
				last = line
			}
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for the probe pods: %w", context.Cause(ctx))
			}
			var not []string
			for _, pr := range p.Probes {
				if s := st.status[pr.Name]; !s.Ready {
					not = append(not, pr.Name+": "+s.Status)
				}
			}
			return fmt.Errorf("%d of %d probe pods not ready within %s (--ready-timeout): %s",
				len(not), len(p.Probes), r.ReadyTimeout, strings.Join(not, "; "))
		case <-time.After(r.Poll):
		}
	}
}

func (r *Runner) waitingLine(p *Plan, st *state, ready int) string {
	var not []string
	for _, pr := range p.Probes {
		if s := st.status[pr.Name]; !s.Ready {
			not = append(not, pr.Name+" "+s.Status)
		}
	}
	return fmt.Sprintf("waiting for probe pods (%d/%d ready): %s", ready, len(p.Probes), strings.Join(not, ", "))
}

// readPods reads every probe pod and records its state.
func (r *Runner) readPods(ctx context.Context, p *Plan, st *state) (int, error) {
	found := map[string]*corev1.Pod{}
	for _, ns := range st.namespaces {
		list, err := r.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
		if err != nil {
			return 0, apiErr(err, "list the probe pods in %s", ns)
		}
		for i := range list.Items {
			found[list.Items[i].Name] = &list.Items[i]
		}
	}
	ready := 0
	for _, pr := range p.Probes {
		s := ProbeStatus{Name: pr.Name, Namespace: pr.Namespace, Node: pr.Node, OS: pr.OS, Image: pr.Image}
		pod := found[pr.Name]
		if pod == nil {
			s.Status = "not found (deleted?)"
		} else {
			s.IP = pod.Status.PodIP
			s.Ready, s.Status = podState(pod)
		}
		delete(st.pullFailed, pr.Name)
		if pod != nil {
			if f := pullFailure(pod, st.pulls, time.Now()); f != "" && !s.Ready {
				st.pullFailed[pr.Name] = fmt.Sprintf("probe pod %s on node %s %s", pr.Name, pr.Node, f)
			}
		}
		if s.Ready {
			ready++
		}
		st.status[pr.Name] = s
	}
	return ready, nil
}

// podState says whether a pod is ready and, when not, why, in the words
// kubectl describe would use.
func podState(pod *corev1.Pod) (bool, string) {
	if pod.DeletionTimestamp != nil {
		return false, "being deleted"
	}
	var scheduled *corev1.PodCondition
	for i, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			if c.Status == corev1.ConditionTrue && pod.Status.PodIP != "" {
				return true, ""
			}
		case corev1.PodScheduled:
			scheduled = &pod.Status.Conditions[i]
		}
	}
	if pod.Spec.NodeName == "" {
		if scheduled != nil && scheduled.Status == corev1.ConditionFalse {
			return false, "not schedulable: " + firstLine(scheduled.Message)
		}
		return false, "not scheduled (Pending; no scheduler has placed it)"
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			msg := "container waiting: " + w.Reason
			if w.Message != "" {
				msg += ": " + firstLine(w.Message)
			}
			return false, msg
		}
		if t := cs.State.Terminated; t != nil {
			return false, fmt.Sprintf("container terminated: %s (exit %d)", t.Reason, t.ExitCode)
		}
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return false, "running, not ready (the readiness probe on :8080)"
	case "":
		return false, "Pending on " + pod.Spec.NodeName + " (no kubelet has reported it)"
	}
	return false, string(pod.Status.Phase) + " on " + pod.Spec.NodeName
}

// pullFailure says which image a pod's container cannot pull for good and
// why, or "" when no pull is known to fail for good. Every container's
// state at now is recorded in watch.
func pullFailure(pod *corev1.Pod, watch *snapshot.PullWatch, now time.Time) string {
	msg := ""
	for _, cs := range pod.Status.ContainerStatuses {
		reason := ""
		if w := cs.State.Waiting; w != nil {
			reason = w.Reason
		}
		if watch.Lasting(string(pod.UID)+"/"+cs.Name, reason, now) && msg == "" {
			w := cs.State.Waiting
			image := cs.Image
			for _, c := range pod.Spec.Containers {
				if image == "" && c.Name == cs.Name {
					image = c.Image
				}
			}
			msg = fmt.Sprintf("cannot pull %s (container %s): %s", image, cs.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + firstLine(w.Message)
			}
		}
	}
	return msg
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
