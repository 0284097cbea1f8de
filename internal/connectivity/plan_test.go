package connectivity

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type nodeOpt func(*corev1.Node)

func node(name, os string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: os}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func taint(key, value string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func build(b string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[windowsBuildLabel] = b }
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

// windowsNode is the guide's Windows worker: the os=windows taint.
func windowsNode(name, b string, opts ...nodeOpt) corev1.Node {
	return node(name, OSWindows, append([]nodeOpt{build(b), taint("os", "windows", corev1.TaintEffectNoSchedule)}, opts...)...)
}

// labNodes are the guide's lab: a tainted control plane, two Linux workers
// and one Windows Server 2025 worker, listed out of order.
func labNodes() []corev1.Node {
	return []corev1.Node{
		windowsNode("k8s-lab-win-1", "10.0.26100"),
		node("k8s-lab-node-2", OSLinux),
		node("k8s-lab-master-1", OSLinux, taint(controlPlaneTaint, "", corev1.TaintEffectNoSchedule)),
		node("k8s-lab-node-1", OSLinux),
	}
}

func mustPlan(t *testing.T, nodes []corev1.Node, opts Options) *Plan {
	t.Helper()
	if opts.LinuxImage == "" {
		opts.LinuxImage, opts.WindowsImage = "linux-img", "windows-img"
	}
	p, err := NewPlan(nodes, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rows renders actions as "test: from -> to" or "test: from -> to SKIP reason".
func rows(p *Plan, test string) []string {
	var out []string
	for _, a := range p.Actions {
		if a.Test != test {
			continue
		}
		r := a.From + " -> " + a.To
		if a.Skip != "" {
			r += " SKIP " + a.Skip
		}
		out = append(out, r)
	}
	return out
}

func probeNames(p *Plan) []string {
	var out []string
	for _, pr := range p.Probes {
		out = append(out, pr.Namespace+"/"+pr.Name+"@"+pr.Node)
	}
	return out
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestPlanLab(t *testing.T) {
	p := mustPlan(t, labNodes(), Options{})
	var groups []string
	for _, g := range p.Groups {
		groups = append(groups, fmt.Sprintf("%s %s %s %v %q", g.Name, g.OS, g.Build, g.Nodes, g.Missing))
	}
	eq(t, "groups", groups, []string{
		`linux linux  [k8s-lab-node-1 k8s-lab-node-2] ""`,
		`win-26100 windows 10.0.26100 [k8s-lab-win-1] ""`,
	})
	if len(p.Excluded) != 1 || p.Excluded[0].Node != "k8s-lab-master-1" || !strings.Contains(p.Excluded[0].Reason, "control plane") {
		t.Errorf("excluded = %+v, want the control plane", p.Excluded)
	}
	eq(t, "pod-to-pod-same-node", rows(p, "pod-to-pod-same-node"), []string{
		"linux-1 (k8s-lab-node-1) -> linux-1-peer (k8s-lab-node-1)",
		"win-26100-1 (k8s-lab-win-1) -> win-26100-1-peer (k8s-lab-win-1)",
	})
	eq(t, "pod-to-pod-across-nodes", rows(p, "pod-to-pod-across-nodes"), []string{
		"linux-1 (k8s-lab-node-1) -> linux-2 (k8s-lab-node-2)",
		"win-26100-1 (k8s-lab-win-1) -> a pod on another node SKIP only one schedulable node in group win-26100 (k8s-lab-win-1)",
	})
	eq(t, "linux-to-windows-pod", rows(p, "linux-to-windows-pod"), []string{"linux-1 (k8s-lab-node-1) -> win-26100-1 (k8s-lab-win-1)"})
	eq(t, "windows-to-linux-pod", rows(p, "windows-to-linux-pod"), []string{"win-26100-1 (k8s-lab-win-1) -> linux-1 (k8s-lab-node-1)"})
	eq(t, "pod-to-service", rows(p, "pod-to-service"), []string{
		"linux-1 (k8s-lab-node-1) -> service linux",
		"linux-1 (k8s-lab-node-1) -> service win-26100",
		"win-26100-1 (k8s-lab-win-1) -> service linux",
		"win-26100-1 (k8s-lab-win-1) -> service win-26100",
	})
	eq(t, "dns-fqdn", rows(p, "dns-fqdn"), []string{
		"linux-1 (k8s-lab-node-1) -> linux.hybridctl-connectivity.svc.cluster.local",
		"win-26100-1 (k8s-lab-win-1) -> linux.hybridctl-connectivity.svc.cluster.local",
	})
	eq(t, "dns-dotted-name", rows(p, "dns-dotted-name"), []string{
		"linux-1 (k8s-lab-node-1) -> linux.hybridctl-connectivity",
		"win-26100-1 (k8s-lab-win-1) -> linux.hybridctl-connectivity SKIP " + WindowsDottedNameLimit,
	})
	eq(t, "node-to-pod", rows(p, "node-to-pod"), []string{
		"node k8s-lab-node-1 -> linux-2 (k8s-lab-node-2)",
		"node k8s-lab-node-1 -> win-26100-1 (k8s-lab-win-1)",
		"node k8s-lab-win-1 -> pods SKIP not implemented: a Windows node needs a HostProcess probe",
	})
	eq(t, "pod-to-external", rows(p, "pod-to-external"), []string{
		"a Linux pod -> an external address SKIP off by default: --external-target HOST:PORT turns it on",
		"a Windows pod -> an external address SKIP off by default: --external-target HOST:PORT turns it on",
	})
	eq(t, "probes", probeNames(p), []string{
		"hybridctl-connectivity/linux-1@k8s-lab-node-1",
		"hybridctl-connectivity/linux-1-peer@k8s-lab-node-1",
		"hybridctl-connectivity/win-26100-1@k8s-lab-win-1",
		"hybridctl-connectivity/win-26100-1-peer@k8s-lab-win-1",
		"hybridctl-connectivity/linux-2@k8s-lab-node-2",
		"hybridctl-connectivity-host/node-linux-1@k8s-lab-node-1",
	})
	eq(t, "services", p.Services, []string{"linux", "win-26100"})
	win, _ := p.Probe("win-26100-1")
	if win.Image != "windows-img" || len(win.Tolerations) != 1 || win.Tolerations[0].Key != "os" || win.Tolerations[0].Value != "windows" {
		t.Errorf("Windows probe %+v: want windows-img and the os=windows toleration", win)
	}
	lin, _ := p.Probe("linux-1")
	if lin.Image != "linux-img" || len(lin.Tolerations) != 0 {
		t.Errorf("Linux probe %+v: want linux-img and no toleration", lin)
	}
	if !p.HasHostProbe() || len(p.Namespaces()) != 2 {
		t.Error("node-to-pod needs the host namespace")
	}
}

// The lab of hack/e2e.sh: Linux only. Every Windows action is skipped with
// the reason; the Linux ones all run.
func TestPlanLinuxOnly(t *testing.T) {
	nodes := labNodes()[1:]
	p := mustPlan(t, nodes, Options{})
	for _, a := range p.Actions {
		windows := strings.Contains(a.From+a.To, "Windows") || strings.Contains(a.From+a.To, "win")
		switch {
		case windows && a.Skip != "no Ready, schedulable Windows node" && a.Test != "dns-dotted-name":
			t.Errorf("%s %s -> %s: skip %q, want the missing Windows node", a.Test, a.From, a.To, a.Skip)
		case !windows && a.Skip != "" && a.Test != "pod-to-external":
			t.Errorf("%s %s -> %s skipped: %s", a.Test, a.From, a.To, a.Skip)
		}
	}
	if got := len(p.Groups); got != 2 || p.Groups[1].Name != OSWindows || p.Groups[1].Missing == "" {
		t.Errorf("groups %+v: want linux and the missing windows", p.Groups)
	}
}

func TestPlanExclusions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   []corev1.Node
		linux   []string
		missing string // the Windows group's reason
	}{
		{"windows not ready", []corev1.Node{node("a", OSLinux), windowsNode("w", "10.0.26100", notReady)},
			[]string{"a"}, "no Ready, schedulable Windows node (w: not Ready)"},
		{"windows cordoned", []corev1.Node{node("a", OSLinux), windowsNode("w", "10.0.26100", cordoned)},
			[]string{"a"}, "no Ready, schedulable Windows node (w: cordoned)"},
		{"windows NoExecute", []corev1.Node{node("a", OSLinux), windowsNode("w", "10.0.26100", taint("node.kubernetes.io/unreachable", "", corev1.TaintEffectNoExecute))},
			[]string{"a"}, "no Ready, schedulable Windows node (w: taint node.kubernetes.io/unreachable:NoExecute)"},
		// Untainted workers come first, a tainted worker only to fill up,
		// by name within each rank; the third is left out.
		{"preference", []corev1.Node{
			node("c", OSLinux), node("a", OSLinux, taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)), node("b", OSLinux),
		}, []string{"b", "c"}, "no Ready, schedulable Windows node"},
		{"tainted fills up", []corev1.Node{
			node("b", OSLinux), node("a", OSLinux, taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)),
		}, []string{"b", "a"}, "no Ready, schedulable Windows node"},
		// An untainted control plane is a node like any other.
		{"single untainted control plane", []corev1.Node{node("cp", OSLinux)}, []string{"cp"}, "no Ready, schedulable Windows node"},
		{"unknown OS", []corev1.Node{node("a", OSLinux), node("z", "plan9")}, []string{"a"}, "no Ready, schedulable Windows node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, tc.nodes, Options{})
			eq(t, "linux nodes", p.linux().Nodes, tc.linux)
			w := p.windows()
			if len(w) != 1 || w[0].Missing != tc.missing {
				t.Errorf("windows groups %+v, want missing %q", w, tc.missing)
			}
		})
	}
}

