package checks

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// The engine's own logic (selection, suppression, order, counting words),
// tested here in the package: the fixtures run every check with the default
// Options and compare sorted findings, so none of this is reached by them.

func TestCountWords(t *testing.T) {
	for _, c := range []struct {
		n          int
		count, are string
	}{
		{0, "0 pods", "are 0 pods"},
		{1, "1 pod", "is 1 pod"},
		{2, "2 pods", "are 2 pods"},
		{11, "11 pods", "are 11 pods"},
	} {
		if got := count(c.n, "pod"); got != c.count {
			t.Errorf("count(%d) = %q, want %q", c.n, got, c.count)
		}
		if got := isAre(c.n, "pod"); got != c.are {
			t.Errorf("isAre(%d) = %q, want %q", c.n, got, c.are)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte("ignore:\n- {check: HC101, namespace: demo, reason: known}\n- {check: windows-node-taint, kind: Node, name: win-1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Ignore{{Check: "HC101", Namespace: "demo", Reason: "known"}, {Check: "windows-node-taint", Kind: "Node", Name: "win-1"}}
	if !reflect.DeepEqual(c.Ignore, want) {
		t.Errorf("ParseConfig = %+v, want %+v", c.Ignore, want)
	}
	if c, err := ParseConfig([]byte("ignore: []\n")); err != nil || len(c.Ignore) != 0 {
		t.Errorf("empty ignore list: %+v, %v", c, err)
	}
	for in, wantErr := range map[string]string{
		"ignore:\n- {check: HC101}\n- {check: \" \", namespace: demo}\n": "ignore[1]: check is required",
		"ignore:\n- {namespace: demo}\n":                                 "ignore[0]: check is required",
		"ignore:\n- {check: HC101, namesapce: demo}\n":                   "namesapce",
		"ignores: []\n": "ignores",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseConfig(%q) = %v, want an error containing %q", in, err, wantErr)
		}
	}
}

// TestParseConfigAliases: a config file's aliases are measured before
// they are expanded; both sides of the per-document limit.
func TestParseConfigAliases(t *testing.T) {
	reason := func(grow int) string {
		return "ignore:\n- {check: HC101, reason: &r " + strings.Repeat("y", grow-3) + "}\n- {check: HC102, reason: *r}\n"
	}
	c, err := ParseConfig([]byte(reason(manifest.MaxAliasExpansionPerDocument)))
	if err != nil || len(c.Ignore) != 2 || len(c.Ignore[1].Reason) != manifest.MaxAliasExpansionPerDocument-3 {
		t.Fatalf("at the limit: %v", err)
	}
	_, err = ParseConfig([]byte(reason(manifest.MaxAliasExpansionPerDocument + 1)))
	if err == nil || err.Error() != "document 1, line 3: aliases expand this document by more than 1 MiB, the most one document may grow through aliases" {
		t.Fatalf("past the limit: %v", err)
	}
}

func TestResolveAndLookup(t *testing.T) {
	docs, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(docs, []string{"HC101", " hc202 ", "", "windows-node-taint", "  "})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"HC101": true, "HC202": true, "HC201": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve = %v, want %v", got, want)
	}
	if got, err := Resolve(docs, nil); err != nil || len(got) != 0 {
		t.Errorf("Resolve(nil) = %v, %v; want an empty set", got, err)
	}
	// Names are exact (kebab-case); IDs are not case-sensitive.
	_, err = Resolve(docs, []string{"HC101", "HC999", "Windows-Node-Taint", "HC20"})
	if err == nil || !strings.HasPrefix(err.Error(), `unknown check "HC999" (did you mean HC109?); unknown check "Windows-Node-Taint" (did you mean windows-node-taint?); unknown check "HC20" (did you mean HC201?) (--list-checks`) {
		t.Errorf("Resolve of unknown checks: %v", err)
	}
	// A typo of a name and of an ID, at the edge of what is suggested (2
	// edits), and one past it.
	for ref, want := range map[string]string{
		"windows-node-tiant":   `unknown check "windows-node-tiant" (did you mean windows-node-taint?)`,
		"HC1O1":                `unknown check "HC1O1" (did you mean HC101?)`,
		"daemonset-os-selectr": `unknown check "daemonset-os-selectr" (did you mean daemonset-os-selector?)`,
		"daemonset-selector":   `unknown check "daemonset-selector"`,
	} {
		if got := Unknown(docs, ref); got != want {
			t.Errorf("Unknown(%q) = %q, want %q", ref, got, want)
		}
	}

	for _, ref := range []string{"HC201", "hc201", "windows-node-taint"} {
		if d, ok := Lookup(docs, ref); !ok || d.ID != "HC201" || d.Name != "windows-node-taint" {
			t.Errorf("Lookup(%q) = %+v, %v", ref, d, ok)
		}
	}
	for _, ref := range []string{"HC2011", "WINDOWS-NODE-TAINT", ""} {
		if d, ok := Lookup(docs, ref); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", ref, d)
		}
	}
}

