//go:build unix

package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/connectivity"
	"github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
	"github.com/hybridctl/hybridctl/internal/termtext"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// hostile is what a chart author, a node or a colleague's kubeconfig can
// put where hybridctl prints text: cursor up and erase the line (ESC[1A
// ESC[2K), a window title (OSC 0), a clipboard write (OSC 52), a bell, a
// carriage return that overwrites the line, and C1 controls (U+009B CSI,
// U+0085 NEL).
const hostile = "evil\x1b[1A\x1b[2K\x1b]0;pwned\a\x1b]52;c;ZXZpbA==\a\rfake\u009b2J\u0085"

// hostileYAML is hostile as a double-quoted YAML (and JSON) string.
func hostileYAML() string {
	b, err := json.Marshal(hostile)
	if err != nil {
		panic(err)
	}
	return string(termtext.JSON(b))
}

// assertNoRawControls fails when out holds anything a terminal acts on, and
// when the hostile text did not reach it at all (escaped): a test that fed
// nothing would pass for nothing.
func assertNoRawControls(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: the output is not UTF-8: %q", what, out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Errorf("%s: %U reaches the output raw:\n%q", what, r, out)
			return
		}
	}
	if !strings.Contains(out, `\x1b]52;c;`) && !strings.Contains(out, `\u001b]52;c;`) {
		t.Errorf("%s: the hostile text is not in the output, escaped; this run proves nothing:\n%s", what, out)
	}
}

// hostileRun runs hybridctl with args and checks stdout and stderr.
func hostileRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	assertNoRawControls(t, strings.Join(args, " "), r.stdout+r.stderr)
	return r
}

// hostileCase says how the test feeds one command hostile text, or why the
// command shows no text from outside.
type hostileCase struct {
	feed func(t *testing.T)
	none string
}

// hostileCases has an entry for every command of the tree (checked by
// TestEveryCommandEscapesWhatItShows): a new command cannot be forgotten.
func hostileCases() map[string]hostileCase {
	return map[string]hostileCase{
		"hybridctl init":           {feed: feedInitFromCluster},
		"hybridctl diff":           {feed: feedDiff},
		"hybridctl upgrade":        {feed: feedUpgrade},
		"hybridctl version":        {none: "prints the build's own version"},
		"hybridctl spec schema":    {none: "prints the embedded JSON Schema"},
		"hybridctl spec effective": {feed: feedSpec("spec", "effective")},
		"hybridctl explain":        {none: "prints the catalogues' own texts; an unknown ID it echoes reaches only the error, which Main escapes"},
		"hybridctl completion":     {none: "prints the shell's completion script; the values completed from a kubeconfig or spec are filtered (TestCompletionKubeconfigNames)"},

		"hybridctl lint":               {feed: feedLint},
		"hybridctl doctor":             {feed: feedDoctor},
		"hybridctl csr approve":        {feed: feedCSR},
		"hybridctl kubeconfig import":  {feed: feedKubeconfigImport},
		"hybridctl kubeconfig list":    {feed: feedKubeconfigList},
		"hybridctl kubeconfig remove":  {feed: feedKubeconfigRemove},
		"hybridctl plan":               {feed: feedSpec("plan")},
		"hybridctl render":             {feed: feedSpec("render", "-o", "OUT")},
		"hybridctl bundle list":        {feed: feedSpec("bundle", "list")},
		"hybridctl bundle verify":      {feed: feedBundleVerify},
		"hybridctl bundle download":    {feed: feedBundleDownload},
		"hybridctl apply":              {feed: feedApply},
		"hybridctl reset":              {feed: feedReset},
		"hybridctl node diagnose":      {feed: feedNodeDiagnose},
		"hybridctl check connectivity": {feed: feedConnectivity},
	}
}