func TestPlanTolerations(t *testing.T) {
	p := mustPlan(t, []corev1.Node{
		node("a", OSLinux, taint("dedicated", "gpu", corev1.TaintEffectNoSchedule), taint("flag", "", corev1.TaintEffectPreferNoSchedule)),
	}, Options{})
	pr, _ := p.Probe("linux-1")
	got := fmt.Sprint(pr.Tolerations)
	want := "[{dedicated Equal gpu NoSchedule <nil>} {flag Exists  PreferNoSchedule <nil>}]"
	if got != want {
		t.Errorf("tolerations %s, want %s", got, want)
	}
}

func TestPlanWindowsBuilds(t *testing.T) {
	nodes := []corev1.Node{
		node("l1", OSLinux),
		windowsNode("w3", "10.0.26100"), windowsNode("w1", "10.0.17763"), windowsNode("w2", "10.0.26100"),
		node("w0", OSWindows), // no build label
	}
	p := mustPlan(t, nodes, Options{WindowsImages: map[string]string{"10.0.17763": "ltsc2019-img"}, LinuxImage: "l", WindowsImage: "w"})
	var groups []string
	for _, g := range p.Groups {
		groups = append(groups, g.Name+fmt.Sprint(g.Nodes))
	}
	eq(t, "groups", groups, []string{"linux[l1]", "win[w0]", "win-17763[w1]", "win-26100[w2 w3]"})
	eq(t, "windows across nodes", rows(p, "pod-to-pod-across-nodes")[3:], []string{"win-26100-1 (w2) -> win-26100-2 (w3)"})
	for name, img := range map[string]string{"win-17763-1": "ltsc2019-img", "win-26100-1": "w", "linux-1": "l"} {
		if pr, _ := p.Probe(name); pr.Image != img {
			t.Errorf("%s image %q, want %q", name, pr.Image, img)
		}
	}
	pods := p.Pods(Kits()[0])
	for _, pod := range pods {
		if pod.Name == "win-17763-1" && pod.Spec.NodeSelector[windowsBuildLabel] != "10.0.17763" {
			t.Errorf("%s node selector %v", pod.Name, pod.Spec.NodeSelector)
		}
		if pod.Name == "win-1" && len(pod.Spec.NodeSelector) != 1 {
			t.Errorf("%s (no build label) node selector %v", pod.Name, pod.Spec.NodeSelector)
		}
	}
}

