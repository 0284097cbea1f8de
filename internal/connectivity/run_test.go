package connectivity_test

// These tests run against the real kube-apiserver of internal/testenv with
// the guide's lab loaded (its Nodes: a tainted control plane, two Linux
// workers, one Windows Server 2025 worker). No scheduler or kubelet runs
// there, so the probe pods never start: the tests cover what the API server
// decides (Pod Security, validation, RBAC), the readiness timeout and the
// cleanup. Where a test needs the probes to run, it plays the kubelet's part
// (the pod status) and scripts the exec's answers; the real probes run in
// the lab (hack/e2e-connectivity.sh).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/hybridctl/hybridctl/internal/cli"
	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{Lab: true}) }

type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) cliRun {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(t.Context(), append([]string{"check", "connectivity"}, args...), strings.NewReader(""), &out, &errOut)
	return cliRun{code, out.String(), errOut.String()}
}

func adminKubeconfig(t *testing.T, env *testenv.Env) []string {
	return []string{"--kubeconfig", env.KubeconfigPath()}
}

// assertCleaned fails unless the namespaces hold no pod, Service or
// ServiceAccount and are gone or Terminating (without
// kube-controller-manager a namespace never finishes terminating).
func assertCleaned(t *testing.T, cs kubernetes.Interface, namespaces ...string) {
	t.Helper()
	ctx := t.Context()
	for _, ns := range namespaces {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sas, err := cs.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(pods.Items) + len(svcs.Items) + len(sas.Items); n > 0 {
			t.Errorf("namespace %s: %d pods, %d Services, %d ServiceAccounts left", ns, len(pods.Items), len(svcs.Items), len(sas.Items))
		}
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatal(err)
		case got.DeletionTimestamp == nil:
			t.Errorf("namespace %s is not being deleted", ns)
		}
	}
}

func decode(t *testing.T, s string) connectivity.Report {
	t.Helper()
	var rep connectivity.Report
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, s)
	}
	return rep
}

// Against the test API server, probes that never become ready are
// reported as not scheduled within --ready-timeout, every test that needed
// them as not run (not failed), exit 3, and nothing is left behind. The API
// server admitted every probe pod, the Windows one included, in a
// namespace that enforces Pod Security "restricted".
func TestNotReadyTimeout(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := "conn-timeout"
	began := time.Now()
	r := runCLI(t, append(adminKubeconfig(t, env), "-n", ns, "--ready-timeout", "3s", "-o", "json")...)
	took := time.Since(began)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if took > 90*time.Second {
		t.Errorf("took %s: the ready timeout is 3 s", took)
	}
	rep := decode(t, r.stdout)
	if rep.Namespace != ns || rep.Summary.Fail != 0 || rep.Summary.Pass != 0 || rep.Summary.NotRun == 0 {
		t.Errorf("summary %+v in %s", rep.Summary, rep.Namespace)
	}
	if rep.Summary.NotRun+rep.Summary.Skipped != rep.Summary.Total {
		t.Errorf("summary %+v: every action is skipped or not run", rep.Summary)
	}
	for _, o := range rep.Tests {
		if o.NotRun && (!strings.HasPrefix(o.Reason, "not run: client probe ") || !strings.HasSuffix(o.Reason, " is not ready (not scheduled (Pending; no scheduler has placed it))")) {
			t.Errorf("%s %s -> %s: reason %q", o.Name, o.From, o.To, o.Reason)
		}
	}
	if len(rep.Probes) != 6 {
		t.Errorf("%d probes, want the lab's 6: %+v", len(rep.Probes), rep.Probes)
	}
	for _, p := range rep.Probes {
		if p.Ready || p.Status != "not scheduled (Pending; no scheduler has placed it)" {
			t.Errorf("probe %+v", p)
		}
	}
	if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], "6 of 6 probe pods not ready within 3s") {
		t.Errorf("problems %q", rep.Problems)
	}
	if !strings.Contains(r.stderr, "waiting for probe pods (0/6 ready)") || !strings.Contains(r.stderr, "deleted the probe pods") {
		t.Errorf("progress lacks the wait or the cleanup:\n%s", r.stderr)
	}
	assertCleaned(t, cs, ns, ns+connectivity.HostNamespaceSuffix)
}

