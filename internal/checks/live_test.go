package checks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/cli"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// One control plane for the package, loaded with the guide's lab.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Lab: true})
}

// labBaseline is what doctor says about the correct lab, as admin: it
// fails the test on any finding at warning or above, and on an info
// finding other than HC103 (HostProcess pod templates such as
// calico-node-windows and kube-proxy-windows omit spec.os.name). The other
// live tests compare against it, so the lab fixture can grow.
func labBaseline(t *testing.T) []string {
	t.Helper()
	env := testenv.Get(t)
	res, _ := liveRun(t, env.AdminConfig(), checks.Options{})
	var out []string
	for _, f := range res.Findings {
		if f.Severity != finding.Info || f.Check != "HC103" {
			t.Fatalf("the correct lab has a finding: %s %s: %s", f.Check, f.Object, f.Message)
		}
		out = append(out, f.Check+" "+f.Object.Kind+" "+qualified(f.Object.Namespace, f.Object.Name))
	}
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped on the lab as admin: %+v", res.Skipped)
	}
	if len(out) == 0 {
		t.Fatal("no HC103 on the lab: its HostProcess DaemonSets have no spec.os.name, so the check is not running")
	}
	return out
}

func liveRun(t *testing.T, cfg *rest.Config, opts checks.Options) (*checks.Result, *snapshot.Snapshot) {
	t.Helper()
	cs, _, err := checks.Selected(opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.LoadLive(context.Background(), cfg, snapshot.LiveOptions{Kinds: checks.Needs(cs), Read: checks.ReadMode(opts)})
	if err != nil {
		t.Fatalf("LoadLive: %v", err)
	}
	res, err := checks.Run(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res, s
}

func expectFindings(t *testing.T, res *checks.Result, want []string) {
	t.Helper()
	want = append([]string(nil), want...)
	sort.Strings(want)
	g := got(res)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		var msgs []string
		for _, f := range res.Findings {
			msgs = append(msgs, f.Check+": "+f.Message)
		}
		t.Fatalf("findings:\n got  %q\n want %q\n%s", g, want, strings.Join(msgs, "\n"))
	}
}

// TestLiveLab: the guide's lab in a real kube-apiserver gives no finding at
// warning or above, and skips nothing.
func TestLiveLab(t *testing.T) {
	env := testenv.Get(t)
	labInfo := labBaseline(t)
	res, s := liveRun(t, env.AdminConfig(), checks.Options{})
	expectFindings(t, res, labInfo)
	if s.ServerVersion != "v1.37.2" || len(s.Nodes) < 4 {
		t.Fatalf("server %q, %d nodes", s.ServerVersion, len(s.Nodes))
	}
	// The watch-list streams (--consistent-read) and pagination instead of
	// the cached LISTs: the same objects and findings.
	resW, sW := liveRun(t, env.AdminConfig(), checks.Options{ConsistentRead: true})
	expectFindings(t, resW, labInfo)
	if sW.Len() != s.Len() {
		t.Fatalf("watch-list read %d objects, the cached LISTs %d", sW.Len(), s.Len())
	}
	cs, _, _ := checks.Selected(checks.Options{})
	s1, err := snapshot.LoadLive(context.Background(), env.AdminConfig(), snapshot.LiveOptions{Kinds: checks.Needs(cs), PageSize: 1, Read: snapshot.ReadPaginated})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Len() != s.Len() {
		t.Fatalf("paginated LIST (limit=1) read %d objects, the cached LISTs %d", s1.Len(), s.Len())
	}
	res1, err := checks.Run(s1, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	expectFindings(t, res1, labInfo)
}

// TestLiveDoctorCLI runs the command as a user would, through a kubeconfig.
func TestLiveDoctorCLI(t *testing.T) {
	env := testenv.Get(t)
	labInfo := labBaseline(t)
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"doctor", "--kubeconfig", env.KubeconfigPath(), "-o", "json", "--fail-on", "warning"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	var rep struct {
		Findings []json.RawMessage `json:"findings"`
		Skipped  []json.RawMessage `json:"skipped"`
		Summary  map[string]int    `json:"summary"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary["errors"] != 0 || rep.Summary["warnings"] != 0 || rep.Summary["info"] != len(labInfo) || len(rep.Skipped) != 0 {
		t.Fatalf("summary %v, skipped %d", rep.Summary, len(rep.Skipped))
	}

	// --consistent-read: the same report.
	first := out.String()
	out.Reset()
	code = cli.Main(context.Background(), []string{"doctor", "--kubeconfig", env.KubeconfigPath(), "-o", "json", "--fail-on", "warning", "--consistent-read"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 || out.String() != first {
		t.Fatalf("--consistent-read: exit %d: %s\n%s\nwant the same report as without:\n%s", code, errOut.String(), out.String(), first)
	}

	// -n: namespaced objects from one namespace only; what lives elsewhere
	// (the kubernetes-services-endpoint ConfigMap) is not reported missing.
	out.Reset()
	code = cli.Main(context.Background(), []string{"doctor", "--kubeconfig", env.KubeconfigPath(), "-n", "win-demo", "-o", "json", "--fail-on", "info"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("-n win-demo: exit %d: %s\n%s", code, errOut.String(), out.String())
	}
}

// readOnlyRole is a view-like ClusterRole: get/list/watch only. without
// drops API groups from it; a "-watch" entry drops the watch verb.
func readOnlyRole(name string, without ...string) *rbacv1.ClusterRole {
	verbs := []string{"get", "list", "watch"}
	for _, w := range without {
		if w == "-watch" {
			verbs = verbs[:2]
		}
	}
	r := func(group string, resources ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
	}
	all := []rbacv1.PolicyRule{
		r("", "nodes", "namespaces", "pods", "services", "configmaps"),
		r("apps", "daemonsets", "deployments", "statefulsets", "replicasets"),
		r("batch", "jobs", "cronjobs"),
		r("node.k8s.io", "runtimeclasses"),
		r("certificates.k8s.io", "certificatesigningrequests"),
		r("operator.tigera.io", "installations", "tigerastatuses"),
		r("projectcalico.org", "ippools", "ipamconfigurations", "felixconfigurations"),
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, rule := range all {
		skip := false
		for _, w := range without {
			skip = skip || rule.APIGroups[0] == w
		}
		if !skip {
			role.Rules = append(role.Rules, rule)
		}
	}
	return role
}

func bindUser(t *testing.T, cs *kubernetes.Clientset, role *rbacv1.ClusterRole, user string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	// The authorizer learns of the binding from its informer, which can
	// lag the create on a loaded machine: wait (30 s at most) until it
	// allows what every role here grants, listing nodes.
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Resource: "nodes"}}}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	}); err != nil {
		t.Fatalf("the binding of %s never took effect: %v", user, err)
	}
}

// TestLiveRBAC: a user with get/list/watch only gets the same result as
// the admin (doctor never writes), and so does one with get/list only; with CSRs and the operator's resources
// forbidden, exactly their checks are skipped, with the reason.
func TestLiveRBAC(t *testing.T) {
	env := testenv.Get(t)
	labInfo := labBaseline(t)
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	bindUser(t, cs, readOnlyRole("hybridctl-doctor-test-full"), "auditor-full")
	cfg, err := env.UserConfig("auditor-full")
	if err != nil {
		t.Fatal(err)
	}
	res, _ := liveRun(t, cfg, checks.Options{})
	expectFindings(t, res, labInfo)
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped with full read access: %+v", res.Skipped)
	}

	// Without the watch verb: the cached LISTs need none, and with
	// --consistent-read the refused streams fall back to paginated LISTs.
	bindUser(t, cs, readOnlyRole("hybridctl-doctor-test-listonly", "-watch"), "auditor-listonly")
	cfg, err = env.UserConfig("auditor-listonly")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []checks.Options{{}, {ConsistentRead: true}} {
		res, _ = liveRun(t, cfg, opts)
		expectFindings(t, res, labInfo)
		if len(res.Skipped) != 0 {
			t.Fatalf("skipped with get/list only (consistent read %t): %+v", opts.ConsistentRead, res.Skipped)
		}
	}

	bindUser(t, cs, readOnlyRole("hybridctl-doctor-test-partial", "certificates.k8s.io", "operator.tigera.io"), "auditor-partial")
	cfg, err = env.UserConfig("auditor-partial")
	if err != nil {
		t.Fatal(err)
	}
	res, _ = liveRun(t, cfg, checks.Options{})
	expectFindings(t, res, labInfo)
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Check)
		if !strings.Contains(s.Reason, "forbidden") || !strings.Contains(s.Reason, "auditor-partial") {
			t.Errorf("%s: reason %q does not say who was forbidden what", s.Check, s.Reason)
		}
	}
	want := []string{"HC204", "HC301", "HC302", "HC303", "HC304", "HC307"}
	if strings.Join(skipped, ",") != strings.Join(want, ",") {
		t.Fatalf("skipped %v, want %v", skipped, want)
	}
}

// TestLiveBroken: the lab plus testdata/live/broken, and strictAffinity
// switched off: exactly the designed findings.
func TestLiveBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane (skipped under -short)")
	}
	broken, err := filepath.Abs(filepath.Join("testdata", "live", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	labInfo := labBaseline(t)
	env := testenv.StartT(t, testenv.Options{Lab: true, Load: []string{broken}})
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().RESTClient().Patch(types.MergePatchType).AbsPath("/apis/projectcalico.org/v3/ipamconfigurations/default").
		Body([]byte(`{"spec":{"strictAffinity":false}}`)).Do(context.Background()).Error(); err != nil {
		t.Fatalf("patch ipamconfiguration: %v", err)
	}
	res, _ := liveRun(t, env.AdminConfig(), checks.Options{})
	expectFindings(t, res, append([]string{
		"HC101 DaemonSet monitoring/ne-prometheus-node-exporter",
		// k8s-lab-win-2 has no taint (HC201), so the lab's hello, which
		// relies on the taint instead of an OS selector, can land there:
		// the Deployment and its two running pods.
		"HC102 Deployment demo/hello",
		"HC102 Pod demo/hello-55fb8f8684-69mvv",
		"HC102 Pod demo/hello-55fb8f8684-nztv2",
		"HC105 Deployment win-demo/legacy",
		"HC106 RuntimeClass windows-2022",
		"HC201 Node k8s-lab-win-2",
		"HC202 Node k8s-lab-win-2",
		"HC306 IPAMConfiguration default",
	}, labInfo...))
	for _, f := range res.Findings {
		if f.Check == "HC101" && !strings.Contains(f.Message, "ne-prometheus-node-exporter-x7k2p on k8s-lab-win-1 (ErrImagePull)") {
			t.Errorf("HC101 does not name the stuck pod: %s", f.Message)
		}
	}
	if os.Getenv("HYBRIDCTL_DOCTOR_SHOW") != "" {
		for _, f := range res.Findings {
			t.Logf("%s %s: %s", f.Check, f.Object, f.Message)
		}
	}
}