func TestPlanSelection(t *testing.T) {
	tests, err := Select([]string{"DNS-FQDN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, labNodes(), Options{Tests: tests, Namespace: "ns", DNSDomain: "lab.example"})
	eq(t, "only dns-fqdn", rows(p, "dns-fqdn"), []string{
		"linux-1 (k8s-lab-node-1) -> linux.ns.svc.lab.example",
		"win-26100-1 (k8s-lab-win-1) -> linux.ns.svc.lab.example",
	})
	if len(p.Actions) != 2 {
		t.Errorf("%d actions, want only dns-fqdn's 2", len(p.Actions))
	}
	eq(t, "probes", probeNames(p), []string{"ns/linux-1@k8s-lab-node-1", "ns/win-26100-1@k8s-lab-win-1"})
	eq(t, "services", p.Services, []string{"linux"})
	if p.HasHostProbe() || len(p.Namespaces()) != 1 {
		t.Error("no node-to-pod, no host namespace")
	}
}

func TestPlanExternalTarget(t *testing.T) {
	tests, _ := Select([]string{"pod-to-external"}, nil)
	p := mustPlan(t, labNodes(), Options{Tests: tests, ExternalTarget: "192.168.10.1:443"})
	eq(t, "external", rows(p, "pod-to-external"), []string{
		"linux-1 (k8s-lab-node-1) -> 192.168.10.1:443",
		"win-26100-1 (k8s-lab-win-1) -> 192.168.10.1:443",
	})
	if a := p.Actions[0]; a.Target.Host != "192.168.10.1" || a.Target.Port != 443 {
		t.Errorf("target %+v", a.Target)
	}
	for _, bad := range []string{"192.168.10.1", "host:0", "host:65536", ":80", "host:http", "[::1"} {
		if _, err := NewPlan(labNodes(), Options{ExternalTarget: bad}); err == nil || !strings.Contains(err.Error(), "--external-target") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
	for _, good := range []string{"host:1", "host:65535", "[2001:db8::1]:443"} {
		if _, err := NewPlan(labNodes(), Options{ExternalTarget: good}); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

func TestSelect(t *testing.T) {
	all, err := Select(nil, nil)
	if err != nil || len(all) != len(Tests()) {
		t.Fatalf("all: %d, %v", len(all), err)
	}
	got, err := Select(nil, []string{"node-to-pod", " pod-to-external "})
	if err != nil || len(got) != len(Tests())-2 || slices.ContainsFunc(got, func(t Test) bool { return t.Name == "node-to-pod" }) {
		t.Errorf("skip: %d, %v", len(got), err)
	}
	got, _ = Select([]string{"dns-fqdn", "pod-to-pod-same-node"}, nil)
	if len(got) != 2 || got[0].Name != "pod-to-pod-same-node" {
		t.Errorf("only keeps the list's order: %v", got)
	}
	for _, tc := range []struct {
		only, skip []string
		flag, sugg string
	}{
		{[]string{"dns-fdqn"}, nil, "--tests", "dns-fqdn"},
		{nil, []string{"pod-to-servce"}, "--skip", "pod-to-service"},
		{[]string{"icmp"}, nil, "--tests", ""},
	} {
		_, err := Select(tc.only, tc.skip)
		var ue *UnknownTestError
		if !errors.As(err, &ue) || ue.Flag != tc.flag || ue.Suggestion != tc.sugg {
			t.Errorf("%v %v: %v", tc.only, tc.skip, err)
		}
	}
	if _, err := Select([]string{"dns-fqdn"}, []string{"dns-fqdn"}); err == nil {
		t.Error("nothing left must be an error")
	}
}

// Every Linux pod the plan makes passes Pod Security "restricted" by
// construction; the API server checks it for real in run_test.go. Here: the
// fields that differ by OS.
func TestPodsByOS(t *testing.T) {
	p := mustPlan(t, labNodes(), Options{})
	for _, kit := range Kits() {
		for _, pod := range p.Pods(kit) {
			sc := pod.Spec.SecurityContext
			switch pod.Spec.OS.Name {
			case OSWindows:
				if sc.SeccompProfile != nil || sc.RunAsUser != nil || pod.Spec.Containers[0].SecurityContext != nil {
					t.Errorf("%s: Linux-only fields on a Windows pod", pod.Name)
				}
			case OSLinux:
				if sc.SeccompProfile == nil || pod.Spec.Containers[0].SecurityContext == nil {
					t.Errorf("%s: not restricted", pod.Name)
				}
			}
			c := pod.Spec.Containers[0]
			if pod.Spec.HostNetwork != (c.ReadinessProbe == nil) || (pod.Spec.HostNetwork && len(c.Ports) > 0) {
				t.Errorf("%s: a hostNetwork probe must not listen, the others must", pod.Name)
			}
			if pod.Spec.HostNetwork && pod.Labels[LabelGroup] != "" {
				t.Errorf("%s: the host probe must not back a Service", pod.Name)
			}
			if pod.Spec.HostNetwork && !slices.Equal(c.Args, kit.Sleep) || !pod.Spec.HostNetwork && !slices.Equal(c.Args, kit.Serve) {
				t.Errorf("%s args %q", pod.Name, c.Args)
			}
		}
	}
}

// TestDocTable keeps docs/connectivity.md's table equal to Tests().
func TestDocTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/connectivity.md")
	if err != nil {
		t.Fatal(err)
	}
	table := DocTable()
	begin, end := "<!-- BEGIN connectivity tests: generated, do not edit -->\n", "<!-- END connectivity tests -->"
	if !strings.Contains(string(doc), begin+table+end) {
		t.Errorf("docs/connectivity.md's table of tests is stale; replace it with:\n\n%s", table)
	}
	for _, n := range Names() {
		if !strings.Contains(table, "| `"+n+"` |") {
			t.Errorf("table lacks %s", n)
		}
	}
}