// A user who may list nodes but not create namespaces gets exit 3 and a
// message naming the permission and the docs; one who may not even list
// nodes too. Nothing is created.
func TestForbidden(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ctx := t.Context()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "conn-nodes-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "conn-nodes-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "conn-nodes-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "conn-reader"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		user, want string
	}{
		{"conn-reader", `create namespace conn-forbidden: namespaces is forbidden: User "conn-reader" cannot create resource "namespaces"`},
		{"conn-nobody", `list nodes: nodes is forbidden: User "conn-nobody" cannot list resource "nodes"`},
	} {
		t.Run(tc.user, func(t *testing.T) {
			cfg, err := env.UserConfig(tc.user)
			if err != nil {
				t.Fatal(err)
			}
			kc := filepath.Join(dir, tc.user)
			if err := env.WriteKubeconfig(kc, cfg); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, "--kubeconfig", kc, "-n", "conn-forbidden")
			if r.code != 3 {
				t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, connectivity.ForbiddenHint) {
				t.Errorf("stderr lacks %q and the hint:\n%s", tc.want, r.stderr)
			}
			if _, err := cs.CoreV1().Namespaces().Get(ctx, "conn-forbidden", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace conn-forbidden: %v", err)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tests", "dns-fdqn"}, `--tests: unknown test "dns-fdqn" (did you mean "dns-fqdn"?)`},
		{[]string{"--test", "pod-to-servce"}, `did you mean "pod-to-service"?`},
		{[]string{"--skip", "icmp"}, `--skip: unknown test "icmp"; the tests are pod-to-pod-same-node,`},
		{[]string{"-o", "sarif"}, `-o/--output "sarif" is not an output format: want table, json, junit`},
		{[]string{"--probe-kit", "busybox"}, `--probe-kit "busybox": want one of agnhost, hello`},
		{[]string{"--external-target", "1.1.1.1"}, `--external-target "1.1.1.1": want HOST:PORT`},
		{[]string{"--attempts", "0"}, "--attempts must be at least 1"},
		{[]string{"--ready-timeout", "0s"}, "--ready-timeout must be positive"},
	} {
		// No kubeconfig: a usage error must come before any connection.
		r := runCLI(t, append(tc.args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q\nstderr: %s", tc.args, r.code, tc.want, r.stderr)
		}
	}
}

// A namespace that exists and is not being deleted is not taken over.
func TestExistingNamespace(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := env.NewNamespace(t, "conn-existing-", nil)
	tests := "dns-fqdn"
	r := runCLI(t, append(adminKubeconfig(t, env), "-n", ns, "--tests", tests, "--ready-timeout", "2s")...)
	if r.code != 3 || !strings.Contains(r.stderr, "namespace "+ns+" already exists") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("the user's namespace was touched: %v %v", err, got.DeletionTimestamp)
	}
}

