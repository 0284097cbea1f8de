package cli

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The DaemonSet tolerates every taint and has no OS selector: HC101.
const lintDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: monitoring
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: agent, image: "example.com/agent:1.0"}]
`

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A kustomization.yaml and a half-written file beside a DaemonSet: both are
// reported at file:line in every format, and the DaemonSet's finding is
// still there.
func TestLintInputDiagnostics(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ds.yaml]\n",
		"ds.yaml":            lintDaemonSet,
		"half.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [half\n",
	})
	kust, half := filepath.Join(dir, "kustomization.yaml"), filepath.Join(dir, "half.yaml")

	r := runCLI(t, "", "lint", dir)
	if r.code != ExitProblem {
		t.Fatalf("table: exit %d, err %s", r.code, r.err)
	}
	for _, want := range []string{"INPUT (2)", half + ":3 error", kust + ":1 warning", "kustomize build " + dir + " | hybridctl lint -",
		"HC101", "input: 1 unreadable, 1 not Kubernetes objects"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("table lacks %q:\n%s", want, r.out)
		}
	}

	r = runCLI(t, "", "lint", dir, "-o", "json")
	var rep struct {
		Findings    []struct{ Check string }
		Diagnostics []struct {
			Severity, File, Message, Fix string
			Line                         int
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, r.out)
	}
	if r.code != ExitProblem || len(rep.Findings) == 0 || rep.Findings[0].Check != "HC101" || len(rep.Diagnostics) != 2 ||
		rep.Diagnostics[0].File != half || rep.Diagnostics[0].Line != 3 || rep.Diagnostics[0].Severity != "error" ||
		rep.Diagnostics[1].File != kust || rep.Diagnostics[1].Line != 1 || rep.Diagnostics[1].Severity != "warning" ||
		rep.Summary["inputErrors"] != 1 || rep.Summary["inputWarnings"] != 1 {
		t.Fatalf("json: exit %d, %+v", r.code, rep)
	}

	r = runCLI(t, "", "lint", dir, "-o", "sarif")
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string }
				}
			}
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &log); err != nil {
		t.Fatalf("sarif: %v", err)
	}
	var input []string
	hc101 := false
	run := log.Runs[0]
	for _, res := range run.Results {
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("sarif: ruleIndex %d is %s, result says %s", res.RuleIndex, run.Tool.Driver.Rules[res.RuleIndex].ID, res.RuleID)
		}
		loc := res.Locations[0].PhysicalLocation
		switch res.RuleID {
		case "HC000":
			input = append(input, res.Level+" "+filepath.Base(loc.ArtifactLocation.URI)+":"+itoa(loc.Region.StartLine))
		case "HC101":
			hc101 = true
		}
	}
	if strings.Join(input, ",") != "error half.yaml:3,warning kustomization.yaml:1" || !hc101 {
		t.Fatalf("sarif: input results %q, HC101 %v", input, hc101)
	}

	r = runCLI(t, "", "lint", dir, "-o", "junit")
	var suite struct {
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Type string `xml:"type,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal([]byte(strings.TrimPrefix(r.out, xml.Header)), &suite); err != nil {
		t.Fatal(err)
	}
	var cases []string
	hc101 = false
	for _, c := range suite.Cases {
		switch {
		case strings.HasPrefix(c.Classname, "HC000 input-document"):
			cases = append(cases, filepath.Base(c.Name)+" "+c.Failure.Type)
		case strings.HasPrefix(c.Classname, "HC101") && c.Failure != nil:
			hc101 = true
		}
	}
	if strings.Join(cases, ",") != "half.yaml:3 error,kustomization.yaml:1 warning" || !hc101 || suite.Failures < 3 {
		t.Fatalf("junit: input cases %q, HC101 %v, %d failures", cases, hc101, suite.Failures)
	}

	// Only the kustomization's warning: --fail-on warning fails on it, the
	// default does not (the DaemonSet is fixed here).
	fixed := strings.Replace(lintDaemonSet, "tolerations: [{operator: Exists}]", "nodeSelector: {kubernetes.io/os: linux}", 1)
	dir2 := writeTree(t, map[string]string{"kustomization.yaml": "resources: [ds.yaml]\n", "ds.yaml": fixed})
	if r := runCLI(t, "", "lint", dir2); r.code != ExitOK || !strings.Contains(r.out, "INPUT (1)") {
		t.Errorf("kustomization only warns: exit %d\n%s", r.code, r.out)
	}
	if r := runCLI(t, "", "lint", dir2, "--fail-on", "warning"); r.code != ExitProblem {
		t.Errorf("--fail-on warning: exit %d", r.code)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Input without a single Kubernetes object is exit 3, not a clean pass: a
// failed helm template piped into lint must not go green.
func TestLintNoObjects(t *testing.T) {
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"separator only", "---\n", []string{"-"}, "no Kubernetes object in the input (-): it is empty"},
		{"nothing", "", []string{"-"}, "it is empty"},
		{"comments", "# Source: x\n---\n...\n", []string{"-"}, "it is empty"},
		{"broken only", "apiVersion: v1\nkind: Pod\nmetadata: [\n", []string{"-"}, "<stdin>:3: error: cannot read"},
		{"kustomization only", "", []string{"KUST"}, "kustomize build"},
		{"empty List", "apiVersion: v1\nkind: List\nitems: []\n", []string{"-"}, "it is empty"},
	}
	kdir := writeTree(t, map[string]string{"kustomization.yaml": "resources: [a.yaml]\n"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lint"}, c.args...)
			if c.args[0] == "KUST" {
				args = []string{"lint", kdir}
			}
			r := runCLI(t, c.stdin, args...)
			if r.code != ExitIncomplete || !strings.Contains(r.err, c.want) || r.out != "" {
				t.Fatalf("exit %d (want 3), stdout %q, stderr %q (want %q)", r.code, r.out, r.err, c.want)
			}
		})
	}
	// One object is enough.
	if r := runCLI(t, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n", "lint", "-"); r.code != ExitOK {
		t.Fatalf("one namespace: exit %d %s", r.code, r.err)
	}
}