func ids(cs []Check, ds []Doc) string {
	var out []string
	for i, c := range cs {
		if ds[i].ID != c.ID {
			return "check " + c.ID + " with doc " + ds[i].ID
		}
		out = append(out, c.ID)
	}
	return strings.Join(out, " ")
}

func TestSelected(t *testing.T) {
	all, _, err := Selected(Options{Spec: &Spec{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(All()) {
		t.Errorf("Selected(no options) = %d checks, want all %d", len(all), len(All()))
	}
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"only", Options{Only: []string{"HC202", "windows-node-taint"}}, "HC201 HC202"},
		{"only and skip", Options{Only: []string{"HC201", "HC202"}, Skip: []string{"hc201"}}, "HC202"},
		{"only skipped", Options{Only: []string{"HC201"}, Skip: []string{"HC201"}}, ""},
		{"only empty strings", Options{Only: []string{"", " "}, Skip: []string{"HC101"}, Spec: &Spec{}}, ""},
		{"a spec check without a spec", Options{Only: []string{"HC201"}, Skip: []string{"HC101"}}, "HC201"},
		{"a spec check with a spec", Options{Only: []string{"HC201", "spec-node-not-joined"}, Spec: &Spec{}}, "HC201 HC209"},
		{"ignores do not select", Options{Only: []string{"HC402"}, Ignores: []Ignore{{Check: "HC101"}}}, "HC402"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, ds, err := Selected(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(cs, ds)
			if c.name == "only empty strings" {
				// No Only left: every check but the skipped one.
				if len(cs) != len(All())-1 || strings.Contains(got, "HC101") || !strings.HasPrefix(got, "HC102 ") {
					t.Errorf("got %q", got)
				}
				return
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	// Without a spec, the checks that compare with one do not run, and
	// asking for one alone is an error that says how to give it.
	all, _, err = Selected(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.NeedsSpec {
			t.Errorf("%s runs without a spec", c.ID)
		}
	}
	if _, _, err := Selected(Options{Only: []string{"HC209"}}); err == nil || !strings.Contains(err.Error(), "doctor -f cluster.yaml") {
		t.Errorf("HC209 alone without a spec: %v", err)
	}
	skipped, _, err := Selected(Options{Skip: []string{"HC101", "kube-proxy-windows"}, Spec: &Spec{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != len(All())-2 {
		t.Errorf("Skip of 2: %d checks, want %d", len(skipped), len(All())-2)
	}
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Only: []string{"HC999"}}, `unknown check "HC999"`},
		{Options{Skip: []string{"nope"}}, `unknown check "nope"`},
		{Options{Ignores: []Ignore{{Check: "HC101"}, {Check: "HC998"}}}, `config: unknown check "HC998"`},
	} {
		if _, _, err := Selected(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Selected(%+v) = %v, want %q", c.opts, err, c.want)
		}
	}
}

func TestNeeds(t *testing.T) {
	cs := []Check{
		{Needs: []snapshot.Kind{snapshot.KindNode, snapshot.KindPod}, Uses: []snapshot.Kind{snapshot.KindPod, snapshot.KindCSR}},
		{Needs: []snapshot.Kind{snapshot.KindCSR}, Uses: []snapshot.Kind{snapshot.KindService, snapshot.KindNode}},
		{},
	}
	want := []snapshot.Kind{snapshot.KindNode, snapshot.KindPod, snapshot.KindCSR, snapshot.KindService}
	if got := Needs(cs); !reflect.DeepEqual(got, want) {
		t.Errorf("Needs = %v, want %v", got, want)
	}
	// Needs must not write into the checks' slices.
	if !reflect.DeepEqual(cs[0].Needs, []snapshot.Kind{snapshot.KindNode, snapshot.KindPod}) {
		t.Errorf("Needs changed a check: %v", cs[0].Needs)
	}
}

func loadString(t *testing.T, y string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.LoadFiles(context.Background(), []string{snapshot.Stdin}, strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// engineInput: a Windows node tainted os=windows:NoExecute (HC201), one
// Windows-only Deployment without tolerations in demo and one in other
// (HC112), the second annotated to ignore HC112.
const engineInput = `
apiVersion: v1
kind: Node
metadata: {name: win-1, labels: {kubernetes.io/os: windows, kubernetes.io/arch: amd64, node.kubernetes.io/windows-build: "10.0.26100"}}
spec: {taints: [{key: os, value: windows, effect: NoExecute}]}
status: {nodeInfo: {kubeletVersion: v1.37.2}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows}
      containers: [{name: web, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2025"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: other, annotations: {hybridctl.dev/ignore: "HC999, windows-taint-not-tolerated"}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows}
      containers: [{name: web, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2025"}]
`

func lines(res *Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, f.Check+" "+f.Object.Kind+" "+f.Object.Namespace+"/"+f.Object.Name)
	}
	return out
}

func TestRunSuppressAndSkip(t *testing.T) {
	only := []string{"HC112", "HC201"}
	res, err := Run(loadString(t, engineInput), Options{Only: only})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}; !reflect.DeepEqual(lines(res), want) {
		t.Fatalf("findings %q, want %q", lines(res), want)
	}
	if res.Suppressed != 1 || len(res.Skipped) != 0 || len(res.Ran) != 2 {
		t.Errorf("suppressed %d, skipped %v, ran %d; want 1, none, 2", res.Suppressed, res.Skipped, len(res.Ran))
	}
	for _, f := range res.Findings {
		if f.annotations != nil {
			t.Errorf("%s keeps its object's annotations", f.Check)
		}
	}
	// The catalogue's name and severity; HC112's fix is its own, for the
	// node's taint (NoExecute here) and the build the node has.
	docs, _ := Catalogue()
	d112, _ := Lookup(docs, "HC112")
	if f := res.Findings[0]; f.Name != "windows-taint-not-tolerated" || f.Severity != d112.Severity ||
		f.Fix != "tolerate the taint exactly ({key: os, operator: Equal, value: windows, effect: NoExecute}), or use runtimeClassName: windows-2025, whose scheduling adds it" {
		t.Errorf("HC112 finding %+v: want the catalogue's name and severity and a fix for the node's taint", f)
	}
	if f := res.Findings[1]; !strings.HasPrefix(f.Fix, "kubectl taint node win-1 os=windows:NoExecute- && ") {
		t.Errorf("HC201 fix %q is not the check's own", f.Fix)
	}

	// The config file: by ID or name, narrowed by namespace, kind and name.
	for _, c := range []struct {
		ig   Ignore
		want []string
		n    int
	}{
		{Ignore{Check: " hc201 "}, []string{"HC112 Deployment demo/web"}, 2},
		{Ignore{Check: "windows-node-taint", Kind: "node", Name: "win-1"}, []string{"HC112 Deployment demo/web"}, 2},
		{Ignore{Check: "HC201", Name: "win-2"}, []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}, 1},
		{Ignore{Check: "HC201", Kind: "Pod"}, []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}, 1},
		{Ignore{Check: "HC201", Namespace: "demo"}, []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}, 1},
		{Ignore{Check: "HC112", Namespace: "demo", Kind: "Deployment", Name: "web"}, []string{"HC201 Node /win-1"}, 2},
		{Ignore{Check: "HC112", Namespace: "demo", Kind: "Deployment", Name: "api"}, []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}, 1},
		{Ignore{Check: "HC112", Namespace: "other", Kind: "Deployment", Name: "web"}, []string{"HC112 Deployment demo/web", "HC201 Node /win-1"}, 1},
	} {
		res, err := Run(loadString(t, engineInput), Options{Only: only, Ignores: []Ignore{{Check: "HC101"}, c.ig}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(lines(res), c.want) || res.Suppressed != c.n {
			t.Errorf("ignore %+v: findings %q, %d suppressed; want %q, %d", c.ig, lines(res), res.Suppressed, c.want, c.n)
		}
	}

	// A check whose needed kinds could not be read is skipped with every
	// reason; one that only uses them still runs.
	s := loadString(t, engineInput)
	s.Unavailable[snapshot.KindNode] = "nodes: forbidden"
	s.Unavailable[snapshot.KindCSR] = "csrs: forbidden"
	s.Diagnostics = append(s.Diagnostics, snapshot.Diagnostic{Severity: "error", File: "x.yaml", Line: 3, Message: "not an object"})
	res, err = Run(s, Options{Only: []string{"HC201", "HC204", "HC112", "HC206"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"HC112 Deployment demo/web"}; !reflect.DeepEqual(lines(res), want) {
		t.Errorf("with nodes unavailable: findings %q, want %q", lines(res), want)
	}
	wantSkipped := []Skipped{{Check: "HC201", Name: "windows-node-taint", Reason: "nodes: forbidden"},
		{Check: "HC204", Name: "kubelet-serving-csr-pending", Reason: "csrs: forbidden"},
		{Check: "HC206", Name: "linux-workers-for-windows", Reason: "nodes: forbidden"}}
	if !reflect.DeepEqual(res.Skipped, wantSkipped) {
		t.Errorf("skipped %+v, want %+v", res.Skipped, wantSkipped)
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Message != "not an object" {
		t.Errorf("diagnostics %+v", res.Diagnostics)
	}
	if got := unavailable(s, []snapshot.Kind{snapshot.KindPod, snapshot.KindNode, snapshot.KindCSR}); got != "nodes: forbidden; csrs: forbidden" {
		t.Errorf("unavailable = %q", got)
	}
	if got := unavailable(s, []snapshot.Kind{snapshot.KindPod}); got != "" {
		t.Errorf("unavailable(pods) = %q", got)
	}
}

// TestRunWindowsTaintsFrom: without a Windows node, the Options' taints
// replace the guide's assumed one, and the findings say where they come from.
func TestRunWindowsTaintsFrom(t *testing.T) {
	input := strings.SplitN(engineInput, "---", 2)[1]
	msg := func(opts Options) []string {
		opts.Only = []string{"HC112"}
		res, err := Run(loadString(t, input), opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range res.Findings {
			out = append(out, f.Object.Namespace+": "+f.Message)
		}
		return out
	}
	got := msg(Options{})
	if len(got) != 1 || !strings.HasPrefix(got[0], "demo: ") || !strings.Contains(got[0], "os=windows:NoSchedule (assumed: the guide's taint") {
		t.Errorf("no taints given: %q", got)
	}
	got = msg(Options{WindowsTaints: []snapshot.Taint{{Key: "dedicated", Value: "win", Effect: "NoExecute"}}, WindowsTaintsFrom: "cluster.yaml"})
	if len(got) != 1 || !strings.Contains(got[0], "dedicated=win:NoExecute (from cluster.yaml)") {
		t.Errorf("taints from cluster.yaml: %q", got)
	}
	// The spec's Windows nodes have no taint: nothing to tolerate.
	if got := msg(Options{WindowsTaintsFrom: "cluster.yaml"}); len(got) != 0 {
		t.Errorf("no taints from cluster.yaml: %q", got)
	}
	// Taints without a source are not used.
	got = msg(Options{WindowsTaints: []snapshot.Taint{{Key: "dedicated", Value: "win", Effect: "NoExecute"}}})
	if len(got) != 1 || !strings.Contains(got[0], "assumed") {
		t.Errorf("taints without WindowsTaintsFrom: %q", got)
	}
}

func TestSuppressedAnnotation(t *testing.T) {
	f := Finding{Check: "HC112", Name: "windows-taint-not-tolerated", Object: snapshot.Ref{Kind: "Deployment", Namespace: "demo", Name: "web"}}
	for ann, want := range map[string]bool{
		"HC112":                        true,
		"hc112":                        true,
		"HC101, HC112":                 true,
		" windows-taint-not-tolerated": true,
		"HC101,windows-taint-not-tolerated,HC201": true,
		"HC11":                        false,
		"HC101":                       false,
		"Windows-Taint-Not-Tolerated": false,
		"":                            false,
		"HC101 HC112":                 false,
	} {
		f.annotations = map[string]string{snapshot.IgnoreAnnotation: ann}
		if got := suppressed(f, nil); got != want {
			t.Errorf("annotation %q: suppressed = %v, want %v", ann, got, want)
		}
	}
	f.annotations = map[string]string{"other": "HC112"}
	if suppressed(f, nil) || suppressed(f, []Ignore{{Check: "HC101"}}) {
		t.Errorf("suppressed without an ignore of HC112")
	}
	if !suppressed(f, []Ignore{{Check: "HC101"}, {Check: "HC112", Namespace: "demo"}}) {
		t.Errorf("not suppressed by the second ignore")
	}
}

// TestSortFindings: severity first (most severe first), then check,
// namespace, name, kind, apiVersion, file, line, message and fix, each
// compared only when the ones before are equal; findings equal in all of
// them keep their order.
func TestSortFindings(t *testing.T) {
	base := Finding{Check: "HC201", Severity: finding.Warning, Object: snapshot.Ref{APIVersion: "v1", Kind: "Node", Namespace: "b", Name: "n"},
		Message: "m", Fix: "f", Source: snapshot.Source{File: "b.yaml", Line: 5}}
	type edit func(*Finding)
	for _, c := range []struct {
		name          string
		first, second edit
	}{
		{"severity", func(f *Finding) { f.Severity = finding.Error }, func(f *Finding) { f.Severity = finding.Warning; f.Check = "HC101" }},
		{"severity info", func(f *Finding) { f.Severity = finding.Warning; f.Check = "HC999" }, func(f *Finding) { f.Severity = finding.Info; f.Check = "HC101" }},
		{"check", func(f *Finding) { f.Check = "HC112"; f.Object.Namespace = "z" }, func(f *Finding) { f.Check = "HC201" }},
		{"namespace", func(f *Finding) { f.Object.Namespace = "a"; f.Object.Name = "z" }, func(f *Finding) {}},
		{"name", func(f *Finding) { f.Object.Name = "a"; f.Object.Kind = "Pod" }, func(f *Finding) {}},
		{"kind", func(f *Finding) { f.Object.Kind = "DaemonSet"; f.Object.APIVersion = "z/v1" }, func(f *Finding) {}},
		{"apiVersion", func(f *Finding) { f.Object.APIVersion = "apps/v1"; f.Source.File = "z.yaml" }, func(f *Finding) {}},
		{"file", func(f *Finding) { f.Source.File = "a.yaml"; f.Source.Line = 9 }, func(f *Finding) {}},
		{"line", func(f *Finding) { f.Source.Line = 4; f.Message = "z" }, func(f *Finding) {}},
		{"line 9 before 10", func(f *Finding) { f.Source.Line = 9 }, func(f *Finding) { f.Source.Line = 10 }},
		{"message", func(f *Finding) { f.Message = "a"; f.Fix = "z" }, func(f *Finding) {}},
		{"fix", func(f *Finding) { f.Fix = "a" }, func(f *Finding) {}},
	} {
		a, b := base, base
		c.first(&a)
		c.second(&b)
		for _, in := range [][]Finding{{a, b}, {b, a}} {
			fs := append([]Finding(nil), in...)
			sortFindings(fs)
			if !reflect.DeepEqual(fs, []Finding{a, b}) {
				t.Errorf("%s: sorted to %+v, want %+v first", c.name, fs, a)
			}
		}
	}
	// Equal in every key: the input order stays (the Helm template is not a key).
	var fs []Finding
	for _, tpl := range []string{"c", "a", "d", "b"} {
		f := base
		f.Source.Template = tpl
		fs = append(fs, f)
	}
	sortFindings(fs)
	var order []string
	for _, f := range fs {
		order = append(order, f.Source.Template)
	}
	if strings.Join(order, "") != "cadb" {
		t.Errorf("equal findings reordered: %q", order)
	}
}

// pinnedInput: with no Windows node in the input, a Deployment pinned to
// Windows Server 2022 and one with an ltsc2025 image, neither tolerating
// the Windows taint.
const pinnedInput = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: iis-2022, namespace: demo}
spec:
  template:
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows, node.kubernetes.io/windows-build: "10.0.20348"}
      containers: [{name: iis, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: iis-2025, namespace: demo}
spec:
  template:
    spec:
      os: {name: windows}
      nodeSelector: {kubernetes.io/os: windows}
      containers: [{name: iis, image: "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2025"}]
`

// TestRunWindowsBuildsFrom: the plan's builds (lint --spec) decide HC114,
// and HC112's fix names a RuntimeClass only when it agrees with the pin:
// never windows-2022 for a pod pinned to a build the plan does not have.
func TestRunWindowsBuildsFrom(t *testing.T) {
	run := func(opts Options) map[string]Finding {
		opts.Only = []string{"HC112", "HC114"}
		res, err := Run(loadString(t, pinnedInput), opts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Finding{}
		for _, f := range res.Findings {
			out[f.Check+" "+f.Object.Name] = f
		}
		return out
	}
	spec := Options{WindowsBuilds: []string{"10.0.26100"}, WindowsBuildsFrom: "cluster.yaml",
		WindowsTaints: []snapshot.Taint{WindowsTaint}, WindowsTaintsFrom: "cluster.yaml"}
	got := run(spec)
	if len(got) != 3 {
		t.Fatalf("findings %v, want HC114 and HC112 on iis-2022, HC112 on iis-2025", got)
	}
	if f := got["HC114 iis-2022"]; !strings.Contains(f.Message, "and cluster.yaml plans 10.0.26100: its pods stay Pending") ||
		!strings.Contains(f.Fix, "runtimeClassName: windows-2025") || !strings.Contains(f.Fix, "tag ltsc2025") {
		t.Errorf("HC114 = %+v", f)
	}
	if f := got["HC112 iis-2022"]; strings.Contains(f.Fix, "runtimeClassName") ||
		f.Fix != "tolerate the taint exactly ({key: os, operator: Equal, value: windows, effect: NoSchedule})" {
		t.Errorf("HC112 fix on the pod pinned to a build the plan lacks = %q", f.Fix)
	}
	if f := got["HC112 iis-2025"]; !strings.HasSuffix(f.Fix, ", or use runtimeClassName: windows-2025, whose scheduling adds it") {
		t.Errorf("HC112 fix = %q", f.Fix)
	}

	// A plan of Windows Server 2022 nodes: the pin is met, and the fix
	// names the pinned build's RuntimeClass.
	spec.WindowsBuilds = []string{"10.0.20348"}
	got = run(spec)
	if _, ok := got["HC114 iis-2022"]; ok {
		t.Errorf("HC114 on a pin the plan has: %v", got)
	}
	if f := got["HC112 iis-2022"]; !strings.Contains(f.Fix, "runtimeClassName: windows-2022, whose scheduling adds it and selects the build its nodeSelector node.kubernetes.io/windows-build=10.0.20348 pins") {
		t.Errorf("HC112 fix = %q", f.Fix)
	}

	// Without a plan the builds are the releases hybridctl knows: 2022 is
	// one of them (no HC114), and the fix follows the pin.
	got = run(Options{})
	if _, ok := got["HC114 iis-2022"]; ok || !strings.Contains(got["HC112 iis-2022"].Fix, "windows-2022") {
		t.Errorf("without a plan: %v", got)
	}
}

// TestRunNotes: the assumed taint is named in a few words in each finding
// and said in full once per run, in Result.Notes; not at all when the
// taints are known.
func TestRunNotes(t *testing.T) {
	res, err := Run(loadString(t, pinnedInput), Options{Only: []string{"HC112"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 2 {
		t.Fatalf("findings %+v", res.Findings)
	}
	for _, f := range res.Findings {
		if !strings.Contains(f.Message, "(assumed: the guide's taint)") || strings.Contains(f.Message, "--spec") {
			t.Errorf("message = %q", f.Message)
		}
	}
	if len(res.Notes) != 1 || res.Notes[0] != assumedTaintNote || !strings.Contains(res.Notes[0], "pass --spec cluster.yaml") {
		t.Errorf("notes = %q, want the assumption once", res.Notes)
	}
	res, err = Run(loadString(t, pinnedInput), Options{Only: []string{"HC112"}, WindowsTaints: []snapshot.Taint{WindowsTaint}, WindowsTaintsFrom: "cluster.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 2 || len(res.Notes) != 0 {
		t.Errorf("with the spec's taints: notes %q", res.Notes)
	}
	// A suppressed finding leaves no note.
	res, err = Run(loadString(t, pinnedInput), Options{Only: []string{"HC112"}, Ignores: []Ignore{{Check: "HC112"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 0 || len(res.Notes) != 0 {
		t.Errorf("all suppressed: findings %d, notes %q", len(res.Findings), res.Notes)
	}
}
