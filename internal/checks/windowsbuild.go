// Windows builds and RuntimeClasses: a template tied to the build its image
// needs (HC104, HC108), RuntimeClasses that exist and match a node's build
// (HC105, HC106), a build without a RuntimeClass (HC107), a workload pinned
// to a build no node has (HC114).

package checks

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// HC104: a Windows pod template whose image names one Windows build, not
// tied to that build; live, also a pull that failed on a Windows node for
// want of a matching manifest (whatever the tag).
func windowsPodBuildSelector(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.HostProcess() {
			return
		}
		if pulls := noMatchingManifest(c, w); len(pulls) > 0 {
			c.Report(&w.Object, fmt.Sprintf("%s: the image pull failed for want of a manifest for the node's Windows build: %s",
				workloadLabel(w), names(pulls, 3)), "")
			return
		}
		if spec.RuntimeClass() != "" && c.RuntimeClass(spec) == nil {
			return // a RuntimeClass not in the input: assumed to select the build
		}
		tied := c.selectedBuilds(spec)
		for _, ctr := range spec.AllContainers() {
			ib := ImageBuild(ctr.Image)
			// Tied to some build: HC108 compares the builds. From build
			// 20348 on an image also runs on newer hosts (HC108 catches
			// one on an older node when the nodes are known).
			if ib == 0 || ib >= 20348 || len(tied) > 0 {
				continue
			}
			c.Report(&w.Object, fmt.Sprintf("%s container %s: image %s is built for Windows build 10.0.%d (%s), which runs only on a host of that same build, and the pod is tied to no build (no runtimeClassName, no %s selector): it fails on every node of another build, such as the guide's 10.0.26100",
				workloadLabel(w), ctr.Name, ctr.Image, ib, buildName(strconv.Itoa(ib)), snapshot.LabelWindowsBuild), "")
			return
		}
	})
}

// selectedBuilds returns the Windows builds a pod template is tied to:
// its node selectors' and RuntimeClass's windows-build labels, and the
// values of a required affinity term on that label.
func (x *Index) selectedBuilds(spec *snapshot.PodSpec) []int {
	var out []int
	for _, sel := range x.selectors(spec) {
		if b, ok := sel[snapshot.LabelWindowsBuild]; ok {
			out = append(out, buildNumber(b))
		}
	}
	for _, t := range spec.Affinity.RequiredTerms() {
		for _, r := range t.MatchExpressions {
			if r.Key == snapshot.LabelWindowsBuild && r.Operator == "In" {
				for _, v := range r.Values {
					out = append(out, buildNumber(v))
				}
			}
		}
	}
	return out
}

// noMatchingManifest returns the workload's pods on Windows nodes whose
// image pull failed with "no matching manifest", "pod on node (reason)".
func noMatchingManifest(c *Ctx, w *snapshot.Workload) []string {
	var out []string
	add := func(name, node string, st *snapshot.PodStatus) {
		if n := c.Node(node); n == nil || !n.IsWindows() {
			return
		}
		for _, m := range st.WaitingMessages() {
			if strings.Contains(strings.ToLower(m), "no matching manifest") {
				out = append(out, fmt.Sprintf("%s on %s (%s)", name, node, m))
				return
			}
		}
	}
	if w.Pod != nil {
		add(w.Meta.Name, w.Template.Spec.NodeName, w.Pod)
	}
	for _, p := range c.PodsOf(w) {
		add(p.Name, p.NodeName, &p.Status)
	}
	return out
}

// HC105
func runtimeClassMissing(c *Ctx) {
	if !c.S.Complete(snapshot.KindRuntimeClass) {
		return
	}
	for _, w := range c.S.Workloads {
		spec := &w.Template.Spec
		if name := spec.RuntimeClass(); name != "" && c.RuntimeClass(spec) == nil {
			c.Report(&w.Object, fmt.Sprintf("%s names runtimeClassName %q, which does not exist: the API server rejects its pods", workloadLabel(w), name), "")
		}
	}
}

// HC106
func runtimeClassBuildUnmatched(c *Ctx) {
	if !c.Known(snapshot.KindNode) {
		return
	}
	builds := map[string]bool{}
	for _, n := range c.WindowsNodes() {
		builds[n.WindowsBuild()] = true
	}
	for _, rc := range c.S.RuntimeClasses {
		b := rc.NodeSelector()[snapshot.LabelWindowsBuild]
		if b == "" || builds[b] {
			continue
		}
		c.Report(&rc.Object, fmt.Sprintf("RuntimeClass %s selects %s=%s, and no node has that build (%s): its pods stay Pending",
			rc.Meta.Name, snapshot.LabelWindowsBuild, b, buildList(builds)), "")
	}
}

func buildList(b map[string]bool) string {
	var xs []string
	for k := range b {
		xs = append(xs, k)
	}
	if len(xs) == 0 {
		return "no Windows nodes"
	}
	sort.Strings(xs)
	return "nodes have " + strings.Join(xs, ", ")
}

