package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// Unit tests of the scheduling helpers in index.go, case by case: the
// fixtures reach them only through whole checks, and gremlins reports the
// mutants in a tagless switch's case expressions as not covered (Go's
// cover profile has no block for them), so they were never measured.

// podsOn loads the Windows nodes (their labels as YAML flow mappings) and
// one bare Pod per spec, and returns the index and the pods' specs.
func podsOn(t *testing.T, nodeLabels []string, specs []string) (*Index, []*snapshot.PodSpec) {
	t.Helper()
	var b strings.Builder
	for i, l := range nodeLabels {
		fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: Node, metadata: {name: win-%d, labels: %s}}\n", i, l)
	}
	for i, s := range specs {
		fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: Pod, metadata: {name: p%03d, namespace: demo}, spec: %s}\n", i, s)
	}
	s := loadString(t, b.String())
	if len(s.Diagnostics) > 0 {
		t.Fatalf("input: %v", s.Diagnostics)
	}
	x := NewIndex(s)
	out := make([]*snapshot.PodSpec, len(specs))
	for _, w := range s.Workloads {
		var i int
		if _, err := fmt.Sscanf(w.Meta.Name, "p%03d", &i); err != nil {
			t.Fatal(err)
		}
		out[i] = &w.Template.Spec
	}
	return x, out
}

func TestPinsOS(t *testing.T) {
	const c = "containers: [{name: c, image: x}]"
	aff := func(terms string) string {
		return "{" + c + ", affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: " + terms + "}}}}"
	}
	sel := func(m string) string { return "{" + c + ", nodeSelector: " + m + "}" }
	expr := func(key, op, values string) string {
		return aff("[{matchExpressions: [{key: " + key + ", operator: " + op + ", values: " + values + "}]}]")
	}
	cases := []struct {
		spec              string
		only, excludesWin bool
	}{
		{"{" + c + "}", false, false},
		{sel("{kubernetes.io/os: windows}"), true, false},
		{sel("{kubernetes.io/os: linux}"), false, true},
		{sel("{beta.kubernetes.io/os: windows}"), true, false},
		{sel("{beta.kubernetes.io/os: linux}"), false, true},
		{sel("{node.kubernetes.io/windows-build: '10.0.26100'}"), true, false},
		{sel("{kubernetes.io/arch: arm64}"), false, true},
		{sel("{kubernetes.io/arch: amd64}"), false, false},
		{sel("{beta.kubernetes.io/arch: arm64}"), false, true},
		{sel("{example.com/os: linux}"), false, false},
		{expr("kubernetes.io/os", "In", "[windows]"), true, false},
		{expr("kubernetes.io/os", "In", "[linux]"), false, true},
		{expr("kubernetes.io/os", "In", "[windows, linux]"), false, false},
		{expr("kubernetes.io/os", "In", "[]"), false, false},
		{expr("kubernetes.io/os", "NotIn", "[windows]"), false, true},
		{expr("kubernetes.io/os", "NotIn", "[linux]"), true, false},
		{expr("kubernetes.io/os", "NotIn", "[darwin]"), false, false},
		{expr("kubernetes.io/os", "Exists", "[]"), false, false},
		{expr("beta.kubernetes.io/os", "NotIn", "[windows]"), false, true},
		{expr("example.com/os", "In", "[windows]"), false, false},
		{expr("node.kubernetes.io/windows-build", "In", "['10.0.26100']"), true, false},
		{expr("node.kubernetes.io/windows-build", "Exists", "[]"), true, false},
		{expr("node.kubernetes.io/windows-build", "NotIn", "['10.0.26100']"), false, false},
		{expr("node.kubernetes.io/windows-build", "DoesNotExist", "[]"), false, false},
		{expr("kubernetes.io/arch", "In", "[arm64]"), false, true},
		{expr("kubernetes.io/arch", "In", "[arm64, s390x]"), false, true},
		{expr("kubernetes.io/arch", "In", "[arm64, amd64]"), false, false},
		{expr("kubernetes.io/arch", "In", "[]"), false, false},
		{expr("kubernetes.io/arch", "NotIn", "[amd64]"), false, false},
		{expr("beta.kubernetes.io/arch", "In", "[arm64]"), false, true},
		// Every term must pin: two terms, one without the OS, pin nothing.
		{aff("[{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]}, {matchExpressions: [{key: zone, operator: In, values: [a]}]}]"), false, false},
		{aff("[{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}, {matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}]"), false, true},
		// One expression of a term is enough.
		{aff("[{matchExpressions: [{key: zone, operator: In, values: [a]}, {key: kubernetes.io/os, operator: In, values: [windows]}]}]"), true, false},
	}
	var specs []string
	for _, c := range cases {
		specs = append(specs, c.spec)
	}
	x, ps := podsOn(t, []string{"{kubernetes.io/os: windows, kubernetes.io/arch: amd64}"}, specs)
	for i, c := range cases {
		if got := x.OnlyWindows(ps[i]); got != c.only {
			t.Errorf("%s: OnlyWindows = %v", c.spec, got)
		}
		if got := x.ExcludesWindows(ps[i]); got != c.excludesWin {
			t.Errorf("%s: ExcludesWindows = %v", c.spec, got)
		}
	}
}

