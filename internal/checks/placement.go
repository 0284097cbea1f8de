package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// The reasoning over what a pod template's scheduling constraints allow,
// shared by the placement checks (HC101-HC104, HC112-HC114) so that their
// findings describe one and the same placement and never contradict each
// other.

// customConstraints describes the scheduling constraints of a pod
// template that do not name the OS: node selectors (its own and its
// RuntimeClass's) and required node-affinity expressions on other labels,
// "node selector agentpool=win", "required node affinity kubernetes.io/arch
// In [amd64 arm64]". Empty when there are none.
func (x *Index) customConstraints(spec *snapshot.PodSpec) string {
	var parts []string
	for i, sel := range x.selectors(spec) {
		var kv []string
		for k, v := range sel {
			if !isOSKey(k) && k != snapshot.LabelWindowsBuild {
				kv = append(kv, k+"="+v)
			}
		}
		if len(kv) == 0 {
			continue
		}
		sort.Strings(kv)
		what := "node selector "
		if i > 0 {
			what = "RuntimeClass " + spec.RuntimeClass() + "'s node selector "
		}
		parts = append(parts, what+strings.Join(kv, ", "))
	}
	var terms []string
	for _, t := range spec.Affinity.RequiredTerms() {
		var es []string
		for _, r := range t.MatchExpressions {
			if isOSKey(r.Key) || r.Key == snapshot.LabelWindowsBuild {
				continue
			}
			e := r.Key + " " + r.Operator
			if len(r.Values) > 0 {
				e += " [" + strings.Join(r.Values, " ") + "]"
			}
			es = append(es, e)
		}
		if len(es) > 0 {
			terms = append(terms, strings.Join(es, " and "))
		}
	}
	if len(terms) > 0 {
		parts = append(parts, "required node affinity "+strings.Join(terms, " or "))
	}
	return strings.Join(parts, "; ")
}

// nodesAllow reports, when nodes are known (Node objects in the input, or
// live), whether the template's selectors and required affinity admit
// some Linux node and some Windows node.
func (x *Index) nodesAllow(spec *snapshot.PodSpec) (linux, windows, known bool) {
	if !x.Known(snapshot.KindNode) || len(x.S.Nodes) == 0 {
		return false, false, false
	}
	for _, n := range x.S.Nodes {
		if !x.Matches(spec, n) {
			continue
		}
		if n.IsWindows() {
			windows = true
		} else {
			linux = true
		}
	}
	return linux, windows, true
}

// windowsWhy says why a pod template is a Windows one: what it sets or
// runs, or how it selects Windows nodes; "" when it is none.
func (x *Index) windowsWhy(spec *snapshot.PodSpec) string {
	switch {
	case spec.OSName() == "windows":
		return "sets spec.os.name: windows"
	case x.OnlyWindows(spec):
		return "selects Windows nodes"
	case spec.HostProcess():
		return "runs HostProcess containers, which exist only on Windows,"
	}
	return ""
}

// knownBuilds are the Windows builds pods can be placed on, and where
// that comes from: the Windows nodes' (live, or Node objects in the
// input), the plan's (lint --spec), or else the Windows Server releases
// hybridctl knows. planned is false for the last.
func (x *Index) knownBuilds() (builds []string, from string, planned bool) {
	seen := map[string]bool{}
	add := func(b string) {
		if b != "" && !seen[b] {
			seen[b] = true
			builds = append(builds, b)
		}
	}
	switch {
	case len(x.windowsNodes) > 0:
		for _, n := range x.windowsNodes {
			add(n.WindowsBuild())
		}
		from, planned = "the Windows nodes have", true
	case x.buildsFrom != "":
		for _, b := range x.builds {
			add(b)
		}
		from, planned = x.buildsFrom+" plans", true
	default:
		for _, r := range spec.WindowsReleases() {
			add(r.Build)
		}
		from = "the Windows Server releases hybridctl knows are"
	}
	sort.Strings(builds)
	return builds, from, planned
}

// pinnedBuilds returns the Windows builds a pod template pins itself to
// with its own node selector or required affinity (not its
// RuntimeClass's: HC106 judges those), and how ("nodeSelector
// node.kubernetes.io/windows-build=10.0.20348"). For several affinity
// terms every term must pin a build, else nil.
func pinnedBuilds(spec *snapshot.PodSpec) (builds []string, how string) {
	if b, ok := spec.NodeSelector[snapshot.LabelWindowsBuild]; ok {
		return []string{b}, "nodeSelector " + snapshot.LabelWindowsBuild + "=" + b
	}
	terms := spec.Affinity.RequiredTerms()
	for _, t := range terms {
		var in []string
		for _, r := range t.MatchExpressions {
			if r.Key == snapshot.LabelWindowsBuild && r.Operator == "In" {
				in = append(in, r.Values...)
			}
		}
		if len(in) == 0 {
			return nil, ""
		}
		builds = append(builds, in...)
	}
	if len(builds) == 0 {
		return nil, ""
	}
	return builds, "required node affinity " + snapshot.LabelWindowsBuild + " In [" + strings.Join(builds, " ") + "]"
}

// runtimeClassFor names the RuntimeClass (as hybridctl creates them,
// windows-YEAR) that fits a Windows pod template's other constraints: the
// build it pins, else the build its image names, else the one build the
// nodes or the plan have; "" when none fits or several would, or when
// the pinned build is not one the nodes or the plan have.
func (x *Index) runtimeClassFor(ps *snapshot.PodSpec) string {
	pick := func(builds []string) string {
		if len(builds) != 1 {
			return ""
		}
		if r, ok := spec.WindowsReleaseForBuild(builds[0]); ok {
			return r.RuntimeClass()
		}
		return ""
	}
	builds, _, planned := x.knownBuilds()
	if pinned, _ := pinnedBuilds(ps); len(pinned) > 0 {
		if planned {
			// Only a build the nodes have: a RuntimeClass of another
			// would leave the pods Pending as the pin does (HC114).
			pinned = slices.DeleteFunc(slices.Clone(pinned), func(b string) bool { return !slices.Contains(builds, b) })
		}
		return pick(pinned)
	}
	image := 0
	for _, c := range ps.AllContainers() {
		if b := ImageBuild(c.Image); b != 0 {
			image = b
			break
		}
	}
	if planned {
		var fit []string
		for _, b := range builds {
			if image == 0 || BuildCompatible(image, buildNumber(b)) {
				fit = append(fit, b)
			}
		}
		if rc := pick(fit); rc != "" {
			return rc
		}
	}
	if image != 0 {
		return pick([]string{fmt.Sprintf("10.0.%d", image)})
	}
	rs := spec.WindowsReleases()
	return rs[len(rs)-1].RuntimeClass()
}
