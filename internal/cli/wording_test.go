package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/csr"
)

// TestUsageErrorPointsToSubcommand: a usage error names the subcommand's
// help, not the root's.
func TestUsageErrorPointsToSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--bogus"}, "See 'hybridctl doctor --help'."},
		{[]string{"csr", "approve", "-o", "xml"}, "See 'hybridctl csr approve --help'."},
		{[]string{"kubeconfig", "list", "extra"}, "See 'hybridctl kubeconfig list --help'."},
		{[]string{"nosuchcommand"}, "See 'hybridctl --help'."},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tc.want) || strings.Contains(r.err, "Run 'hybridctl --help'") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.err, tc.want)
		}
	}
}

// TestCSRTableNodeColumn: NODE is the JSON's node (none when the requester
// is not a node), REQUESTER is who asked.
func TestCSRTableNodeColumn(t *testing.T) {
	var b strings.Builder
	printOutcomes(&b, []csr.Outcome{
		{Name: "csr-admin", Node: "", Decision: csr.Deny, Reasons: []string{"requester: not a node"}},
		{Name: "csr-node", Node: "k8s-lab-node-1", Decision: csr.Approve},
	}, []*csr.Review{
		{Name: "csr-admin", Requester: "kubernetes-admin"},
		{Name: "csr-node", Node: "k8s-lab-node-1", Requester: "system:node:k8s-lab-node-1"},
	}, false)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"NAME", "NODE", "REQUESTER"},
		{"csr-admin", "<none>", "kubernetes-admin"},
		{"csr-node", "k8s-lab-node-1", "system:node:k8s-lab-node-1"},
	} {
		f := strings.Fields(lines[i])
		if len(f) < 3 || f[0] != want[0] || f[1] != want[1] || f[2] != want[2] {
			t.Errorf("line %d %q, want columns %v", i, lines[i], want)
		}
	}
}

// TestKubeconfigListJSONKeys: shadowed and problems are always present.
func TestKubeconfigListJSONKeys(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: a
  user: {token: x}
contexts:
- name: a
  context: {cluster: a, user: a}
current-context: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "kubeconfig", "list", "--kubeconfig", kc, "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var got struct {
		Shadowed *[]any `json:"shadowed"`
		Contexts []struct {
			Problems *[]string `json:"problems"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Shadowed == nil || len(got.Contexts) != 1 || got.Contexts[0].Problems == nil {
		t.Errorf("shadowed or problems missing:\n%s", r.out)
	}
	if strings.Contains(r.out, "null") {
		t.Errorf("null in:\n%s", r.out)
	}
}

// TestSpecDefaultFile: -f defaults to ./cluster.yaml, what init writes.
func TestSpecDefaultFile(t *testing.T) {
	t.Chdir(t.TempDir())
	r := runCLI(t, "", "plan")
	if r.code != ExitUsage || !strings.Contains(r.err, "there is no ./cluster.yaml: write one with 'hybridctl init'") {
		t.Fatalf("without ./cluster.yaml: exit %d, %q", r.code, r.err)
	}
	if r := runCLI(t, "", "init"); r.code != 0 {
		t.Fatalf("init: exit %d, %s", r.code, r.err)
	}
	r = runCLI(t, "", "plan", "-o", "json")
	if r.code != 0 || !strings.Contains(r.out, `"cluster": "lab"`) {
		t.Fatalf("plan with ./cluster.yaml: exit %d, %s", r.code, r.err)
	}
	// An explicit -f naming a missing file is an I/O error, as before.
	if r := runCLI(t, "", "plan", "-f", "other.yaml"); r.code != ExitIncomplete {
		t.Errorf("plan -f other.yaml: exit %d", r.code)
	}
	// csr approve has no default spec: it works without one.
	cmd := newCSRApproveCmd(Streams{})
	if d := cmd.Flags().Lookup("filename").DefValue; d != "" {
		t.Errorf("csr approve -f default %q", d)
	}
}

// TestListAndExplainChecks: --list-checks and --explain ID|name|all on
// doctor and lint, from the catalogue.
func TestListAndExplainChecks(t *testing.T) {
	docs, err := checks.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"doctor", "lint"} {
		r := runCLI(t, "", tool, "--list-checks")
		if r.code != 0 {
			t.Fatalf("%s --list-checks: exit %d %s", tool, r.code, r.err)
		}
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		if len(lines) != len(docs)+1 {
			t.Fatalf("%s --list-checks: %d lines for %d checks", tool, len(lines), len(docs))
		}
		for i, d := range docs {
			if f := strings.Fields(lines[i+1]); f[0] != d.ID || f[1] != d.Name || f[2] != string(d.Severity) {
				t.Errorf("%s --list-checks line %d: %q, want %s %s", tool, i+1, lines[i+1], d.ID, d.Name)
			}
		}
		r = runCLI(t, "", tool, "--list-checks", "-o", "json")
		var rows []map[string]string
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != len(docs) || rows[0]["id"] != docs[0].ID {
			t.Errorf("%s --list-checks -o json: %v %q", tool, err, r.out)
		}
		last := docs[len(docs)-1]
		for _, ref := range []string{last.ID, last.Name} {
			r = runCLI(t, "", tool, "--explain", ref)
			if r.code != 0 || !strings.HasPrefix(r.out, last.ID+" "+last.Name) {
				t.Errorf("%s --explain %s: exit %d %q", tool, ref, r.code, r.out)
			}
		}
		r = runCLI(t, "", tool, "--explain", "all")
		for _, d := range docs {
			if !strings.Contains(r.out, d.ID+" "+d.Name+" (") {
				t.Errorf("%s --explain all lacks %s", tool, d.ID)
			}
		}
		if r := runCLI(t, "", tool, "--explain", "HC999"); r.code != ExitUsage {
			t.Errorf("%s --explain HC999: exit %d", tool, r.code)
		}
	}
}

// TestPlanJSONProblems: plan -o json on an invalid spec prints the
// problems as JSON (for editors and CI) and exits 1.
func TestPlanJSONProblems(t *testing.T) {
	bad := strings.Replace(string(examples.Lab), "name: k8s-lab-win-1", "name: k8s-lab-windows-01", 1)
	if bad == string(examples.Lab) {
		t.Fatal("fixture did not change")
	}
	r := runCLI(t, bad, "plan", "-f", "-", "-o", "json")
	if r.code != ExitProblem {
		t.Fatalf("exit %d, stderr %q", r.code, r.err)
	}
	var got struct {
		Problems []map[string]any `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || len(got.Problems) == 0 {
		t.Fatalf("stdout is not {problems:[...]}: %v\n%s", err, r.out)
	}
	found := false
	for _, p := range got.Problems {
		for _, k := range []string{"file", "line", "path", "severity", "message", "check"} {
			if _, ok := p[k]; !ok {
				t.Errorf("problem without %q: %v", k, p)
			}
		}
		if p["path"] == "spec.nodes[3].name" && p["severity"] == "error" && p["file"] == "<stdin>" && p["line"].(float64) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no error for spec.nodes[3].name: %s", r.out)
	}
	// A valid spec still gives the plan.
	if r := runCLI(t, string(examples.Lab), "plan", "-f", "-", "-o", "json"); r.code != 0 || strings.Contains(r.out, `"problems"`) {
		t.Errorf("valid spec: exit %d", r.code)
	}
}