// TestWindowsArch: an architecture selector keeps a pod off Windows when no
// Windows node has that architecture; Windows nodes without an arch label
// count as amd64 (the only one Windows Server containers run on).
func TestWindowsArch(t *testing.T) {
	specs := []string{
		"{containers: [{name: c, image: x}], nodeSelector: {kubernetes.io/arch: amd64}}",
		"{containers: [{name: c, image: x}], nodeSelector: {kubernetes.io/arch: arm64}}",
	}
	for _, c := range []struct {
		nodes              []string
		amd64Off, arm64Off bool
		what               string
	}{
		{nil, false, true, "no Windows node"},
		{[]string{"{kubernetes.io/os: windows}"}, false, true, "Windows node without an arch label"},
		{[]string{"{kubernetes.io/os: windows, kubernetes.io/arch: arm64}"}, true, false, "arm64 Windows node"},
		{[]string{"{kubernetes.io/os: windows, beta.kubernetes.io/arch: arm64}"}, true, false, "arm64 by the beta label"},
		{[]string{"{kubernetes.io/os: windows}", "{kubernetes.io/os: windows, kubernetes.io/arch: arm64}"}, true, false, "one unlabelled, one arm64"},
		{[]string{"{kubernetes.io/os: windows, kubernetes.io/arch: amd64}", "{kubernetes.io/os: windows, kubernetes.io/arch: arm64}"}, false, false, "amd64 and arm64"},
	} {
		x, ps := podsOn(t, c.nodes, specs)
		if got := x.ExcludesWindows(ps[0]); got != c.amd64Off {
			t.Errorf("%s: an amd64 selector keeps the pod off Windows: %v, want %v", c.what, got, c.amd64Off)
		}
		if got := x.ExcludesWindows(ps[1]); got != c.arm64Off {
			t.Errorf("%s: an arm64 selector keeps the pod off Windows: %v, want %v", c.what, got, c.arm64Off)
		}
	}
}

// TestNearMiss: the closest toleration is the one with the fewest
// differences, the first of equals; an exact match, a toleration of
// another key and one with an empty key but no Exists say nothing.
func TestNearMiss(t *testing.T) {
	taint := snapshot.Taint{Key: "os", Value: "windows", Effect: "NoSchedule"}
	keyCase := snapshot.Toleration{Key: "OS", Operator: "Equal", Value: "windows", Effect: "NoSchedule"}
	keyOther := snapshot.Toleration{Key: "node.example.com/os", Value: "windows"}
	valueCase := snapshot.Toleration{Key: "os", Value: "Windows", Effect: "NoSchedule"}
	valueOther := snapshot.Toleration{Key: "os", Operator: "Equal", Value: "linux"}
	effect := snapshot.Toleration{Key: "os", Value: "windows", Effect: "NoExecute"}
	existsEffect := snapshot.Toleration{Operator: "Exists", Effect: "NoExecute"}
	const (
		keyCaseMsg   = `{key: OS, operator: Equal, value: windows, effect: NoSchedule}: key "OS" is not "os" (taints match case-sensitively)`
		keyOtherMsg  = `{key: node.example.com/os, operator: Equal, value: windows}: key "node.example.com/os" is another key than the taint's "os"`
		valueCaseMsg = `{key: os, operator: Equal, value: Windows, effect: NoSchedule}: value "Windows" is not "windows" (case-sensitive)`
		valueMsg     = `{key: os, operator: Equal, value: linux}: value "linux" is not the taint's "windows"`
		effectMsg    = `{key: os, operator: Equal, value: windows, effect: NoExecute}: effect NoExecute does not cover NoSchedule`
	)
	for _, c := range []struct {
		name string
		tols []snapshot.Toleration
		want string
	}{
		{"key case", []snapshot.Toleration{keyCase}, keyCaseMsg},
		{"key segment", []snapshot.Toleration{keyOther}, keyOtherMsg},
		{"key segment case", []snapshot.Toleration{{Key: "example.com/OS", Operator: "Equal", Value: "windows"}}, `{key: example.com/OS, operator: Equal, value: windows}: key "example.com/OS" is another key than the taint's "os"`},
		{"value case", []snapshot.Toleration{valueCase}, valueCaseMsg},
		{"value", []snapshot.Toleration{valueOther}, valueMsg},
		{"effect", []snapshot.Toleration{effect}, effectMsg},
		{"exists with an effect", []snapshot.Toleration{existsEffect}, `{operator: Exists, effect: NoExecute}: effect NoExecute does not cover NoSchedule`},
		{"key exists with an effect", []snapshot.Toleration{{Key: "os", Operator: "Exists", Effect: "PreferNoSchedule"}}, `{key: os, operator: Exists, effect: PreferNoSchedule}: effect PreferNoSchedule does not cover NoSchedule`},
		{"exact", []snapshot.Toleration{{Key: "os", Operator: "Exists"}}, ""},
		{"exact equal", []snapshot.Toleration{{Key: "os", Operator: "Equal", Value: "windows", Effect: "NoSchedule"}}, ""},
		{"unrelated key", []snapshot.Toleration{{Key: "dedicated", Value: "windows", Effect: "NoExecute"}}, ""},
		{"empty key without Exists", []snapshot.Toleration{{Value: "windows", Effect: "NoExecute"}}, ""},
		{"none", nil, ""},
		// The fewest differences win; the first of equals.
		{"two differences after one", []snapshot.Toleration{{Key: "OS", Value: "Windows", Effect: "NoSchedule"}, valueCase}, valueCaseMsg},
		{"value case before key case", []snapshot.Toleration{valueCase, keyCase}, valueCaseMsg},
		{"key case before value case", []snapshot.Toleration{keyCase, valueCase}, keyCaseMsg},
		{"value case before key segment", []snapshot.Toleration{valueCase, keyOther}, valueCaseMsg},
		{"key case before value", []snapshot.Toleration{keyCase, valueOther}, keyCaseMsg},
		{"key case before effect", []snapshot.Toleration{keyCase, effect}, keyCaseMsg},
		{"effect before value", []snapshot.Toleration{effect, valueOther}, effectMsg},
	} {
		if got := nearMiss(c.tols, taint); got != c.want {
			t.Errorf("%s: nearMiss = %q\n want %q", c.name, got, c.want)
		}
	}
}