// TestEveryCommandEscapesWhatItShows walks the command tree: every command
// that shows text from outside (tables, progress, errors) is fed the
// hostile text where that text comes from, in every output format, and
// none of it reaches the output raw.
func TestEveryCommandEscapesWhatItShows(t *testing.T) {
	cases := hostileCases()
	root := NewRootCmd(Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	seen := map[string]bool{}
	for _, c := range allCommands(root) {
		if c.HasSubCommands() || c.Hidden || c.Name() == "help" {
			continue
		}
		path := c.CommandPath()
		seen[path] = true
		tc, ok := cases[path]
		if !ok {
			t.Errorf("%s has no entry in hostileCases: feed it hostile text, or say why it shows none", path)
			continue
		}
		if tc.none != "" {
			continue
		}
		t.Run(strings.TrimPrefix(path, "hybridctl "), tc.feed)
	}
	for path := range cases {
		if !seen[path] {
			t.Errorf("hostileCases names %s, which is not a command", path)
		}
	}
}

const hostileManifest = `apiVersion: v1
kind: Node
metadata: {name: win-1, labels: {kubernetes.io/os: windows, kubernetes.io/arch: amd64, node.kubernetes.io/windows-build: "10.0.26100"}}
status: {capacity: {pods: "60"}, nodeInfo: {kubeletVersion: v1.37.2}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: HOSTILE, namespace: HOSTILE}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: HOSTILE}]
`

func feedLint(t *testing.T) {
	in := strings.ReplaceAll(hostileManifest, "HOSTILE", hostileYAML())
	for _, format := range []string{"table", "json", "sarif", "junit"} {
		r := hostileRun(t, in, "lint", "-", "-o", format)
		if r.code != ExitProblem {
			t.Errorf("lint -o %s: exit %d, want 1 (a finding)\n%s%s", format, r.code, r.stdout, r.stderr)
		}
	}
	// Input that is not Kubernetes: the diagnostics echo it.
	hostileRun(t, "kind: "+hostileYAML()+"\n", "lint", "-")
}

func feedDoctor(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "hostile-doctor"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	win := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hostile-win-1", Labels: map[string]string{
		"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64", "node.kubernetes.io/windows-build": "10.0.26100"}}}
	if _, err := admin.CoreV1().Nodes().Create(ctx, win, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(ctx, win.Name, metav1.DeleteOptions{}) })
	// The API server accepts any text in an image, and so in a message
	// that names it.
	dep := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q},