// HC107
func windowsBuildNoRuntimeClass(c *Ctx) {
	if !c.Known(snapshot.KindNode) || !c.Known(snapshot.KindRuntimeClass) {
		return
	}
	covered := map[string]bool{}
	for _, rc := range c.S.RuntimeClasses {
		if b := rc.NodeSelector()[snapshot.LabelWindowsBuild]; b != "" {
			covered[b] = true
		}
	}
	byBuild := map[string][]*snapshot.Node{}
	for _, n := range c.WindowsNodes() {
		if b := n.WindowsBuild(); b != "" && !covered[b] {
			byBuild[b] = append(byBuild[b], n)
		}
	}
	var bs []string
	for b := range byBuild {
		bs = append(bs, b)
	}
	sort.Strings(bs)
	for _, b := range bs {
		n := byBuild[b][0]
		var ns []string
		for _, m := range byBuild[b] {
			ns = append(ns, m.Meta.Name)
		}
		c.Report(&n.Object, fmt.Sprintf("Windows build %s (%s; node %s) has no RuntimeClass selecting %s=%s",
			b, buildName(b), names(ns, 5), snapshot.LabelWindowsBuild, b), "")
	}
}

// HC108
func windowsImageBuild(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.HostProcess() {
			return
		}
		// Target builds: the build the template selects, else the builds of
		// the Windows nodes it can land on, else (a bare pod) its node.
		targets := map[int][]string{}
		for _, sel := range c.selectors(spec) {
			if b := sel[snapshot.LabelWindowsBuild]; b != "" {
				targets[buildNumber(b)] = nil
			}
		}
		if len(targets) == 0 {
			nodes, _ := c.windowsNodesFor(spec)
			if spec.NodeName != "" {
				nodes = []string{spec.NodeName}
			}
			for _, name := range nodes {
				if n := c.Node(name); n != nil && n.IsWindows() {
					b := buildNumber(n.WindowsBuild())
					targets[b] = append(targets[b], name)
				}
			}
		}
		for _, ctr := range spec.AllContainers() {
			ib := ImageBuild(ctr.Image)
			if ib == 0 {
				continue
			}
			var bad []string
			for hb, nodes := range targets {
				if hb == 0 || BuildCompatible(ib, hb) {
					continue
				}
				s := fmt.Sprintf("10.0.%d", hb)
				if len(nodes) > 0 {
					s += " (" + names(nodes, 3) + ")"
				}
				bad = append(bad, s)
			}
			if len(bad) == 0 {
				continue
			}
			sort.Strings(bad)
			why := "a newer image never runs on an older host"
			if ib < 20348 {
				why = "images before build 20348 run only on a host of the same build"
			}
			c.Report(&w.Object, fmt.Sprintf("%s container %s: image %s is for build 10.0.%d (%s), scheduled to nodes of build %s: %s",
				workloadLabel(w), ctr.Name, ctr.Image, ib, buildName(strconv.Itoa(ib)), strings.Join(bad, ", "), why), "")
		}
	})
}

// HC114
func windowsBuildPinUnmatched(c *Ctx) {
	builds, from, planned := c.knownBuilds()
	if len(builds) == 0 {
		return // Windows nodes without the build label: nothing to compare
	}
	for _, w := range c.S.Workloads {
		ps := &w.Template.Spec
		if ps.NodeName != "" {
			continue // a bound pod is past scheduling
		}
		pinned, how := pinnedBuilds(ps)
		if len(pinned) == 0 {
			continue
		}
		matched := false
		for _, b := range pinned {
			matched = matched || slices.Contains(builds, b)
		}
		if matched {
			continue
		}
		var named []string
		for _, b := range pinned {
			named = append(named, b+" ("+buildName(b)+")")
		}
		msg := fmt.Sprintf("%s is pinned to Windows build %s by its %s, and %s %s: its pods stay Pending",
			workloadLabel(w), strings.Join(named, " or "), how, from, strings.Join(builds, ", "))
		if !planned {
			msg = fmt.Sprintf("%s is pinned to Windows build %s by its %s, which is no Windows Server release hybridctl knows (%s): unless the cluster has nodes of that build, its pods stay Pending",
				workloadLabel(w), strings.Join(named, " or "), how, strings.Join(builds, ", "))
		}
		fix := "pin a build the nodes have, with an image for it, or add Windows nodes of the pinned build"
		if len(builds) == 1 {
			if r, ok := spec.WindowsReleaseForBuild(builds[0]); ok {
				fix = fmt.Sprintf("pin the nodes' build instead (%s: %s, or runtimeClassName: %s) with an image for it (tag %s), or add Windows nodes of the pinned build",
					snapshot.LabelWindowsBuild, r.Build, r.RuntimeClass(), r.ImageTag)
			}
		}
		c.Report(&w.Object, msg, fix)
	}
}
