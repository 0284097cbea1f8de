package cli

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/diagnose"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// complete runs cobra's real __complete command (what the shell scripts
// call) and returns the offered values (descriptions cut off) and the
// directive line.
func complete(t *testing.T, args ...string) (values []string, directive string) {
	t.Helper()
	r := run(t, "", append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("__complete %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	directive = lines[len(lines)-1]
	if !strings.HasPrefix(directive, ":") {
		t.Fatalf("__complete %q: no directive line in %q", args, r.stdout)
	}
	if want := "Completion ended with directive"; strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("__complete %q printed more than cobra's directive line on stderr: %q", args, r.stderr)
	}
	values = []string{}
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}

func TestCompletionFixedValues(t *testing.T) {
	var phaseNames, resetNames []string
	for _, p := range procedure.ApplyProcedure() {
		phaseNames = append(phaseNames, p.Name)
	}
	for _, p := range procedure.ResetProcedure() {
		resetNames = append(resetNames, p.Name)
	}
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var hc1, hc10 []string
	for _, d := range docs {
		if strings.HasPrefix(d.ID, "HC1") {
			hc1 = append(hc1, d.ID)
		}
		if strings.HasPrefix(d.ID, "HC10") {
			hc10 = append(hc10, d.ID)
		}
	}
	dg := diagnose.Checks()[0]
	if len(hc1) < 5 || len(phaseNames) < 10 || len(resetNames) < 3 || slices.Equal(phaseNames, resetNames) {
		t.Fatalf("implausible lists: %d HC1 checks, %d apply phases, %d reset phases", len(hc1), len(phaseNames), len(resetNames))
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"doctor -o", []string{"doctor", "-o", ""}, []string{"table", "json", "sarif", "junit"}},
		{"lint --output j", []string{"lint", "--output", "j"}, []string{"json", "junit"}},
		{"plan -o", []string{"plan", "-o", ""}, []string{"table", "json", "yaml"}},
		{"plan -o y", []string{"plan", "-o", "y"}, []string{"yaml"}},
		{"apply -o", []string{"apply", "-o", ""}, []string{"table", "json"}},
		{"version -o", []string{"version", "-o", ""}, []string{"table", "json"}},
		{"csr approve -o", []string{"csr", "approve", "-o", ""}, []string{"table", "json"}},
		{"--fail-on", []string{"doctor", "--fail-on", "w"}, []string{"warning"}},
		{"--checks HC1", []string{"doctor", "--checks", "HC1"}, hc1},
		{"--checks by name", []string{"lint", "--checks", "daemonset-os"}, []string{"daemonset-os-selector"}},
		{"--checks is case-insensitive", []string{"lint", "--checks", "hc101"}, []string{"HC101"}},
		{"--checks after a comma", []string{"doctor", "--checks", "HC101,HC10"}, prefixed("HC101,", without(hc10, "HC101"))},
		{"--checks: a check chosen by ID is not offered by name", []string{"lint", "--checks", "HC101,daemonset-os"}, []string{}},
		{"--checks: a check chosen by name is not offered by ID", []string{"doctor", "--checks", "Daemonset-OS-Selector,HC10"}, prefixed("Daemonset-OS-Selector,", without(hc10, "HC101"))},
		{"node diagnose --checks: one check under both values", []string{"node", "diagnose", "--checks", dg.ID + "," + dg.Name}, []string{}},
		{"--skip", []string{"doctor", "--skip", "HC10"}, hc10},
		{"--explain all", []string{"doctor", "--explain", "al"}, []string{"all"}},
		{"--explain one value", []string{"lint", "--explain", "HC101,"}, []string{}},
		{"apply --only", []string{"apply", "--only", ""}, phaseNames},
		{"apply --skip-phases after a comma", []string{"apply", "--skip-phases", "preflight,pre"}, []string{"preflight,preflight-cluster"}},
		{"reset --only", []string{"reset", "--only", ""}, resetNames},
		{"--ignore-preflight-errors", []string{"apply", "--ignore-preflight-errors", "sw"}, []string{"swap"}},
		{"--ignore-preflight-errors all", []string{"apply", "--ignore-preflight-errors", "al"}, []string{"all"}},
		{"reset --node", []string{"reset", "-f", lab, "--node", ""}, []string{"k8s-lab-master-1", "k8s-lab-node-1", "k8s-lab-node-2", "k8s-lab-win-1"}},
		{"reset --node after a comma", []string{"reset", "-f", lab, "--node", "k8s-lab-node-1,k8s-lab-n"}, []string{"k8s-lab-node-1,k8s-lab-node-2"}},
		{"reset --node without a spec", []string{"reset", "-f", filepath.Join(t.TempDir(), "none.yaml"), "--node", ""}, []string{}},
		{"completion shells", []string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, directive := complete(t, c.args...)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
			if directive != ":4" && directive != ":36" { // no file completion (and keep order)
				t.Errorf("directive %s offers files", directive)
			}
		})
	}
	// The id-preflight list is the one apply validates against.
	all, _ := complete(t, "apply", "--ignore-preflight-errors", "")
	if !slices.Equal(all, append(preflight.Names(), "all")) {
		t.Errorf("--ignore-preflight-errors offers %q", all)
	}
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, allCommands(sub)...)
	}
	return out
}

