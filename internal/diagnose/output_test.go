package diagnose

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
)

// TestWriteJUnit: a suite per node, a case per selected check on it
// (passing, failed per finding with its evidence and fix, skipped), a node
// not reached as one failed case; secrets redacted and escape sequences
// escaped in every text; the counts add up.
func TestWriteJUnit(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	r := &Result{
		Nodes: []NodeResult{
			{Name: "k8s-lab-node-1", Facts: &hostfacts.Node{Node: "k8s-lab-node-1"}},
			{Name: "k8s-lab-win-1", Error: "connecting to k8s-lab-win-1: refused \x1b[2K"},
		},
		Checks: []string{"HC501", "HC505", "HC508"},
		Ran:    3,
		Findings: []Finding{{Check: "HC505", Name: "clock-skew", Severity: finding.Warning, Node: "k8s-lab-node-1",
			Message: "the clock is 2m off", Fix: "chronyc sources", Evidence: []string{"date: 12:00", "kubeadm join --token " + token}}},
		Skipped: []Skipped{{Check: "HC508", Name: "overlay-cross-check", Node: "k8s-lab-node-1", Reason: "the API could not be read"}},
	}
	var b strings.Builder
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, token) || strings.Contains(out, "\x1b") {
		t.Errorf("a secret or an escape sequence reached the output:\n%s", out)
	}
	var doc struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Name != "hybridctl node diagnose" || doc.Tests != 4 || doc.Failures != 2 || doc.Skipped != 1 || len(doc.Suites) != 2 {
		t.Fatalf("counts: %+v\n%s", doc, out)
	}
	node := doc.Suites[0]
	if node.Name != "k8s-lab-node-1" || node.Tests != 3 {
		t.Fatalf("suite %+v", node)
	}
	pass, fail, skip := node.Cases[0], node.Cases[1], node.Cases[2]
	if pass.Classname != "HC501 node-services" || pass.Failure != nil || pass.Skipped != nil || !strings.HasPrefix(pass.Name, "kubelet and containerd are running") {
		t.Errorf("passing case %+v", pass)
	}
	if fail.Classname != "HC505 clock-skew" || fail.Name != "Node k8s-lab-node-1" || fail.Failure == nil || fail.Failure.Type != "warning" ||
		fail.Failure.Message != "the clock is 2m off" || !strings.HasPrefix(fail.Failure.Text, "date: 12:00\nkubeadm join --token ") || !strings.HasSuffix(fail.Failure.Text, "\nfix: chronyc sources") {
		t.Errorf("failed case %+v %+v", fail, fail.Failure)
	}
	if skip.Classname != "HC508 overlay-cross-check" || skip.Skipped == nil || skip.Skipped.Message != "the API could not be read" {
		t.Errorf("skipped case %+v", skip)
	}
	win := doc.Suites[1]
	if win.Name != "k8s-lab-win-1" || len(win.Cases) != 1 || win.Cases[0].Failure == nil || win.Cases[0].Failure.Message != `connecting to k8s-lab-win-1: refused \x1b[2K` {
		t.Errorf("unreached node %+v", win)
	}
}
