// The run's lifecycle: Runner.Run creates the plan's objects, waits for the
// probes, runs the actions and removes what it created.

package connectivity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/termtext"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// Runner runs a plan against a cluster.
type Runner struct {
	Client kubeclient.Interface
	Exec   Execer
	Kit    Kit
	// ReadyTimeout bounds the wait for the probe pods.
	ReadyTimeout time.Duration
	// ProbeTimeout bounds one attempt of one probe (the exec).
	ProbeTimeout time.Duration
	// Attempts is how often a failing probe is tried (network programming
	// lags a pod's readiness by a moment).
	Attempts int
	// CleanupTimeout bounds the deletion, which runs even after the
	// command's context ended (Ctrl-C, --timeout).
	CleanupTimeout time.Duration
	// Keep leaves everything in place.
	Keep bool
	// Progress receives one line per step and per result; nil for none.
	Progress io.Writer
	// Poll is the interval of the readiness and deletion checks.
	Poll time.Duration
	// PullGrace is how long a probe's first ErrImagePull is given to
	// clear before the wait ends on it (0: snapshot.DefaultPullGrace);
	// ImagePullBackOff ends it at once (snapshot.PullWatch).
	PullGrace time.Duration
}

func (r *Runner) progress(format string, a ...any) {
	if r.Progress != nil {
		// Pod and node names, reasons and errors come from the cluster.
		fmt.Fprintf(r.Progress, "connectivity: %s\n", termtext.Line(fmt.Sprintf(format, a...)))
	}
}

// ForbiddenHint is added to every Forbidden error of the run.
const ForbiddenHint = "check connectivity needs the permissions listed in docs/connectivity.md"

func apiErr(err error, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: %w (%s)", msg, err, ForbiddenHint)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// state is what the run created and found.
type state struct {
	namespaces []string
	sas        []*corev1.ServiceAccount
	services   map[string]*corev1.Service
	pods       []*corev1.Pod
	status     map[string]ProbeStatus
	// pullFailed says, by probe, why its image cannot be pulled, once the
	// failure lasts (pulls).
	pullFailed map[string]string
	pulls      *snapshot.PullWatch
}

// Run creates the plan's namespaces, ServiceAccounts, Services and probe
// pods, waits for the pods, runs every action and deletes what it created
// (unless Keep). The report is complete whatever happens: actions that
// could not run are NotRun with the reason. The error, when not nil, says
// why the run could not complete (the command exits 3 unless a test
// failed); a failed test is not an error.
func (r *Runner) Run(ctx context.Context, p *Plan) (*Report, error) {
	if r.Poll <= 0 {
		r.Poll = 2 * time.Second
	}
	if r.Attempts <= 0 {
		r.Attempts = 1
	}
	rep := &Report{Namespace: p.Namespace, Tests: []Outcome{}, Probes: []ProbeStatus{}, Excluded: slices.Clone(p.Excluded)}
	if rep.Excluded == nil {
		rep.Excluded = []Excluded{}
	}
	fixes := map[string]string{}
	for _, t := range Tests() {
		fixes[t.Name] = t.Fix
	}
	for _, a := range p.Actions {
		o := Outcome{Name: a.Test, From: a.From, To: a.To}
		if a.Skip != "" {
			o.Result, o.Reason = Skipped, a.Skip
		}
		rep.Tests = append(rep.Tests, o)
	}
	st := &state{services: map[string]*corev1.Service{}, status: map[string]ProbeStatus{}, pullFailed: map[string]string{},
		pulls: &snapshot.PullWatch{Grace: r.PullGrace}}
	var errs []error
	runnable := slices.ContainsFunc(p.Actions, func(a Action) bool { return a.Skip == "" })
	if runnable {
		err := r.setup(ctx, p, st)
		if err == nil {
			err = r.wait(ctx, p, st)
		}
		if err != nil {
			errs = append(errs, err)
		}
		r.runActions(ctx, p, st, rep, fixes)
		if r.Keep {
			r.progress("--keep: leaving namespace %s in place (kubectl delete namespace %s removes it)", p.Namespace, strings.Join(st.namespaces, " "))
		} else {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.CleanupTimeout)
			if err := r.cleanup(cctx, p, st); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
	}
	for _, pr := range p.Probes {
		s, ok := st.status[pr.Name]
		if !ok {
			s = ProbeStatus{Name: pr.Name, Namespace: pr.Namespace, Node: pr.Node, OS: pr.OS, Image: pr.Image, Status: "not created"}
		}
		rep.Probes = append(rep.Probes, s)
	}
	notRun := "not run"
	if len(errs) > 0 {
		notRun += ": " + errs[0].Error()
	} else if ctx.Err() != nil {
		notRun += ": " + context.Cause(ctx).Error()
	}
	for i := range rep.Tests {
		if rep.Tests[i].Result == "" {
			rep.Tests[i].Result, rep.Tests[i].NotRun, rep.Tests[i].Reason = Skipped, true, notRun
		}
	}
	for _, e := range errs {
		rep.Problems = append(rep.Problems, e.Error())
	}
	rep.count()
	if len(errs) == 0 && rep.Summary.NotRun > 0 {
		errs = append(errs, fmt.Errorf("%d of %d test actions did not run", rep.Summary.NotRun, rep.Summary.Total))
	}
	return rep, errors.Join(errs...)
}

// setup creates the namespaces (waiting for a terminating one of a
// previous run to go), ServiceAccounts, Services and pods.
func (r *Runner) setup(ctx context.Context, p *Plan, st *state) error {
	cs := r.Client
	for _, ns := range p.Namespaces() {
		if err := r.createNamespace(ctx, ns); err != nil {
			return err
		}
		st.namespaces = append(st.namespaces, ns.Name)
	}
	r.progress("created namespace %s", strings.Join(st.namespaces, ", "))
	for _, sa := range p.ServiceAccounts() {
		got, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil {
			return apiErr(err, "create ServiceAccount %s/%s", sa.Namespace, sa.Name)
		}
		st.sas = append(st.sas, got)
	}
	for _, svc := range p.ServiceObjects() {
		got, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return apiErr(err, "create Service %s/%s", svc.Namespace, svc.Name)
		}
		st.services[got.Name] = got
	}
	for _, pod := range p.Pods(r.Kit) {
		got, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return apiErr(err, "create probe pod %s/%s", pod.Namespace, pod.Name)
		}
		st.pods = append(st.pods, got)
	}
	r.progress("created %d probe pods and %d Services", len(st.pods), len(st.services))
	return nil
}