// Output is the same bytes however the documents were decoded, and with
// two ClusterConfigurations the first in the input is used (the other is a
// warning), whatever the file names' order.
func TestLintDeterministic(t *testing.T) {
	var inst strings.Builder
	for i := range 40 {
		fmt.Fprintf(&inst, `---
apiVersion: operator.tigera.io/v1
kind: Installation
metadata: {name: inst-%02d}
spec:
  serviceCIDRs: [10.96.0.0/12]
  calicoNetwork:
    windowsDataplane: HNS
    ipPools: [{name: p, cidr: 172.21.0.0/16, blockSize: 26, encapsulation: VXLAN, natOutgoing: Enabled, nodeSelector: all()}]
`, (i*17)%40)
	}
	cc := func(subnet string) string {
		return "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nnetworking: {serviceSubnet: " + subnet + ", podSubnet: 172.21.0.0/16}\n"
	}
	dir := writeTree(t, map[string]string{
		"inst.yaml": inst.String(),
		"b.yaml":    cc("10.96.0.0/12"),
		"a.yaml":    cc("10.100.0.0/16"),
	})
	a, b, insts := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "inst.yaml")

	for _, format := range []string{"table", "json", "sarif", "junit"} {
		first := runCLI(t, "", "lint", insts, b, a, "-o", format)
		if first.code != ExitProblem {
			t.Fatalf("%s: exit %d %s", format, first.code, first.err)
		}
		for i := range 5 {
			if r := runCLI(t, "", "lint", insts, b, a, "-o", format); r.out != first.out {
				t.Fatalf("%s: run %d differs from the first:\n%s\n---\n%s", format, i+2, r.out, first.out)
			}
		}
	}

	// b.yaml comes first in the input: its serviceSubnet matches, so no
	// HC304, and a.yaml's configuration is the warning.
	r := runCLI(t, "", "lint", insts, b, a, "-o", "json")
	rep := decodeReport(t, r.out)
	hc := map[string]int{}
	for _, f := range rep.Findings {
		hc[f.Check]++
	}
	if hc["HC302"] != 40 || hc["HC304"] != 0 || len(rep.Diagnostics) != 1 || rep.Diagnostics[0].File != a ||
		!strings.Contains(rep.Diagnostics[0].Message, "the checks use the first one, at "+b+":1") {
		t.Fatalf("b first: findings %v, diagnostics %+v", hc, rep.Diagnostics)
	}
	// Findings are in order: HC302 for inst-00, inst-01, ...
	var names []string
	for _, f := range rep.Findings {
		if f.Check == "HC302" {
			names = append(names, f.Object.Name)
		}
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("findings out of order: %q", names)
		}
	}

	// a.yaml first: its 10.100.0.0/16 is used, every Installation
	// disagrees with it.
	r = runCLI(t, "", "lint", insts, a, b, "-o", "json")
	rep = decodeReport(t, r.out)
	hc = map[string]int{}
	for _, f := range rep.Findings {
		hc[f.Check]++
		if f.Check == "HC304" && !strings.Contains(f.Message, "10.100.0.0/16") {
			t.Errorf("HC304 message %q", f.Message)
		}
	}
	if hc["HC304"] != 40 || len(rep.Diagnostics) != 1 || rep.Diagnostics[0].File != b {
		t.Fatalf("a first: findings %v, diagnostics %+v", hc, rep.Diagnostics)
	}
}

// A tab in the indentation is named as a tab at its line and column, and a
// container field of the wrong type is named in words while the object's
// checks still run: the DaemonSet below gets HC101 beside the error.
func TestLintTabAndFieldType(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"tab.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n\tkey: value\n",
		"cns.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cns
  namespace: kube-system
spec:
  template:
    spec:
      tolerations:
      - operator: Exists
      containers:
      - name: cns-container
        image: example.com/cns:1.0
        command: /usr/bin/cns
`,
	})
	r := runCLI(t, "", "lint", dir, "-o", "json")
	var rep struct {
		Findings []struct {
			Check, Message string
			Object         struct{ Name string }
		}
		Diagnostics []struct {
			Severity, File, Message, Fix string
			Line                         int
		}
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, r.out)
	}
	if r.code != ExitProblem || len(rep.Diagnostics) != 2 {
		t.Fatalf("exit %d, diagnostics %+v, want 2", r.code, rep.Diagnostics)
	}
	cns, tab := rep.Diagnostics[0], rep.Diagnostics[1]
	if filepath.Base(cns.File) != "cns.yaml" || cns.Line != 1 || cns.Severity != "error" ||
		cns.Message != "DaemonSet kube-system/cns: containers[0] (cns-container): command must be a list of strings, not a string; the object's other fields were checked" ||
		!strings.Contains(cns.Fix, "command as a YAML list") {
		t.Errorf("type diagnostic = %+v", cns)
	}
	if filepath.Base(tab.File) != "tab.yaml" || tab.Line != 6 ||
		tab.Message != "cannot read this YAML document: a tab character at line 6, column 1: YAML indents with spaces only" ||
		tab.Fix != "replace the tab with spaces" {
		t.Errorf("tab diagnostic = %+v", tab)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Check != "HC101" || rep.Findings[0].Object.Name != "cns" {
		t.Errorf("findings = %+v, want HC101 on the DaemonSet read without its command", rep.Findings)
	}
}
