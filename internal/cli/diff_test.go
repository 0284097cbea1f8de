package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// diff --offline compares with nothing: every step on every node is a
// change (exit 1), listed per node then for the cluster; -o json has the
// documented shape; diff refuses --dry-run (it never changes anything).
func TestDiffOffline(t *testing.T) {
	r := run(t, "", "diff", "-f", lab, "--offline")
	if r.code != ExitProblem {
		t.Fatalf("exit %d, want 1 (changes)\n%s%s", r.code, r.stdout, r.stderr)
	}
	order := []string{"node k8s-lab-master-1 (new", "+ linux-prepare:", "+ kubeadm-init:", "node k8s-lab-win-1 (new",
		"+ join-windows:", "cluster\n", "+ calico:", "+ check-workloads:", "change(s)"}
	pos := 0
	for _, want := range order {
		i := strings.Index(r.stdout[pos:], want)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", want, r.stdout)
		}
		pos += i
	}
	for _, never := range []string{"preflight", "post-prepare", "calico-ready", "nodes-ready", "doctor:"} {
		if strings.Contains(r.stdout, never) {
			t.Errorf("a read-only phase %q is listed as a change:\n%s", never, r.stdout)
		}
	}
	j := run(t, "", "diff", "-f", lab, "--offline", "-o", "json")
	var out struct {
		Nodes []struct {
			Name, Status string
		} `json:"nodes"`
		Changes []struct {
			Phase, Host, Action, Summary string
		} `json:"changes"`
		Drift       []any `json:"drift"`
		Extra       []any `json:"extra"`
		Unreachable []any `json:"unreachable"`
		Summary     struct {
			Changes int `json:"changes"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &out); err != nil || j.code != ExitProblem {
		t.Fatalf("exit %d: %v\n%s", j.code, err, j.stdout)
	}
	if len(out.Nodes) != 4 || out.Summary.Changes != len(out.Changes) || out.Drift == nil || out.Extra == nil || out.Unreachable == nil {
		t.Errorf("json %+v", out)
	}
	if c := out.Changes[0]; c.Phase != "linux-prepare" || c.Host != "k8s-lab-master-1" || c.Action != "run" {
		t.Errorf("first change %+v", c)
	}
	if r := run(t, "", "diff", "-f", lab, "--dry-run"); r.code != ExitUsage || !strings.Contains(r.stderr, "diff changes nothing") {
		t.Errorf("--dry-run: exit %d %s", r.code, r.stderr)
	}
}

// A --context that is not in the kubeconfig is a usage error in every
// command that takes it, naming the contexts that are (with the closest
// one first when it looks like a typo).
func TestUnknownContext(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: lab, context: {cluster: c, user: u}}, {name: prod, context: {cluster: c, user: u}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"apply", "-f", lab, "--dry-run", "--offline", "--kubeconfig", kc, "--context", "lba"},
		{"diff", "-f", lab, "--offline", "--kubeconfig", kc, "--context", "lba"},
		{"reset", "-f", lab, "--dry-run", "--offline", "--kubeconfig", kc, "--context", "lba"},
		{"upgrade", "-f", lab, "--dry-run", "--kubeconfig", kc, "--context", "lba"},
		{"doctor", "--kubeconfig", kc, "--context", "lba"},
		{"doctor", "-f", lab, "--kubeconfig", kc, "--context", "lba", "-o", "json"},
		{"init", "--from-cluster", "--kubeconfig", kc, "--context", "lba", "--output-file", "-"},
		{"csr", "approve", "--kubeconfig", kc, "--context", "lba", "--dry-run"},
		{"check", "connectivity", "--kubeconfig", kc, "--context", "lba"},
		{"node", "diagnose", "-f", lab, "--kubeconfig", kc, "--context", "lba"},
	} {
		r := run(t, "", args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, `--context "lba"`) || !strings.Contains(r.stderr, `did you mean "lab"?`) ||
			!strings.Contains(r.stderr, "its contexts: lab, prod") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// The kubeconfig's files are named: with $KUBECONFIG, each one read.
	t.Setenv("KUBECONFIG", kc)
	if r := run(t, "", "doctor", "--context", "nope"); r.code != ExitUsage || !strings.Contains(r.stderr, `--context "nope": `+kc+" has no such context; its contexts: lab, prod") {
		t.Errorf("doctor, $KUBECONFIG: exit %d\n%s", r.code, r.stderr)
	}
	empty := filepath.Join(dir, "empty")
	if r := run(t, "", "diff", "-f", lab, "--offline", "--kubeconfig", empty, "--context", "lab"); r.code != ExitUsage || !strings.Contains(r.stderr, "it has no contexts") {
		t.Errorf("an empty kubeconfig: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, "", "diff", "-f", lab, "--offline", "--kubeconfig", kc, "--context", "prod"); r.code != ExitProblem {
		t.Errorf("an existing context: exit %d %s", r.code, r.stderr)
	}
}

// init --from-cluster against a real API server: a kubeadm cluster gives
// a spec that plan accepts, its notes go to standard error; a cluster
// kubeadm did not build is exit 1; an unreachable one exit 3; nothing is
// written on failure.
func TestInitFromCluster(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kc, env.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cluster.yaml")
	r := run(t, "", "init", "--from-cluster", "--kubeconfig", kc, "-o", out)
	if r.code != ExitProblem || !strings.Contains(r.stderr, "not a kubeadm cluster") {
		t.Fatalf("not kubeadm: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused init wrote %s: %v", out, err)
	}
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc := "kind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nclusterName: kubernetes\ncontrolPlaneEndpoint: api.example.com:6443\n" +
		"networking: {podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12, dnsDomain: cluster.local}\n"
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"},
		Data: map[string]string{"ClusterConfiguration": cc}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1",
		Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.30.0.5"}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "init", "--from-cluster", "--kubeconfig", kc, "-o", out)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: spec.calico: the cluster runs no Calico") {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	res, err := spec.LoadFile(ctx, out)
	if err != nil || res.Err() != nil {
		t.Fatalf("plan refuses the written spec: %v %v", err, res.Err())
	}
	if c := res.Cluster; c.Spec.ControlPlaneEndpoint != "api.example.com:6443" || len(c.Spec.Nodes) != 1 || c.Spec.Nodes[0].Address != "10.30.0.5" {
		t.Errorf("spec %+v", c.Spec)
	}
	if p := run(t, "", "plan", "-f", out); p.code != 0 {
		t.Errorf("plan: exit %d %s", p.code, p.stderr)
	}
	if r := run(t, "", "init", "--from-cluster", "--kubeconfig", kc, "-o", out); r.code != ExitUsage || !strings.Contains(r.stderr, "--force") {
		t.Errorf("existing file: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, "", "init", "--name", "x", "-o", "-"); r.code != ExitUsage {
		t.Errorf("--name without --from-cluster: exit %d", r.code)
	}
	env.Stop()
	if r := run(t, "", "init", "--from-cluster", "--kubeconfig", kc, "-o", "-", "--request-timeout", "2s"); r.code != ExitIncomplete {
		t.Errorf("an unreachable cluster: exit %d %s", r.code, r.stderr)
	}
}
