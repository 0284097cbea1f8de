package snapshot

import (
	"fmt"
	"strings"
	"testing"
)

// TestSlimPodsOrder: with SlimPods, an owned pod is dropped as it is
// decoded when its node is known and not Windows; one whose node comes
// later is kept until DropUnreadPods decides; pods a check reads wherever
// they run are kept.
func TestSlimPodsOrder(t *testing.T) {
	node := func(name, os string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"kubernetes.io/os":%q}}}`, name, os))
	}
	pod := func(name, node string, ready bool, app string) []byte {
		labels := ""
		if app != "" {
			labels = fmt.Sprintf(`,"labels":{"k8s-app":%q}`, app)
		}
		return []byte(fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns"%s,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","controller":true}]},`+
			`"spec":{"nodeName":%q},"status":{"phase":"Running","containerStatuses":[{"name":"c","ready":%t}]}}`, name, labels, node, ready))
	}
	s := New()
	s.SlimPods()
	add := func(k Kind, data []byte) {
		t.Helper()
		if err := s.AddKind(k, "v1", string(k), data, Source{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func() string {
		var out []string
		for _, p := range s.Pods {
			out = append(out, p.Name)
		}
		return strings.Join(out, " ")
	}
	add(KindPod, pod("early-linux", "linux", true, ""))
	add(KindPod, pod("early-windows", "windows", true, ""))
	add(KindNode, node("linux", "linux"))
	add(KindNode, node("windows", "windows"))
	add(KindPod, pod("late-linux", "linux", true, ""))
	add(KindPod, pod("late-windows", "windows", true, ""))
	add(KindPod, pod("late-linux-not-ready", "linux", false, ""))
	add(KindPod, pod("late-linux-app", "linux", true, "kube-dns"))
	add(KindPod, pod("nowhere", "gone", true, ""))
	if got, want := names(), "early-linux early-windows late-windows late-linux-not-ready late-linux-app nowhere"; got != want {
		t.Fatalf("while decoding, kept %q, want %q", got, want)
	}
	if s.PodsDropped != 1 {
		t.Fatalf("PodsDropped = %d while decoding, want 1", s.PodsDropped)
	}
	s.DropUnreadPods()
	if got, want := names(), "early-windows late-windows late-linux-not-ready late-linux-app"; got != want {
		t.Fatalf("after DropUnreadPods, kept %q, want %q", got, want)
	}
	if s.PodsDropped != 3 || s.Len() != 2+4+3+len(s.Owners) {
		t.Fatalf("PodsDropped = %d, Len = %d: want 3 dropped and every pod counted", s.PodsDropped, s.Len())
	}

	// Without SlimPods every pod stays.
	s = New()
	add(KindNode, node("linux", "linux"))
	add(KindPod, pod("p", "linux", true, ""))
	s.DropUnreadPods()
	if names() != "p" || s.PodsDropped != 0 {
		t.Fatalf("without SlimPods: kept %q, dropped %d", names(), s.PodsDropped)
	}
}

// TestLoadFilesSlimPods: lint's loader keeps only the owned pods a check
// reads, whether their node comes before or after them in the input, and
// counts the others; KeepAllPods keeps them all.
func TestLoadFilesSlimPods(t *testing.T) {
	pod := func(name, node string) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: ns, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, controller: true}]}\nspec: {nodeName: %s}\nstatus: {phase: Running, containerStatuses: [{name: c, ready: true}]}\n", name, node)
	}
	node := func(name, os string) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {kubernetes.io/os: %s}}\n", name, os)
	}
	in := pod("before-linux", "l") + pod("before-windows", "w") + node("l", "linux") + node("w", "windows") +
		pod("after-linux", "l") + pod("after-windows", "w") + pod("bare-pod-elsewhere", "x")
	in += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: bare, namespace: ns}\nspec: {nodeName: l}\n"
	slim := load(t, FileOptions{}, "pods.yaml", in)
	all := load(t, FileOptions{KeepAllPods: true}, "pods.yaml", in)
	names := func(s *Snapshot) string {
		var out []string
		for _, p := range s.Pods {
			out = append(out, p.Name)
		}
		return strings.Join(out, " ")
	}
	if got := names(slim); got != "after-windows before-windows" || slim.PodsDropped != 3 {
		t.Errorf("slim: kept %q, dropped %d", got, slim.PodsDropped)
	}
	if got := names(all); got != "after-linux after-windows bare-pod-elsewhere before-linux before-windows" || all.PodsDropped != 0 {
		t.Errorf("all: kept %q, dropped %d", got, all.PodsDropped)
	}
	if slim.Len() != all.Len() || len(slim.Workloads) != 1 {
		t.Errorf("Len %d and %d, %d workloads: every object counted, the bare pod a workload", slim.Len(), all.Len(), len(slim.Workloads))
	}
}