// kubelet plays the kubelet's part for the probe pods of ns: it marks each
// Ready with an IP, as a kubelet reports a running pod.
func kubelet(ctx context.Context, t *testing.T, cs kubernetes.Interface, namespaces ...string) {
	n := 0
	for ctx.Err() == nil {
		for _, ns := range namespaces {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if p.Status.PodIP != "" || p.DeletionTimestamp != nil {
					continue
				}
				n++
				p.Status.Phase = corev1.PodRunning
				p.Status.PodIP = fmt.Sprintf("172.21.0.%d", n)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
					t.Logf("kubelet: %v", err)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scripted answers exec calls by the command's target.
type scripted struct {
	mu     sync.Mutex
	calls  []string
	answer func(pod string, cmd []string) (string, error)
}

func (s *scripted) Exec(ctx context.Context, ns, pod string, cmd []string) (string, string, error) {
	s.mu.Lock()
	s.calls = append(s.calls, ns+"/"+pod+": "+strings.Join(cmd, " "))
	s.mu.Unlock()
	out, err := s.answer(pod, cmd)
	return out, "", err
}

func runner(cs kubernetes.Interface, ex connectivity.Execer, kit string) *connectivity.Runner {
	k, _ := connectivity.LookupKit(kit)
	return &connectivity.Runner{Client: cs, Exec: ex, Kit: k, ReadyTimeout: time.Minute, ProbeTimeout: 2 * time.Second,
		Attempts: 2, CleanupTimeout: time.Minute, Poll: 100 * time.Millisecond}
}

func labPlan(t *testing.T, cs kubernetes.Interface, ns string, tests ...string) *connectivity.Plan {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := connectivity.Select(tests, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := connectivity.NewPlan(nodes.Items, connectivity.Options{Namespace: ns, Tests: sel, LinuxImage: "l", WindowsImage: "w"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// With the probes ready (the kubelet's part played here), each action runs
// its kit's command against the real pod IPs and ClusterIPs; a refused
// connection is a failure with the evidence, and a Service failure names
// the Service's missing endpoints (no EndpointSlice controller runs here,
// as for a Service whose selector matches nothing).
func TestRunActions(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := "conn-actions"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go kubelet(ctx, t, cs, ns, ns+connectivity.HostNamespaceSuffix)
	ex := &scripted{answer: func(pod string, cmd []string) (string, error) {
		target := cmd[len(cmd)-1]
		switch {
		case strings.Contains(target, "svc.cluster.local"):
			return "", utilexec.CodeExitError{Err: errors.New("dial tcp: connection refused"), Code: 1}
		case strings.HasPrefix(pod, "win-"):
			return "", utilexec.CodeExitError{Err: errors.New("TIMEOUT"), Code: 1}
		}
		return "", nil
	}}
	p := labPlan(t, cs, ns, "pod-to-pod-same-node", "pod-to-service", "dns-fqdn", "node-to-pod")
	rep, err := runner(cs, ex, "agnhost").Run(t.Context(), p)
	cancel()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	byRow := map[string]connectivity.Outcome{}
	for _, o := range rep.Tests {
		byRow[o.Name+" "+o.From+" -> "+o.To] = o
	}
	check := func(row string, want connectivity.Result, reason string) {
		t.Helper()
		o, ok := byRow[row]
		if !ok {
			t.Errorf("no row %q in %v", row, rep.Tests)
			return
		}
		if o.Result != want || !strings.Contains(o.Reason, reason) {
			t.Errorf("%s: %s %q, want %s with %q", row, o.Result, o.Reason, want, reason)
		}
	}
	check("pod-to-pod-same-node linux-1 (k8s-lab-node-1) -> linux-1-peer (k8s-lab-node-1)", connectivity.Pass, "")
	check("pod-to-pod-same-node win-26100-1 (k8s-lab-win-1) -> win-26100-1-peer (k8s-lab-win-1)", connectivity.Fail, "the probe exited 1")
	check("pod-to-service linux-1 (k8s-lab-node-1) -> service linux", connectivity.Pass, "")
	check("dns-fqdn linux-1 (k8s-lab-node-1) -> linux.conn-actions.svc.cluster.local", connectivity.Fail,
		"the probe exited 1; Service linux has no ready endpoints: its selector app.kubernetes.io/managed-by=hybridctl-check-connectivity,hybridctl.dev/probe-group=linux matches no ready pod")
	check("node-to-pod node k8s-lab-node-1 -> linux-2 (k8s-lab-node-2)", connectivity.Pass, "")
	fail := byRow["dns-fqdn linux-1 (k8s-lab-node-1) -> linux.conn-actions.svc.cluster.local"]
	if fail.Evidence == nil || fail.Evidence.Attempts != 2 || fail.Evidence.ExitCode == nil || *fail.Evidence.ExitCode != 1 ||
		fail.Evidence.Command != "kubectl -n conn-actions exec linux-1 -- /agnhost connect --timeout=5s --protocol=tcp linux.conn-actions.svc.cluster.local:80" ||
		!strings.Contains(fail.Fix, "CoreDNS") {
		t.Errorf("evidence %+v fix %q", fail.Evidence, fail.Fix)
	}
	svc, err := cs.CoreV1().Services(ns).Get(t.Context(), "linux", metav1.GetOptions{})
	if err == nil {
		t.Errorf("Service linux still there: %v", svc)
	}
	var podCall, svcCall, hostCall bool
	for _, c := range ex.calls {
		podCall = podCall || strings.HasPrefix(c, ns+"/linux-1: /agnhost connect --timeout=5s --protocol=tcp 172.21.0.") && strings.HasSuffix(c, ":8080")
		svcCall = svcCall || strings.HasPrefix(c, ns+"/linux-1: /agnhost connect --timeout=5s --protocol=tcp 10.") && strings.HasSuffix(c, ":80")
		hostCall = hostCall || strings.HasPrefix(c, ns+"-host/node-linux-1: ")
	}
	if !podCall || !svcCall || !hostCall {
		t.Errorf("no exec to a pod IP (%v), a ClusterIP (%v) or from the host probe (%v): %q", podCall, svcCall, hostCall, ex.calls)
	}
	if rep.Summary.Pass == 0 || rep.Summary.Fail == 0 || rep.Summary.NotRun != 0 {
		t.Errorf("summary %+v", rep.Summary)
	}
	assertCleaned(t, cs, ns, ns+connectivity.HostNamespaceSuffix)
}

// A probe pod deleted in the middle of the run is a failure that says so;
// an exec the API server refuses leaves the action not run; the hello kit
// runs its own client.
func TestRunDeletedAndRefused(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := "conn-deleted"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go kubelet(ctx, t, cs, ns)
	ex := &scripted{}
	ex.answer = func(pod string, cmd []string) (string, error) {
		if cmd[0] != "/hello" || cmd[1] != "get" || !strings.HasPrefix(cmd[2], "http://") {
			return "", fmt.Errorf("not the hello kit: %q", cmd)
		}
		switch pod {
		case "linux-1":
			// The pod goes away under the exec, which then fails as the
			// API server's proxy does.
			_ = cs.CoreV1().Pods(ns).Delete(context.Background(), "linux-1", metav1.DeleteOptions{})
			return "", errors.New(`error dialing backend: pods "linux-1" not found`)
		case "win-26100-1":
			return "", apierrors.NewForbidden(corev1.Resource("pods/exec"), pod, errors.New("no"))
		}
		return "hello", nil
	}
	p := labPlan(t, cs, ns, "pod-to-pod-same-node")
	rep, err := runner(cs, ex, "hello").Run(t.Context(), p)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "1 of 2 test actions did not run") {
		t.Errorf("err %v", err)
	}
	if o := rep.Tests[0]; o.Result != connectivity.Fail || o.Reason != "the client pod linux-1 was deleted during the run" {
		t.Errorf("deleted client: %+v", o)
	}
	if o := rep.Tests[1]; o.Result != connectivity.Skipped || !o.NotRun || !strings.Contains(o.Reason, "not run: exec into win-26100-1") ||
		!strings.Contains(o.Reason, connectivity.ForbiddenHint) {
		t.Errorf("forbidden exec: %+v", o)
	}
	assertCleaned(t, cs, ns)
}

// Ctrl-C while waiting for the probes: the run stops, reports every action
// as not run, and still deletes what it created.
func TestInterruptCleansUp(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := "conn-interrupt"
	ctx, cancel := context.WithCancelCause(t.Context())
	r := runner(cs, &scripted{answer: func(string, []string) (string, error) { return "", nil }}, "agnhost")
	r.Progress = &cancelOn{substr: "probe pods and", cancel: func() { cancel(errors.New("interrupted")) }}
	rep, err := r.Run(ctx, labPlan(t, cs, ns, "pod-to-pod-same-node", "pod-to-pod-across-nodes"))
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("err %v", err)
	}
	if rep.Summary.NotRun != 3 || rep.Summary.Skipped != 1 {
		t.Errorf("summary %+v", rep.Summary)
	}
	assertCleaned(t, cs, ns)
}

type cancelOn struct {
	substr string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.substr) {
		c.cancel()
	}
	return len(p), nil
}

// The real exec path (WebSocket, falling back to SPDY as kubectl does)
// against the real API server: a pod that no kubelet runs cannot be exec'd
// into, and the error comes back at once, naming the cause, instead of
// hanging or passing.
func TestAPIExecUnscheduled(t *testing.T) {
	env := testenv.Get(t)
	cs, _ := env.Client()
	ns := env.NewNamespace(t, "conn-exec-", nil)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "example/hello:1"}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, _, err := connectivity.APIExec{Config: env.AdminConfig(), Client: cs}.Exec(ctx, ns, "p", []string{"/hello", "get", "http://10.0.0.1/"})
	var ee utilexec.ExitError
	if err == nil || errors.As(err, &ee) || ctx.Err() != nil || !strings.Contains(err.Error(), "does not have a host assigned") {
		t.Errorf("exec into an unscheduled pod: %v (ctx %v)", err, ctx.Err())
	}
}
