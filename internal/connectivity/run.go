package connectivity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/termtext"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// Result is a test action's outcome.
type Result string

// Results (design §5: pass, fail or skipped). An action that could not run
// (its probes never got ready, the run was interrupted) is skipped with
// NotRun set and a reason starting "not run:".
const (
	Pass    Result = "pass"
	Fail    Result = "fail"
	Skipped Result = "skipped"
)

// Evidence is what a probe ran and what it printed.
type Evidence struct {
	Command  string `json:"command"`
	Output   string `json:"output"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Attempts int    `json:"attempts"`
}

// Outcome is one action's result: a row of the report.
type Outcome struct {
	Name     string    `json:"name"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Result   Result    `json:"result"`
	NotRun   bool      `json:"notRun,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Fix      string    `json:"fix,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
}

// ProbeStatus is a probe pod as the run found it.
type ProbeStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Node      string `json:"node"`
	OS        string `json:"os"`
	Image     string `json:"image"`
	Ready     bool   `json:"ready"`
	IP        string `json:"ip,omitempty"`
	// Status says why a probe is not ready.
	Status string `json:"status,omitempty"`
}

// Summary counts the outcomes.
type Summary struct {
	Total   int `json:"total"`
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
	NotRun  int `json:"notRun"`
}

// Report is the whole run (check connectivity -o json).
type Report struct {
	Namespace string        `json:"namespace"`
	Tests     []Outcome     `json:"tests"`
	Probes    []ProbeStatus `json:"probes"`
	Excluded  []Excluded    `json:"excludedNodes"`
	// Problems are what kept the run from completing (setup, readiness,
	// cleanup), in order.
	Problems []string `json:"problems,omitempty"`
	Summary  Summary  `json:"summary"`
}

func (r *Report) count() {
	s := Summary{Total: len(r.Tests)}
	for _, o := range r.Tests {
		switch {
		case o.Result == Pass:
			s.Pass++
		case o.Result == Fail:
			s.Fail++
		case o.NotRun:
			s.NotRun++
		default:
			s.Skipped++
		}
	}
	r.Summary = s
}

// Execer runs a command in a pod's probe container.
type Execer interface {
	Exec(ctx context.Context, namespace, pod string, cmd []string) (stdout, stderr string, err error)
}

// APIExec runs commands through the API server's pods/exec, as kubectl
// exec does.
type APIExec struct {
	Config *rest.Config
	Client kubeclient.Interface
}

// Exec runs cmd in the pod's "probe" container; ctx bounds it.
func (e APIExec) Exec(ctx context.Context, namespace, pod string, cmd []string) (string, string, error) {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "probe", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	// As kubectl exec: WebSocket first (GET, RFC 6455), SPDY when the
	// upgrade is refused (older API servers, proxies).
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", "", fmt.Errorf("exec in %s/%s: %w", namespace, pod, err)
	}
	stdout, stderr := &capped{max: 4096}, &capped{max: 4096}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return stdout.String(), stderr.String(), err
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

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
	// pullFailed says, by probe, why its image cannot be pulled.
	pullFailed map[string]string
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
	st := &state{services: map[string]*corev1.Service{}, status: map[string]ProbeStatus{}, pullFailed: map[string]string{}}
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
		if pod != nil && !s.Ready {
			if f := pullFailure(pod); f != "" {
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

// pullFailure says which image a pod's container cannot pull and why, or
// "" when every container can.
func pullFailure(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && snapshot.IsImagePullFailure(w.Reason) {
			image := cs.Image
			for _, c := range pod.Spec.Containers {
				if image == "" && c.Name == cs.Name {
					image = c.Image
				}
			}
			msg := fmt.Sprintf("cannot pull %s (container %s): %s", image, cs.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + firstLine(w.Message)
			}
			return msg
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

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
