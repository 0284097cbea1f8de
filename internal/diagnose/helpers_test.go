package diagnose

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// labExpect is what the guide's lab spec gives the checks.
func labExpect() Expect {
	return Expect{API: hostfacts.API{Host: "k8s-lab-api.example.com", Port: 6443}, VNI: 4096, VXLANPort: 4789,
		PodCIDR: mustPrefix("172.21.0.0/16")}
}

// labNodes are the guide's four Nodes (testdata/clusters/lab/10-nodes.yaml).
func labNodes(t testing.TB) []corev1.Node {
	t.Helper()
	dir, err := testenv.LabDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.ReadFile(filepath.Join(dir, "10-nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Node
	for _, o := range objs {
		if o.GetKind() != "Node" {
			continue
		}
		var n corev1.Node
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if len(out) != 4 {
		t.Fatalf("want the lab's 4 Nodes, got %d", len(out))
	}
	return out
}

// labAffinities are the guide's blocks: each node's one /26.
func labAffinities() []affinity {
	return []affinity{
		{Name: "k8s-lab-master-1-172-21-70-192-26", Node: "k8s-lab-master-1", CIDR: "172.21.70.192/26", State: "confirmed"},
		{Name: "k8s-lab-node-1-172-21-211-0-26", Node: "k8s-lab-node-1", CIDR: "172.21.211.0/26", State: "confirmed"},
		{Name: "k8s-lab-node-2-172-21-172-0-26", Node: "k8s-lab-node-2", CIDR: "172.21.172.0/26", State: "confirmed"},
		{Name: "k8s-lab-win-1-172-21-41-0-26", Node: "k8s-lab-win-1", CIDR: "172.21.41.0/26", State: "confirmed"},
	}
}

func calicoLab(t testing.TB) *Cluster {
	return buildCluster(labNodes(t), labAffinities(), "blockaffinities.projectcalico.org")
}

// bracket sets the clock sample as if this machine's clock read local at
// both ends of a round trip of rtt.
func bracket(f *hostfacts.Node, local time.Time, rtt time.Duration) {
	f.Clock.Sampled = true
	f.Clock.Before = local.Add(-rtt / 2)
	f.Clock.After = local.Add(rtt / 2)
}

func parseLinuxT(t testing.TB, node, out string) *hostfacts.Node {
	t.Helper()
	f, err := hostfacts.ParseNodeLinux(node, []byte(out), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	bracket(f, f.Clock.Node, 100*time.Millisecond)
	return f
}

func parseWindowsT(t testing.TB, node, out string) *hostfacts.Node {
	t.Helper()
	f, err := hostfacts.ParseNodeWindows(node, []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	bracket(f, f.Clock.Node, 100*time.Millisecond)
	return f
}

// want is one expected finding: check, severity and substrings of the
// message or evidence.
type want struct {
	check string
	sev   finding.Severity
	has   []string
}

// expectExactly fails unless the findings are exactly the wanted ones (in
// any order).
func expectExactly(t *testing.T, fs []Finding, ws ...want) {
	t.Helper()
	used := make([]bool, len(fs))
	for _, w := range ws {
		found := false
		for i, f := range fs {
			if used[i] || f.Check != w.check || f.Severity != w.sev {
				continue
			}
			text := f.Message + "\n" + strings.Join(f.Evidence, "\n")
			ok := true
			for _, h := range w.has {
				ok = ok && strings.Contains(text, h)
			}
			if ok {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing finding %s %s with %q", w.check, w.sev, w.has)
		}
	}
	for i, f := range fs {
		if !used[i] {
			t.Errorf("unexpected finding %s %s on %s: %s\n  evidence: %q", f.Check, f.Severity, f.Node, f.Message, f.Evidence)
		}
	}
}

func mustPrefix(s string) netip.Prefix {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		panic(err)
	}
	return p
}
