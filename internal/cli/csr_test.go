package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestMain shares one real API server among the package's tests that ask
// for it (testenv.Get); tests that do not start nothing.
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

func TestCSRApproveUsageAndUnreachable(t *testing.T) {
	dir := t.TempDir()
	// A kubeconfig for a port nobody listens on.
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		in   string
	}{
		{"bad output", []string{"csr", "approve", "-o", "yaml"}, 2, `-o/--output "yaml" is not an output format: want table, json`},
		{"watch with names", []string{"csr", "approve", "--watch", "csr-1"}, 2, "takes no CSR names"},
		{"tiny max expiration", []string{"csr", "approve", "--max-expiration", "1m"}, 2, "10-minute minimum"},
		{"spec on stdin while prompting", []string{"csr", "approve", "-f", "-"}, 2, "confirmation prompt"},
		{"unreachable API", []string{"csr", "approve", "--kubeconfig", kc, "--yes"}, 3, "127.0.0.1:1"},
		{"unreachable API, watch", []string{"csr", "approve", "--kubeconfig", kc, "--watch"}, 3, "listing kubelet-serving CertificateSigningRequests"},
		{"unreadable spec", []string{"csr", "approve", "--kubeconfig", kc, "-f", filepath.Join(dir, "nope.yaml")}, 3, "nope.yaml"},
		{"help teaches", []string{"csr", "approve", "--help"}, 0, "hybridctl csr approve --yes -o json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.in) {
				t.Fatalf("exit %d, want %d; want %q in output:\n%s%s", r.code, tc.code, tc.in, r.stdout, r.stderr)
			}
		})
	}
}

func servingRequest(t *testing.T, node string, ips ...string) []byte {
	t.Helper()
	return servingRequestNames(t, node, []string{node}, ips...)
}

// servingRequestNames is a request of node for the DNS names dns.
func servingRequestNames(t *testing.T, node string, dns []string, ips ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames: dns,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// createAsNode creates a kubelet-serving CSR with node's own credentials.
func createAsNode(t *testing.T, env *testenv.Env, node, name string, ips ...string) {
	t.Helper()
	cfg, err := env.UserConfig("system:node:"+node, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request: servingRequest(t, node, ips...), SignerName: certv1.KubeletServingSignerName,
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s as %s: %v", name, node, err)
	}
}

func ensureNode(t *testing.T, admin kubernetes.Interface, name, ip string) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return
	}
	n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func conditionOf(t *testing.T, admin kubernetes.Interface, name string) string {
	t.Helper()
	c, err := admin.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == certv1.CertificateApproved || cond.Type == certv1.CertificateDenied {
			return string(cond.Type)
		}
	}
	return "Pending"
}