func TestTolerates(t *testing.T) {
	taint := snapshot.Taint{Key: "os", Value: "windows", Effect: "NoSchedule"}
	for _, c := range []struct {
		tol  snapshot.Toleration
		want bool
	}{
		{snapshot.Toleration{Operator: "Exists"}, true},
		{snapshot.Toleration{Operator: "Exists", Effect: "NoSchedule"}, true},
		{snapshot.Toleration{Operator: "Exists", Effect: "NoExecute"}, false},
		{snapshot.Toleration{Value: "windows"}, false},
		{snapshot.Toleration{Key: "os", Operator: "Exists"}, true},
		{snapshot.Toleration{Key: "os", Value: "windows"}, true},
		{snapshot.Toleration{Key: "os", Operator: "Equal", Value: "windows", Effect: "NoSchedule"}, true},
		{snapshot.Toleration{Key: "os", Operator: "Equal", Value: "linux"}, false},
		{snapshot.Toleration{Key: "os", Operator: "Equal"}, false},
		{snapshot.Toleration{Key: "os", Operator: "In", Value: "windows"}, false},
		{snapshot.Toleration{Key: "OS", Operator: "Exists"}, false},
	} {
		if _, got := Tolerates([]snapshot.Toleration{c.tol}, taint); got != c.want {
			t.Errorf("%+v tolerates os=windows:NoSchedule: %v, want %v", c.tol, got, c.want)
		}
	}
	tols := []snapshot.Toleration{{Key: "a", Operator: "Exists"}, {Key: "os", Value: "windows"}, {Operator: "Exists"}}
	if got, ok := Tolerates(tols, taint); !ok || got != tols[1] {
		t.Errorf("Tolerates returned %+v, %v; want the first matching toleration", got, ok)
	}
	ts := []snapshot.Taint{taint, {Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"}, {Key: "a", Effect: "PreferNoSchedule"},
		{Key: "b", Value: "x", Effect: "NoExecute"}}
	if got := blockingTaints(ts); len(got) != 2 || got[0] != ts[0] || got[1] != ts[3] {
		t.Errorf("blockingTaints = %+v", got)
	}
	if got := untolerated([]snapshot.Toleration{{Key: "b", Operator: "Exists"}}, blockingTaints(ts)); len(got) != 1 || got[0] != taint {
		t.Errorf("untolerated = %+v", got)
	}
	if a, b := taintString(taint), taintString(snapshot.Taint{Key: "k", Effect: "NoExecute"}); a != "os=windows:NoSchedule" || b != "k:NoExecute" {
		t.Errorf("taintString: %q, %q", a, b)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		xs   []string
		want string
	}{
		{nil, ""},
		{[]string{"b", "a", "c"}, "a, b, c"},
		{[]string{"d", "b", "a", "c"}, "a, b, c and 1 more"},
		{[]string{"e", "d", "b", "a", "c"}, "a, b, c and 2 more"},
	} {
		if got := names(c.xs, 3); got != c.want {
			t.Errorf("names(%q, 3) = %q, want %q", c.xs, got, c.want)
		}
	}
}
