// Where workloads land: Linux pods on Windows nodes (HC101, HC102), Windows
// pods without the taint's toleration or without placement (HC112, HC113).

package checks

import (
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// nodeCandidates returns the Windows nodes a template could be scheduled
// to, when nodes are known; known is false when the snapshot has no nodes
// (lint of manifests), and the template alone decides.
func (x *Index) windowsNodesFor(spec *snapshot.PodSpec) (nodes []string, known bool) {
	if !x.Known(snapshot.KindNode) {
		return nil, false
	}
	for _, n := range x.windowsNodes {
		if x.Matches(spec, n) {
			nodes = append(nodes, n.Meta.Name)
		}
	}
	return nodes, true
}

// linuxOnWindows is HC101 (DaemonSets) and HC102 (everything else).
func linuxOnWindows(daemonSets bool) func(*Ctx) {
	return func(c *Ctx) {
		for _, w := range c.S.Workloads {
			if (w.Kind == "DaemonSet") != daemonSets {
				continue
			}
			spec := &w.Template.Spec
			if c.IsWindowsTemplate(spec) || c.ExcludesWindows(spec) || windowsImage(spec) != "" {
				continue
			}
			tols, _ := c.podTolerations(spec)
			sets, from := c.windowsTaintSets(spec)
			var nodes []string
			var covered *taintSet
			for i, ts := range sets {
				if len(untolerated(tols, ts.Taints)) > 0 {
					continue
				}
				if covered == nil {
					covered = &sets[i]
				}
				if ts.Node != "" {
					nodes = append(nodes, ts.Node)
				}
			}
			if covered == nil {
				continue
			}
			how, note := "the Windows nodes carry no taint that keeps it off", ""
			if len(covered.Taints) > 0 {
				var ds []string
				for _, t := range covered.Taints {
					tol, _ := Tolerates(tols, t)
					ds = append(ds, fmt.Sprintf("%s with %s", taintString(t), describeToleration(tol)))
				}
				how = "it tolerates the Windows taint " + strings.Join(ds, ", ")
				if from != "" {
					how += " (" + from + ")"
				}
				if from == assumedTaint {
					note = assumedTaintNote
				}
			}
			where := "on Windows nodes"
			if len(nodes) > 0 {
				where = "on Windows nodes (" + names(nodes, 5) + ")"
			}
			keeps := "has no kubernetes.io/os: linux node selector or required affinity"
			if custom := c.customConstraints(spec); custom != "" {
				keeps = "has no kubernetes.io/os: linux node selector or affinity term (its " + custom + " does not keep it off Windows nodes)"
				if len(nodes) > 0 {
					keeps = "has no kubernetes.io/os: linux node selector or affinity term (its " + custom + " admits Windows nodes too)"
				}
			}
			msg := fmt.Sprintf("%s %s and %s: its Linux image %s can land %s and never start",
				workloadLabel(w), keeps, how, firstImage(spec), where)
			if stuck := stuckPods(c, w); stuck != "" {
				msg += "; " + stuck
			}
			c.ReportNote(&w.Object, msg, "", note)
		}
	}
}

// stuckPods describes a controller's pods already on Windows nodes.
func stuckPods(c *Ctx, w *snapshot.Workload) string {
	var stuck []string
	add := func(name, node string, st *snapshot.PodStatus) {
		n := c.Node(node)
		if n == nil || !n.IsWindows() {
			return
		}
		s := name + " on " + node
		if r := st.WaitingReason(); r != "" {
			s += " (" + r + ")"
		}
		stuck = append(stuck, s)
	}
	if w.Pod != nil {
		add(w.Meta.Name, w.Template.Spec.NodeName, w.Pod)
	}
	for _, p := range c.PodsOf(w) {
		add(p.Name, p.NodeName, &p.Status)
	}
	if len(stuck) == 0 {
		return ""
	}
	return fmt.Sprintf("%s already stuck there: %s", count(len(stuck), "pod"), names(stuck, 5))
}

// windowsTemplates calls f for every Windows pod template.
func windowsTemplates(c *Ctx, f func(w *snapshot.Workload, spec *snapshot.PodSpec)) {
	for _, w := range c.S.Workloads {
		if spec := &w.Template.Spec; c.IsWindowsTemplate(spec) {
			f(w, spec)
		}
	}
}

// HC112
func windowsTaintNotTolerated(c *Ctx) {
	for _, w := range c.S.Workloads {
		spec := &w.Template.Spec
		if !c.OnlyWindows(spec) || spec.NodeName != "" {
			continue // a bound pod is past scheduling
		}
		tols, unknownRC := c.podTolerations(spec)
		if unknownRC {
			continue // its RuntimeClass may add the toleration
		}
		sets, from := c.windowsTaintSets(spec)
		if len(sets) == 0 {
			continue // no Windows node matches: another problem
		}
		var missing []snapshot.Taint
		seen := map[string]bool{}
		ok := false
		for _, ts := range sets {
			u := untolerated(tols, ts.Taints)
			if len(u) == 0 {
				ok = true
				break
			}
			for _, t := range u {
				if k := taintString(t); !seen[k] {
					seen[k] = true
					missing = append(missing, t)
				}
			}
		}
		if ok {
			continue
		}
		var ts, near []string
		for _, t := range missing {
			ts = append(ts, taintString(t))
			if n := nearMiss(tols, t); n != "" {
				near = append(near, "toleration "+n)
			}
		}
		where := ""
		if from != "" {
			where = " (" + from + ")"
		} else {
			var ns []string
			for _, s := range sets {
				ns = append(ns, s.Node)
			}
			where = " (on " + names(ns, 5) + ")"
		}
		via := "no toleration of its own"
		if spec.RuntimeClass() != "" {
			via = "no toleration of its own or of RuntimeClass " + spec.RuntimeClass()
		}
		msg := fmt.Sprintf("%s selects Windows nodes but %s matches %s%s: its pods stay Pending",
			workloadLabel(w), via, strings.Join(ts, " or "), where)
		if len(near) > 0 {
			msg += "; near miss: " + strings.Join(near, "; ")
		}
		var tolerate []string
		for _, t := range missing {
			tolerate = append(tolerate, tolerationFor(t))
		}
		fix := "tolerate the taint exactly (" + strings.Join(tolerate, ", ") + ")"
		if rc := c.runtimeClassFor(spec); rc != "" && spec.RuntimeClass() == "" {
			fix += ", or use runtimeClassName: " + rc + ", whose scheduling adds it"
			if _, how := pinnedBuilds(spec); how != "" {
				fix += " and selects the build its " + how + " pins"
			}
		}
		note := ""
		if from == assumedTaint {
			note = assumedTaintNote
		}
		c.ReportNote(&w.Object, msg, fix, note)
	}
}

// HC113
func windowsImageNoPlacement(c *Ctx) {
	for _, w := range c.S.Workloads {
		spec := &w.Template.Spec
		var why string
		switch {
		case spec.HostProcess():
			why = "runs HostProcess containers"
		case spec.OSName() == "windows":
			why = "sets spec.os.name: windows"
		default:
			if img := windowsImage(spec); img != "" {
				why = "runs the Windows image " + img
			}
		}
		if why == "" || c.OnlyWindows(spec) {
			continue
		}
		if spec.RuntimeClass() != "" && c.RuntimeClass(spec) == nil {
			continue // a RuntimeClass not in the input may place it
		}
		if spec.NodeName != "" {
			if n := c.Node(spec.NodeName); n == nil || n.IsWindows() {
				continue // placed by name (a bare pod already bound)
			}
		}
		linux, windows, known := c.nodesAllow(spec)
		if known && windows && !linux {
			continue // its labels admit Windows nodes only
		}
		rc := c.runtimeClassFor(spec)
		fix := "add nodeSelector kubernetes.io/os: windows and the toleration, or runtimeClassName: " + rc
		if rc == "" {
			fix = "add nodeSelector kubernetes.io/os: windows and the toleration, or the runtimeClassName of the build it needs"
		}
		if c.ExcludesWindows(spec) {
			c.Report(&w.Object, fmt.Sprintf("%s %s but its scheduling constraints keep it on Linux nodes, where it never starts", workloadLabel(w), why), fix)
			continue
		}
		custom := c.customConstraints(spec)
		switch {
		case custom != "" && known:
			c.Report(&w.Object, fmt.Sprintf("%s %s but its %s admits Linux nodes (%s): the scheduler can put it there, where it never starts",
				workloadLabel(w), why, custom, names(c.linuxNodesFor(spec), 5)), "add kubernetes.io/os: windows beside it"+strings.TrimPrefix(fix, "add nodeSelector kubernetes.io/os: windows"))
		case custom != "":
			c.Report(&w.Object, fmt.Sprintf("%s %s but is placed only by its %s, which says nothing about the OS: unless Windows nodes alone match it, the scheduler can put it on a Linux node, where it never starts",
				workloadLabel(w), why, custom), "add kubernetes.io/os: windows beside it"+strings.TrimPrefix(fix, "add nodeSelector kubernetes.io/os: windows"))
		default:
			c.Report(&w.Object, fmt.Sprintf("%s %s but nothing places it on Windows nodes (no kubernetes.io/os: windows node selector, required node affinity or RuntimeClass): the scheduler puts it on a Linux node, where it never starts",
				workloadLabel(w), why), fix)
		}
	}
}