// TestCSRApproveLive drives the command end to end against a real API
// server: dry run, the interactive prompt, then --yes -o json with a spec.
func TestCSRApproveLive(t *testing.T) {
	env := testenv.Get(t)
	admin, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ensureNode(t, admin, "k8s-lab-node-1", "192.168.10.24")
	ensureNode(t, admin, "k8s-lab-node-2", "192.168.10.26")
	kc := []string{"--kubeconfig", env.KubeconfigPath()}

	createAsNode(t, env, "k8s-lab-node-1", "cli-a-good", "192.168.10.24")
	createAsNode(t, env, "k8s-lab-node-2", "cli-b-foreign", "192.168.10.24")

	// --dry-run decides, writes nothing, and still exits 1 for the denial.
	r := run(t, "", append([]string{"csr", "approve", "--dry-run", "cli-a-good", "cli-b-foreign"}, kc...)...)
	if r.code != 1 || !strings.Contains(r.stdout, "approved (dry run)") || !strings.Contains(r.stdout, "denied (dry run)") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, n := range []string{"cli-a-good", "cli-b-foreign"} {
		if got := conditionOf(t, admin, n); got != "Pending" {
			t.Fatalf("dry run wrote %s on %s", got, n)
		}
	}

	// Interactive: yes to the approval, no (end of input) to the denial.
	r = run(t, "y\n", append([]string{"csr", "approve", "cli-a-good", "cli-b-foreign"}, kc...)...)
	if r.code != 1 {
		t.Fatalf("interactive: exit %d, want 1 (a request is wrong)\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"requested by system:node:k8s-lab-node-2", "IPs:       192.168.10.24", "Approve cli-a-good? [y/N]", "Deny cli-b-foreign? [y/N]", "ip-addresses:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("interactive output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := conditionOf(t, admin, "cli-a-good"); got != "Approved" {
		t.Errorf("cli-a-good after 'y': %s", got)
	}
	if got := conditionOf(t, admin, "cli-b-foreign"); got != "Pending" {
		t.Errorf("cli-b-foreign after no answer: %s, want it untouched", got)
	}

	// Script mode with the lab spec: JSON on stdout, the denial written.
	createAsNode(t, env, "k8s-lab-node-2", "cli-c-good-with-spec", "192.168.10.26")
	r = run(t, "", append([]string{"csr", "approve", "--yes", "-o", "json", "-f", lab, "cli-b-foreign", "cli-c-good-with-spec"}, kc...)...)
	if r.code != 1 {
		t.Fatalf("--yes: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var outs []csr.Outcome
	if err := json.Unmarshal([]byte(r.stdout), &outs); err != nil {
		t.Fatalf("stdout is not the JSON contract: %v\n%s", err, r.stdout)
	}
	got := map[string]csr.Decision{}
	for _, o := range outs {
		got[o.Name] = o.Decision
		if len(o.Reasons) == 0 || o.Node == "" {
			t.Errorf("outcome %+v lacks reasons or node", o)
		}
	}
	if got["cli-b-foreign"] != csr.Deny || got["cli-c-good-with-spec"] != csr.Approve || len(outs) != 2 {
		t.Fatalf("decisions %v", got)
	}
	if conditionOf(t, admin, "cli-b-foreign") != "Denied" || conditionOf(t, admin, "cli-c-good-with-spec") != "Approved" {
		t.Fatalf("API shows %s and %s", conditionOf(t, admin, "cli-b-foreign"), conditionOf(t, admin, "cli-c-good-with-spec"))
	}

	// Nothing pending: exit 0.
	r = run(t, "", append([]string{"csr", "approve", "--yes", "cli-b-foreign"}, kc...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "No pending") {
		t.Fatalf("nothing pending: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCSRApproveNodeLookupErrorIsIncomplete: an API error while looking up
// the Node leaves the request pending (never denied) and exits 3. The fake
// clientset stands in for an API server that fails one call; everything the
// API server enforces is tested live above.
func TestCSRApproveNodeLookupErrorIsIncomplete(t *testing.T) {
	obj := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request: servingRequest(t, "k8s-lab-node-1", "192.168.10.24"), SignerName: certv1.KubeletServingSignerName,
			Usages:   []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth},
			Username: "system:node:k8s-lab-node-1", Groups: []string{"system:nodes"},
		},
	}
	client := fake.NewClientset(obj)
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
	})
	var out, errOut bytes.Buffer
	o := &csrApproveOptions{yes: true, output: "json"}
	err := o.runOnce(t.Context(), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, client, csr.Options{}, nil)
	if codeOf(err) != ExitIncomplete || !strings.Contains(err.Error(), "etcd is sad") {
		t.Fatalf("err %v (exit %d), want exit 3 naming the API error", err, codeOf(err))
	}
	var outs []csr.Outcome
	if err := json.Unmarshal(out.Bytes(), &outs); err != nil || len(outs) != 1 || outs[0].Decision != csr.LeavePending {
		t.Fatalf("outcomes %s (%v), want one left-pending", out.String(), err)
	}
	for _, a := range client.Actions() {
		if a.GetSubresource() == "approval" {
			t.Fatalf("wrote %s/%s after an API error", a.GetVerb(), a.GetSubresource())
		}
	}
}

func TestPrintableQuotesTerminalEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"k8s-lab-node-1":          "k8s-lab-node-1",
		"evil\x1b[2J.example.com": `"evil\x1b[2J.example.com"`,
		"tab\tname":               `"tab\tname"`,
		"":                        "", // the table falls back to the requester on ""
		"ünï":                     `"\u00fcn\u00ef"`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %s, want %s", in, got, want)
		}
	}
	if got := orNone([]string{"a", "b\x07"}); got != `a, "b\a"` {
		t.Errorf("orNone = %s", got)
	}
}