func (r *Runner) createNamespace(ctx context.Context, ns *corev1.Namespace) error {
	nss := r.Client.CoreV1().Namespaces()
	for {
		_, err := nss.Create(ctx, ns, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return apiErr(err, "create namespace %s", ns.Name)
		}
		old, gerr := nss.Get(ctx, ns.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			continue // gone in between
		case gerr != nil:
			return apiErr(gerr, "read namespace %s", ns.Name)
		case old.DeletionTimestamp == nil:
			return fmt.Errorf("namespace %s already exists: check connectivity works in a namespace of its own; delete it (kubectl delete namespace %s) or pass -n with another name", ns.Name, ns.Name)
		}
		r.progress("namespace %s of an earlier run is still terminating; waiting", ns.Name)
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s of an earlier run is still terminating: %w", ns.Name, context.Cause(ctx))
		case <-time.After(r.Poll):
		}
	}
}

// cleanup deletes the pods, Services and ServiceAccounts the run created,
// waits until they are gone, then deletes the namespaces. A namespace may
// stay Terminating (its controller finishes it); that counts as done.
func (r *Runner) cleanup(ctx context.Context, p *Plan, st *state) error {
	if len(st.namespaces) == 0 {
		return nil
	}
	cs := r.Client
	grace := int64(1)
	del := metav1.DeleteOptions{GracePeriodSeconds: &grace}
	type obj struct {
		kind, ns, name string
		del            func() error
		get            func() error
	}
	var objs []obj
	for _, pod := range st.pods {
		objs = append(objs, obj{"pod", pod.Namespace, pod.Name,
			func() error { return cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, del) },
			func() error {
				_, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				return err
			}})
	}
	for _, svc := range st.services {
		objs = append(objs, obj{"Service", svc.Namespace, svc.Name,
			func() error { return cs.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, del) },
			func() error {
				_, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
				return err
			}})
	}
	for _, sa := range st.sas {
		objs = append(objs, obj{"ServiceAccount", sa.Namespace, sa.Name,
			func() error { return cs.CoreV1().ServiceAccounts(sa.Namespace).Delete(ctx, sa.Name, del) },
			func() error {
				_, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Get(ctx, sa.Name, metav1.GetOptions{})
				return err
			}})
	}
	slices.SortStableFunc(objs, func(a, b obj) int { return strings.Compare(a.kind, b.kind) })
	var errs []error
	for _, o := range objs {
		if err := o.del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, apiErr(err, "delete %s %s/%s", o.kind, o.ns, o.name))
		}
	}
	left := objs
	for len(left) > 0 && len(errs) == 0 {
		var still []obj
		for _, o := range left {
			err := o.get()
			switch {
			case apierrors.IsNotFound(err):
			case err != nil && ctx.Err() == nil:
				errs = append(errs, apiErr(err, "read %s %s/%s", o.kind, o.ns, o.name))
			default:
				still = append(still, o)
			}
		}
		left = still
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			var names []string
			for _, o := range left {
				names = append(names, o.kind+" "+o.ns+"/"+o.name)
			}
			errs = append(errs, fmt.Errorf("cleanup: still there after %s: %s", r.CleanupTimeout, strings.Join(names, ", ")))
			left = nil
		case <-time.After(r.Poll):
		}
	}
	for _, ns := range slices.Backward(st.namespaces) {
		err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, apiErr(err, "delete namespace %s", ns))
			continue
		}
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, apiErr(err, "read namespace %s", ns))
		case got.DeletionTimestamp == nil:
			errs = append(errs, fmt.Errorf("cleanup: namespace %s is not being deleted", ns))
		}
	}
	if len(errs) == 0 {
		r.progress("deleted the probe pods, Services and namespace %s", strings.Join(st.namespaces, ", "))
		return nil
	}
	return fmt.Errorf("cleanup (delete what is left with: kubectl delete namespace %s): %w", strings.Join(st.namespaces, " "), errors.Join(errs...))
}