func prefixed(p string, vs []string) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, p+v)
	}
	return out
}

func without(vs []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(vs), func(v string) bool { return v == drop })
}

// TestCompletionOutputValues: every command with -o/--output has its
// values completed (unless -o is a file), and each offered value is one its
// help names (a renamed format must not leave a stale completion).
func TestCompletionOutputValues(t *testing.T) {
	root := NewRootCmd(Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	files := map[string]bool{"hybridctl init": true, "hybridctl render": true}
	seen := 0
	for _, cmd := range allCommands(root) {
		fl := cmd.Flags().Lookup("output")
		if fl == nil || files[cmd.CommandPath()] {
			continue
		}
		seen++
		values := outputValues()[cmd.CommandPath()]
		if len(values) == 0 {
			t.Errorf("%s -o has no completion", cmd.CommandPath())
		}
		for _, v := range values {
			if !strings.Contains(fl.Usage, v) {
				t.Errorf("%s -o completes %q, which its help (%q) does not name", cmd.CommandPath(), v, fl.Usage)
			}
		}
	}
	if seen != len(outputValues()) {
		t.Errorf("%d commands have -o, %d completion lists", seen, len(outputValues()))
	}
}

func TestCompletionKubeconfigNames(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:1"}
- name: prod
  cluster: {server: "https://127.0.0.1:2"}
users:
- name: lab-admin
  user: {token: secret-token-never-printed}
contexts:
- name: prod
  context: {cluster: prod, user: lab-admin}
- name: lab
  context: {cluster: lab, user: lab-admin}
- name: "evil\e]52;c;ZXZpbA==\a\e[2K"
  context: {cluster: lab, user: lab-admin}
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		// A context name a terminal would act on is never offered.
		{[]string{"doctor", "--kubeconfig", kc, "--context", ""}, []string{"lab", "prod"}},
		{[]string{"doctor", "--kubeconfig", kc, "--context", "e"}, []string{}},
		{[]string{"csr", "approve", "--kubeconfig", kc, "--context", "p"}, []string{"prod"}},
		{[]string{"doctor", "--kubeconfig", kc, "--cluster", ""}, []string{"lab", "prod"}},
		{[]string{"doctor", "--kubeconfig", kc, "--user", ""}, []string{"lab-admin"}},
		{[]string{"kubeconfig", "remove", "--kubeconfig", kc, ""}, []string{"lab", "prod"}},
		{[]string{"kubeconfig", "remove", "--kubeconfig", kc, "lab", ""}, []string{}},
		{[]string{"doctor", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--context", ""}, []string{}},
	} {
		got, _ := complete(t, c.args...)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
		}
	}
}

// TestCompletionNamespaces asks the real API server for its namespaces,
// and checks that an unreachable or silent server completes nothing,
// prints nothing and does not hang the shell.
func TestCompletionNamespaces(t *testing.T) {
	env := testenv.Get(t)
	admin, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"complete-alpha", "complete-beta", "other"} {
		_, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	got, _ := complete(t, "doctor", "--kubeconfig", env.KubeconfigPath(), "-n", "complete-")
	if !slices.Equal(got, []string{"complete-alpha", "complete-beta"}) {
		t.Errorf("-n complete-: got %q", got)
	}
	got, _ = complete(t, "doctor", "--kubeconfig", env.KubeconfigPath(), "--namespace", "")
	for _, want := range []string{"default", "kube-system", "other"} {
		if !slices.Contains(got, want) {
			t.Errorf("--namespace: %q lacks %s", got, want)
		}
	}

	// A server that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	got, _ = complete(t, "doctor", "--server", "https://"+l.Addr().String(), "--insecure-skip-tls-verify", "-n", "")
	if len(got) != 0 {
		t.Errorf("silent server: got %q", got)
	}
	// Not a timing test: only that the deadline exists (3 s, far below this).
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("completion waited %s on a silent server", d)
	}
	got, _ = complete(t, "doctor", "--server", "https://127.0.0.1:1", "-n", "")
	if len(got) != 0 {
		t.Errorf("unreachable server: got %q", got)
	}
}
