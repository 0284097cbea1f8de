// The test actions: each action run from its client probe against its
// target, blocked when a probe is not ready, diagnosed when it fails.

package connectivity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// runActions runs every action whose probes are ready, in order.
func (r *Runner) runActions(ctx context.Context, p *Plan, st *state, rep *Report, fixes map[string]string) {
	total := 0
	for _, a := range p.Actions {
		if a.Skip == "" {
			total++
		}
	}
	n := 0
	for i, a := range p.Actions {
		if a.Skip != "" {
			continue
		}
		n++
		if ctx.Err() != nil {
			return
		}
		o := &rep.Tests[i]
		if why := r.blocked(p, st, a); why != "" {
			o.Result, o.NotRun, o.Reason = Skipped, true, "not run: "+why
			r.progress("[%d/%d] %s %s → %s: %s", n, total, a.Test, a.From, a.To, o.Reason)
			continue
		}
		r.runAction(ctx, p, st, a, o)
		if o.Result == Fail && o.Fix == "" {
			o.Fix = fixes[a.Test]
		}
		if o.Result == "" {
			continue // interrupted: Run marks it
		}
		line := string(o.Result)
		if o.Reason != "" {
			line += ": " + o.Reason
		}
		r.progress("[%d/%d] %s %s → %s: %s", n, total, a.Test, a.From, a.To, line)
	}
}

// blocked says why an action cannot run ("" when it can).
func (r *Runner) blocked(p *Plan, st *state, a Action) string {
	if s := st.status[a.Client]; !s.Ready {
		return "client probe " + a.Client + " is not ready (" + cmpOr(s.Status, "not created") + ")"
	}
	switch a.Target.Kind {
	case ToPod:
		if s := st.status[a.Target.Probe]; !s.Ready {
			return "target probe " + a.Target.Probe + " is not ready (" + cmpOr(s.Status, "not created") + ")"
		}
	case ToService, ToName:
		if st.services[a.Target.Service] == nil {
			return "Service " + a.Target.Service + " was not created"
		}
		for _, pr := range p.Probes {
			if pr.Group == a.Target.Service && !pr.Host && st.status[pr.Name].Ready {
				return ""
			}
		}
		return "no probe behind Service " + a.Target.Service + " is ready"
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// address is where the action connects.
func address(st *state, t Target) string {
	switch t.Kind {
	case ToPod:
		return hostPort(st.status[t.Probe].IP, Port)
	case ToService:
		return hostPort(st.services[t.Service].Spec.ClusterIP, ServicePort)
	case ToName:
		return hostPort(t.Host, ServicePort)
	}
	return hostPort(t.Host, t.Port)
}

// runAction runs one action, with Attempts tries each bounded by
// ProbeTimeout, and fills o. An exec that fails for reasons of its own
// (forbidden, the kubelet unreachable) leaves the action not run.
func (r *Runner) runAction(ctx context.Context, p *Plan, st *state, a Action, o *Outcome) {
	client, _ := p.Probe(a.Client)
	cmd := r.Kit.Connect(address(st, a.Target))
	ev := &Evidence{Command: "kubectl -n " + client.Namespace + " exec " + client.Name + " -- " + strings.Join(cmd, " ")}
	var cause string
	for attempt := 1; attempt <= r.Attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.Poll):
			}
		}
		ev.Attempts = attempt
		actx, cancel := context.WithTimeout(ctx, r.ProbeTimeout)
		stdout, stderr, err := r.Exec.Exec(actx, client.Namespace, client.Name, cmd)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		ev.Output = strings.TrimSpace(strings.TrimSpace(stdout) + "\n" + strings.TrimSpace(stderr))
		ev.ExitCode = nil
		var ee utilexec.ExitError
		switch {
		case err == nil:
			o.Result, o.Evidence = Pass, ev
			return
		case ctx.Err() != nil:
			return // interrupted or the command's deadline: not run
		case errors.As(err, &ee) && ee.Exited():
			code := ee.ExitStatus()
			ev.ExitCode = &code
			cause = fmt.Sprintf("the probe exited %d", code)
		case timedOut:
			cause = fmt.Sprintf("no answer within %s (--probe-timeout)", r.ProbeTimeout)
		default:
			if gone := r.podGone(ctx, client.Namespace, client.Name); gone != "" {
				o.Result, o.Reason, o.Evidence = Fail, "the client pod "+client.Name+" "+gone+" during the run", ev
				return
			}
			o.Result, o.NotRun, o.Reason = Skipped, true, "not run: exec into "+client.Name+": "+err.Error()
			if apierrors.IsForbidden(err) {
				o.Reason += " (" + ForbiddenHint + ")"
			}
			return
		}
	}
	o.Result, o.Evidence = Fail, ev
	o.Reason = r.diagnose(ctx, p, st, a, client, cause)
}

// diagnose explains a failed action: a pod deleted during the run, a
// Service without ready endpoints, or what the probe said.
func (r *Runner) diagnose(ctx context.Context, p *Plan, st *state, a Action, client Probe, cause string) string {
	if gone := r.podGone(ctx, client.Namespace, client.Name); gone != "" {
		return "the client pod " + client.Name + " " + gone + " during the run"
	}
	switch a.Target.Kind {
	case ToPod:
		t, _ := p.Probe(a.Target.Probe)
		if gone := r.podGone(ctx, t.Namespace, t.Name); gone != "" {
			return "the target pod " + t.Name + " " + gone + " during the run"
		}
	case ToService, ToName:
		if msg := ServiceEndpoints(ctx, r.Client, p.Namespace, a.Target.Service); msg != "" {
			return cause + "; " + msg
		}
	}
	return cause
}

// podGone says "was deleted" or "is being deleted" for a pod that is gone
// or going, "" otherwise (also when it cannot tell).
func (r *Runner) podGone(ctx context.Context, ns, name string) string {
	pod, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "was deleted"
	case err == nil && pod.DeletionTimestamp != nil:
		return "was being deleted"
	}
	return ""
}

// ServiceEndpoints explains a Service that cannot answer: no
// EndpointSlice, or no ready endpoint in its slices ("" when it has ready
// endpoints or cannot be read).
func ServiceEndpoints(ctx context.Context, cs kubeclient.Interface, ns, svc string) string {
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return ""
	}
	ready := 0
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
	}
	if ready > 0 {
		return ""
	}
	what := "Service " + svc + " has no ready endpoints"
	got, err := cs.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
	if err == nil && len(got.Spec.Selector) > 0 {
		what += ": its selector " + metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: got.Spec.Selector}) + " matches no ready pod"
	}
	return what
}