"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
"spec":{"containers":[{"name":"web","image":%s}]}}}}`, ns, hostileYAML())
	if err := admin.AppsV1().RESTClient().Post().AbsPath("/apis/apps/v1/namespaces/"+ns+"/deployments").
		Body([]byte(dep)).SetHeader("Content-Type", "application/json").Do(ctx).Error(); err != nil {
		t.Fatalf("the API server refused an image with control characters: %v", err)
	}
	for _, format := range []string{"table", "json", "sarif", "junit"} {
		hostileRun(t, "", "doctor", "--kubeconfig", env.KubeconfigPath(), "-n", ns, "-o", format)
	}
}

func feedCSR(t *testing.T) {
	env := testenv.Get(t)
	admin, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ensureNode(t, admin, "k8s-lab-node-1", "192.168.10.24")
	cfg, err := env.UserConfig("system:node:k8s-lab-node-1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A certificate request's DNS names are IA5 strings (ASCII): the
	// hostile text's C0 controls, without its C1 ones.
	ascii := strings.Map(func(r rune) rune {
		if r > 0x7f {
			return -1
		}
		return r
	}, hostile)
	req := servingRequestNames(t, "k8s-lab-node-1", []string{"k8s-lab-node-1", ascii}, "192.168.10.24")
	if _, err := node.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "hostile-names"},
		Spec: certv1.CertificateSigningRequestSpec{Request: req, SignerName: certv1.KubeletServingSignerName,
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := []string{"--kubeconfig", env.KubeconfigPath(), "hostile-names"}
	hostileRun(t, "", append([]string{"csr", "approve", "--dry-run"}, kc...)...)
	hostileRun(t, "", append([]string{"csr", "approve", "--dry-run", "-o", "json"}, kc...)...)
	// At the prompt: declined (end of input), nothing written.
	hostileRun(t, "", append([]string{"csr", "approve"}, kc...)...)
}

// hostileKubeconfig is a kubeconfig whose every free field is hostile.
func hostileKubeconfig(t *testing.T) string {
	t.Helper()
	h := hostileYAML()
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters:
- name: `+h+`
  cluster: {server: "https://127.0.0.1:1/`+strings.Trim(h, `"`)+`"}
users:
- name: `+h+`
  user: {token: not-a-secret}
contexts:
- name: lab
  context: {cluster: `+h+`, user: `+h+`, namespace: `+h+`}
- name: `+h+`
  context: {cluster: `+h+`, user: `+h+`}
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func feedKubeconfigList(t *testing.T) {
	kc := hostileKubeconfig(t)
	hostileRun(t, "", "kubeconfig", "list", "--kubeconfig", kc)
	hostileRun(t, "", "kubeconfig", "list", "--kubeconfig", kc, "-o", "json")
}

func feedKubeconfigRemove(t *testing.T) {
	// A file with such names cannot be written back (YAML refuses control
	// characters): refused, and nothing raw is shown.
	if r := run(t, "", "kubeconfig", "remove", "lab", "--kubeconfig", hostileKubeconfig(t)); r.code == 0 || strings.ContainsAny(r.stdout+r.stderr, "\x1b\a\r\u009b") {
		t.Errorf("removing from a file with hostile names: exit %d\n%q%q", r.code, r.stdout, r.stderr)
	}
	// A kubeconfig in a directory named by someone else: its path is
	// shown with what was removed.
	dir := filepath.Join(t.TempDir(), strings.ReplaceAll(hostile, "/", "_"))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: lab-admin, user: {token: not-a-secret}}]
contexts: [{name: lab, context: {cluster: lab, user: lab-admin}}]
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := hostileRun(t, "", "kubeconfig", "remove", "lab", "--kubeconfig", kc)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func feedKubeconfigImport(t *testing.T) {
	ca := kubeconfigtest.NewCA(t, hostile)
	cert, key := ca.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	conf := string(kubeconfigtest.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key))
	dir := t.TempDir()
	src := filepath.Join(dir, "admin.conf")
	if err := os.WriteFile(src, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "config")
	// The CA's name is shown (quoted) in the table of what was imported.
	r := hostileRun(t, "", "kubeconfig", "import", src, "--name", "lab", "--kubeconfig", target)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A namespace that is not a DNS label is refused, naming the field.
	bad := strings.Replace(conf, "    cluster: kubernetes\n", "    cluster: kubernetes\n    namespace: "+hostileYAML()+"\n", 1)
	if err := os.WriteFile(src, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	r = hostileRun(t, "", "kubeconfig", "import", src, "--name", "lab2", "--kubeconfig", target)
	if r.code != ExitProblem || !strings.Contains(r.stderr, "namespace") {
		t.Fatalf("hostile namespace: exit %d, want 1 naming the namespace\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// hostileSpec is the lab spec with hostile text in fields that validation
// echoes and in one (the SSH user) that it may not check.
func hostileSpec(t *testing.T) string {
	t.Helper()
	h := hostileYAML()
	s := string(examples.Lab)
	for old, new := range map[string]string{
		"dnsSuffix: example.com": "dnsSuffix: " + h,
		"name: k8s-lab-node-2":   "name: " + h,
		"ssh: {user: user}":      "ssh: {user: " + h + "}",
	} {
		s = strings.Replace(s, old, new, 1)
	}
	if strings.Count(s, "evil") < 3 {
		t.Fatalf("the spec edit failed:\n%s", s)
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func feedSpec(args ...string) func(t *testing.T) {
	return func(t *testing.T) {
		spec := hostileSpec(t)
		full := append([]string{}, args...)
		for i, a := range full {
			if a == "OUT" {
				full[i] = filepath.Join(t.TempDir(), "out")
			}
		}
		full = append(full, "-f", spec)
		r := hostileRun(t, "", full...)
		if r.code != ExitProblem {
			t.Errorf("exit %d, want 1 (an invalid spec)\n%s%s", r.code, r.stdout, r.stderr)
		}
		if args[0] == "plan" {
			hostileRun(t, "", append(full, "-o", "json")...)
			hostileRun(t, "", append(full, "-o", "yaml")...)
		}
	}
}

func feedBundleVerify(t *testing.T) {
	const specFile = "../../examples/lab-linux.yaml"
	dir := t.TempDir()
	// A carried bundle: file names are whoever packed it.
	name := "extra-" + strings.NewReplacer("/", "_", "\x00", "").Replace(hostile)
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("x"))
	sums := hex.EncodeToString(sum[:]) + "  " + name + "\n" + hex.EncodeToString(sum[:]) + "  ../" + name + "\n"
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	hostileRun(t, "", "bundle", "verify", "-f", specFile, "-d", dir)
	hostileRun(t, "", "bundle", "verify", "-f", specFile, "-d", dir, "-o", "json")
}

func feedBundleDownload(t *testing.T) {
	const specFile = "../../examples/lab-linux.yaml"
	m, _ := newMirror(t, specFile)
	// The mirror answers with a status line of its own choosing.
	m.setHook(func(w http.ResponseWriter, _ *http.Request) bool {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return true
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 503 " + strings.ReplaceAll(hostile, "\r", "") + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = buf.Flush()
		return true
	})
	hostileRun(t, "", "bundle", "download", "-f", specFile, "-d", filepath.Join(t.TempDir(), "b"), "--mirror", m.srv.URL)
}

// loopbackSpec is the lab spec with every node's SSH at srv.
func loopbackSpec(t *testing.T, srv *sshtest.Server) string {
	t.Helper()
	host, port, _ := strings.Cut(srv.Addr, ":")
	spec := regexp.MustCompile(`ssh: \{user: (\w+)\}`).ReplaceAllString(string(examples.Lab), "ssh: {user: $1, host: "+host+", port: "+port+"}")
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shimHostile makes srv's command name print the hostile text (on both
// streams) and fail with exit status 3.
func shimHostile(srv *sshtest.Server, name string) {
	srv.Shim(name, "#!/bin/sh\nprintf '%s\\n' "+shellQuote(hostile)+"\nprintf '%s\\n' "+shellQuote(hostile)+" >&2\nexit 3\n")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func feedApply(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	// What the nodes say about themselves reaches preflight's findings.
	srv.Shim("systemd-detect-virt", "#!/bin/sh\nprintf '%s\\n' "+shellQuote(hostile)+"\n")
	srv.Shim("getent", "#!/bin/sh\nprintf '%s 0 0\\n' "+shellQuote(hostile)+"\n")
	spec := loopbackSpec(t, srv)
	args := []string{"apply", "-f", spec, "--only", "preflight", "-i", key.Path, "--known-hosts", filepath.Join(t.TempDir(), "kh"), "--accept-new-host-keys"}
	hostileRun(t, "", args...)
	hostileRun(t, "", append(args, "-o", "json")...)
}

func feedReset(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	// Every privileged command fails, saying something hostile.
	shimHostile(srv, "sudo")
	spec := loopbackSpec(t, srv)
	args := []string{"reset", "-f", spec, "--node", "k8s-lab-node-1", "--skip-phases", "drain,delete-node", "--yes",
		"-i", key.Path, "--known-hosts", filepath.Join(t.TempDir(), "kh"), "--accept-new-host-keys", "--state", filepath.Join(t.TempDir(), "state.json")}
	r := hostileRun(t, "", args...)
	if r.code == 0 {
		t.Errorf("reset passed with every command failing\n%s%s", r.stdout, r.stderr)
	}
	hostileRun(t, "", append(args, "-o", "json")...)
}

func feedNodeDiagnose(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	for _, tool := range []string{"systemctl", "journalctl", "crictl", "ip", "timedatectl"} {
		shimHostile(srv, tool)
	}
	_, port, _ := strings.Cut(srv.Addr, ":")
	var p int
	fmt.Sscan(port, &p)
	spec := localSpec(t, p)
	dir := t.TempDir()
	kh := filepath.Join(dir, "kh")
	if err := os.WriteFile(kh, []byte(srv.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"node", "diagnose", "k8s-lab-node-1", "-f", spec, "-i", key.Path, "--known-hosts", kh,
		"--kubeconfig", filepath.Join(dir, "missing"), "--connect-timeout", "10s"}
	hostileRun(t, "", args...)
	hostileRun(t, "", append(args, "-o", "json")...)
}

// feedConnectivity: the probe pods of a run are left unschedulable by a
// scheduler that says something hostile (the test stands in for it);
// their state reaches the progress lines, the problems and the report.
// The report of a run whose probes answered with hostile output goes
// through the command's own writer in each of its formats.
func feedConnectivity(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hostile-conn-1", "hostile-conn-2"} {
		n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, format := range connectivity.Formats() {
		ns := fmt.Sprintf("hostile-conn-%d", i)
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for sctx.Err() == nil {
				pods, err := admin.CoreV1().Pods(ns).List(sctx, metav1.ListOptions{})
				if err == nil {
					for _, p := range pods.Items {
						if len(p.Status.Conditions) > 0 || p.DeletionTimestamp != nil {
							continue
						}
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: hostile}}
						_, _ = admin.CoreV1().Pods(ns).UpdateStatus(sctx, &p, metav1.UpdateOptions{})
					}
				}
				select {
				case <-sctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		r := hostileRun(t, "", "check", "connectivity", "--kubeconfig", env.KubeconfigPath(), "-n", ns, "--ready-timeout", "4s", "-o", format)
		stop()
		<-done
		if r.code != ExitIncomplete {
			t.Errorf("-o %s: exit %d, want 3 (the probes never ran)\n%s%s", format, r.code, r.stdout, r.stderr)
		}
	}

	code := 1
	rep := &connectivity.Report{Namespace: "hostile", Problems: []string{"setup: " + hostile},
		Tests: []connectivity.Outcome{{Name: "pod-to-pod", From: hostile, To: "pod/" + hostile, Result: connectivity.Fail, Reason: hostile,
			Fix: hostile, Evidence: &connectivity.Evidence{Command: "ping " + hostile, ExitCode: &code, Attempts: 3, Output: hostile + "\n" + hostile}}}}
	for _, format := range connectivity.Formats() {
		var b strings.Builder
		if err := connectivity.Write(&b, format, rep); err != nil {
			t.Fatal(err)
		}
		assertNoRawControls(t, "the report of a failed test, -o "+format, b.String())
	}
}

// hostileCluster is a private test API server and a kubeconfig for it
// (context testenv).
func hostileCluster(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	env := testenv.StartT(t, testenv.Options{})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kc, env.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs, kc
}

// hostileNode creates a Node whose InternalIP and container runtime are
// the hostile text (the API server checks neither).
func hostileNode(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostile}}
	n.Status.NodeInfo.ContainerRuntimeVersion = "docker://" + hostile
	n.Status.NodeInfo.KubeletVersion = "v1.37.2"
	n.Status.NodeInfo.OperatingSystem = "linux"
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// feedInitFromCluster: init --from-cluster reads a cluster whose kubeadm
// configuration, kube-proxy mode and Nodes carry the hostile text; its notes
// and the spec it writes hold none of it raw.
func feedInitFromCluster(t *testing.T) {
	cs, kc := hostileCluster(t)
	ctx := t.Context()
	// In YAML's double quotes, Go's escapes of the hostile text read as it.
	name := []byte(strconv.QuoteToASCII(hostile))
	for cm, data := range map[string]map[string]string{
		"kubeadm-config": {"ClusterConfiguration": "kind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nclusterName: " + string(name) +
			"\nnetworking: {podSubnet: 10.244.0.0/16, serviceSubnet: 10.96.0.0/12, dnsDomain: cluster.local}\n"},
		"kube-proxy": {"config.conf": "kind: KubeProxyConfiguration\napiVersion: kubeproxy.config.k8s.io/v1alpha1\nmode: " + string(name) + "\n"},
	} {
		if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm, Namespace: "kube-system"},
			Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hostileNode(t, cs, "cp-1", map[string]string{"node-role.kubernetes.io/control-plane": ""})
	out := filepath.Join(t.TempDir(), "cluster.yaml")
	r := hostileRun(t, "", "init", "--from-cluster", "--kubeconfig", kc, "-o", out)
	if !strings.Contains(r.stderr, `\x1b[1A`) {
		t.Errorf("init --from-cluster's notes do not show the hostile text escaped (exit %d):\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(out); err == nil {
		assertNoRawControls(t, "the spec init wrote", string(b))
	}
}

// feedDiff: diff against a cluster where a spec node's name has a hostile
// address, and a Node not in the spec too.
func feedDiff(t *testing.T) {
	cs, kc := hostileCluster(t)
	hostileNode(t, cs, "k8s-lab-node-1", nil)
	hostileNode(t, cs, "extra-node", nil)
	for _, o := range []string{"table", "json"} {
		r := hostileRun(t, "", "diff", "-f", lab, "--kubeconfig", kc, "--context", "testenv", "-o", o, "--connect-timeout", "1s")
		if !strings.Contains(r.stdout+r.stderr, `1A`) {
			t.Errorf("diff -o %s does not show the hostile address (exit %d):\n%s%s", o, r.code, r.stdout, r.stderr)
		}
	}
}

// feedUpgrade: upgrade refuses a cluster whose NotReady Node reports a
// hostile kubelet version, and its message shows it escaped.
func feedUpgrade(t *testing.T) {
	cs, kc := hostileCluster(t)
	n, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "k8s-lab-node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.NodeInfo.KubeletVersion = "v1.37.2" + hostile
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"table", "json"} {
		r := hostileRun(t, "", "upgrade", "-f", "../../examples/lab-linux.yaml", "--bundle", t.TempDir(), "--kubeconfig", kc, "--context", "testenv", "--yes", "-o", o)
		if r.code != ExitProblem || !strings.Contains(r.stderr, `1A`) {
			t.Errorf("upgrade -o %s: exit %d, the hostile version not shown escaped:\n%s%s", o, r.code, r.stdout, r.stderr)
		}
	}
}
