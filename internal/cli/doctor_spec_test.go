package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestDoctorSpecNodes: doctor -f compares the spec's nodes with the real
// API server's: the one node that never joined is an HC209 warning at its
// line of the spec; a node whose name only starts like it does not count
// as joined; once it joins the finding is gone. Without -f the check does
// not run, and asking for it alone is a usage error.
func TestDoctorSpecNodes(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kc, env.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(specFile, examples.Lab, 0o644); err != nil {
		t.Fatal(err)
	}
	winLine := 0
	for i, l := range strings.Split(string(examples.Lab), "\n") {
		if strings.Contains(l, "- name: k8s-lab-win-1") {
			winLine = i + 1
		}
	}
	cs, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	addNode := func(name string) {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"k8s-lab-master-1", "k8s-lab-node-1", "k8s-lab-node-2", "k8s-lab-win-10"} {
		addNode(n)
	}
	doctor := func(args ...string) cliRun {
		return runCLI(t, "", append([]string{"doctor", "--kubeconfig", kc, "--checks", "HC209", "-o", "json"}, args...)...)
	}

	r := doctor("-f", specFile)
	rep := decodeReport(t, r.out)
	if r.code != ExitOK || len(rep.Findings) != 1 {
		t.Fatalf("exit %d, findings %+v\n%s", r.code, rep.Findings, r.err)
	}
	f := rep.Findings[0]
	if f.Check != "HC209" || f.Name != "spec-node-not-joined" || f.Severity != "warning" || f.Object.Kind != "Node" || f.Object.Name != "k8s-lab-win-1" ||
		f.File != specFile || f.Line != winLine || !strings.Contains(f.Message, "node k8s-lab-win-1 (windows worker) is in "+specFile+" but not in the cluster") {
		t.Errorf("finding %+v (want line %d)", f, winLine)
	}
	if r := doctor("-f", specFile, "--fail-on", "warning"); r.code != ExitProblem {
		t.Errorf("--fail-on warning: exit %d", r.code)
	}
	if r := runCLI(t, "", "doctor", "--kubeconfig", kc, "-f", specFile, "--checks", "HC209"); r.code != ExitOK || !strings.Contains(r.out, "HC209 spec-node-not-joined  "+specFile+":"+strconv.Itoa(winLine)+" Node k8s-lab-win-1\n") {
		t.Errorf("table: exit %d\n%s\n%s", r.code, r.out, r.err)
	}

	// Without a spec the check has nothing to compare with.
	if r := doctor(); r.code != ExitUsage || !strings.Contains(r.err, "doctor -f cluster.yaml") {
		t.Errorf("--checks HC209 without -f: exit %d %s", r.code, r.err)
	}
	if r := runCLI(t, "", "doctor", "--kubeconfig", kc, "-o", "json"); r.code != ExitOK || strings.Contains(r.out, "HC209") {
		t.Errorf("without -f: exit %d\n%s", r.code, r.out)
	}
	// An invalid spec is exit 1, before the cluster is read.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(examples.Lab), "name: k8s-lab-win-1", "name: K8S_Win_1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := doctor("-f", bad); r.code != ExitProblem || !strings.Contains(r.err, "k8s-win-1") {
		t.Errorf("invalid spec: exit %d %s", r.code, r.err)
	}

	addNode("k8s-lab-win-1")
	r = doctor("-f", specFile, "--fail-on", "warning")
	if rep := decodeReport(t, r.out); r.code != ExitOK || len(rep.Findings) != 0 {
		t.Fatalf("every node joined: exit %d, findings %+v", r.code, rep.Findings)
	}
}

// TestCheckDidYouMean: a mistyped check ID or name, in every flag that
// takes one, is a usage error that names the closest check; one too far
// from any is named alone.
func TestCheckDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--checks", "HC1O1"}, `unknown check "HC1O1" (did you mean HC101?)`},
		{[]string{"doctor", "--skip", "windows-node-tiant"}, `unknown check "windows-node-tiant" (did you mean windows-node-taint?)`},
		{[]string{"doctor", "--explain", "daemonset-os-selectr"}, `unknown check "daemonset-os-selectr" (did you mean daemonset-os-selector?)`},
		{[]string{"lint", "-", "--checks", "HC2O1,HC301"}, `unknown check "HC2O1" (did you mean HC201?)`},
		{[]string{"lint", "-", "--explain", "HC1O1"}, `(did you mean HC101?)`},
		{[]string{"doctor", "--checks", "no-such-thing"}, `unknown check "no-such-thing" (--list-checks lists them`},
	} {
		r := runCLI(t, "", c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args, r.code, c.want, r.err)
		}
	}
}
