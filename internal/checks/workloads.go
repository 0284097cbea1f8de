package checks

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
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
			if c.IsWindowsTemplate(spec) || c.ExcludesWindows(spec) {
				continue
			}
			tol, ok := Tolerates(spec.Tolerations, WindowsTaint)
			if !ok {
				continue
			}
			nodes, known := c.windowsNodesFor(spec)
			if known && len(nodes) == 0 {
				continue
			}
			where := "on Windows nodes"
			if known {
				where = "on Windows nodes (" + names(nodes, 5) + ")"
			}
			msg := fmt.Sprintf("%s tolerates the os=windows:NoSchedule taint with %s and has no kubernetes.io/os: linux node selector or required affinity: its Linux image %s can land %s and never start",
				workloadLabel(w), describeToleration(tol), firstImage(spec), where)
			if stuck := stuckPods(c, w); stuck != "" {
				msg += "; " + stuck
			}
			c.Report(&w.Object, msg, "")
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
	return fmt.Sprintf("%d pod(s) already stuck there: %s", len(stuck), names(stuck, 5))
}

func firstImage(spec *snapshot.PodSpec) string {
	for _, c := range spec.AllContainers() {
		if c.Image != "" {
			return c.Image
		}
	}
	return "(no image)"
}

// windowsTemplates calls f for every Windows pod template.
func windowsTemplates(c *Ctx, f func(w *snapshot.Workload, spec *snapshot.PodSpec)) {
	for _, w := range c.S.Workloads {
		if spec := &w.Template.Spec; c.IsWindowsTemplate(spec) {
			f(w, spec)
		}
	}
}

// HC103
func windowsPodOSField(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.OSName() == "" {
			c.Report(&w.Object, fmt.Sprintf("%s runs on Windows nodes but its pod template does not set spec.os.name: windows", workloadLabel(w)), "")
		}
	})
}

// HC104
func windowsPodBuildSelector(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.HostProcess() || spec.RuntimeClass() != "" {
			return
		}
		if _, ok := spec.NodeSelector[snapshot.LabelWindowsBuild]; ok {
			return
		}
		for _, t := range spec.Affinity.RequiredTerms() {
			for _, r := range t.MatchExpressions {
				if r.Key == snapshot.LabelWindowsBuild {
					return
				}
			}
		}
		c.Report(&w.Object, fmt.Sprintf("%s is a Windows pod template with neither a runtimeClassName nor a %s selector: it can land on a node whose build does not match image %s",
			workloadLabel(w), snapshot.LabelWindowsBuild, firstImage(spec)), "")
	})
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

// Windows builds by name.
var windowsBuilds = []struct {
	build int
	names []string
	label string
}{
	{17763, []string{"ltsc2019", "1809"}, "Windows Server 2019 / ltsc2019"},
	{20348, []string{"ltsc2022"}, "Windows Server 2022 / ltsc2022"},
	{26100, []string{"ltsc2025"}, "Windows Server 2025 / ltsc2025"},
}

func buildName(b string) string {
	n := buildNumber(b)
	for _, w := range windowsBuilds {
		if w.build == n {
			return w.label
		}
	}
	return "build " + b
}

// buildNumber turns "10.0.26100" (or "26100") into 26100; 0 if not a build.
func buildNumber(b string) int {
	p := strings.Split(b, ".")
	if len(p) >= 3 {
		b = p[2]
	}
	n, err := strconv.Atoi(b)
	if err != nil {
		return 0
	}
	return n
}

var tagBuild = regexp.MustCompile(`(?:^|[^0-9a-z])(ltsc2019|ltsc2022|ltsc2025|1809|10\.0\.(\d{5}))(?:$|[^0-9a-z])`)

// ImageBuild returns the Windows build an image tag names (17763, 20348,
// 26100, or a 10.0.NNNNN build), or 0.
func ImageBuild(image string) int {
	tag := image
	if i := strings.LastIndex(image, "@"); i >= 0 {
		tag = image[:i]
	}
	i := strings.LastIndex(tag, ":")
	if i < 0 || strings.Contains(tag[i:], "/") {
		return 0
	}
	tag = tag[i+1:]
	m := tagBuild.FindStringSubmatch(tag)
	if m == nil {
		return 0
	}
	if m[2] != "" {
		n, _ := strconv.Atoi(m[2])
		return n
	}
	for _, w := range windowsBuilds {
		if contains(w.names, m[1]) {
			return w.build
		}
	}
	return 0
}

// BuildCompatible is containerd's rule for process isolation: the image's
// build equals the host's, or, from build 20348 on, an older image of
// build 20348 or later on a newer host.
func BuildCompatible(image, host int) bool {
	if image == host {
		return true
	}
	return image >= 20348 && host >= 20348 && image < host
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

// HC109
func windowsDottedServiceName(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		ns := w.Meta.Namespace
		var hits []string
		check := func(where, value string) {
			for _, h := range snapshot.DottedHosts(value) {
				if c.isServiceShortName(h) {
					hits = append(hits, fmt.Sprintf("%q in %s", h, where))
				}
			}
		}
		cms := map[string]bool{}
		for _, ctr := range spec.AllContainers() {
			for i, a := range ctr.Command {
				check(fmt.Sprintf("container %s command[%d]", ctr.Name, i), a)
			}
			for i, a := range ctr.Args {
				check(fmt.Sprintf("container %s args[%d]", ctr.Name, i), a)
			}
			for _, e := range ctr.Env {
				check(fmt.Sprintf("container %s env %s", ctr.Name, e.Name), e.Value)
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					cms[e.ValueFrom.ConfigMapKeyRef.Name] = true
				}
			}
			for _, ef := range ctr.EnvFrom {
				if ef.ConfigMapRef != nil {
					cms[ef.ConfigMapRef.Name] = true
				}
			}
		}
		for _, v := range spec.Volumes {
			if v.ConfigMap != nil {
				cms[v.ConfigMap.Name] = true
			}
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ConfigMap != nil {
						cms[s.ConfigMap.Name] = true
					}
				}
			}
		}
		var cmNames []string
		for n := range cms {
			cmNames = append(cmNames, n)
		}
		sort.Strings(cmNames)
		for _, n := range cmNames {
			cm := c.ConfigMap(ns, n)
			if cm == nil {
				continue
			}
			for _, h := range cm.Hosts {
				if c.isServiceShortName(h.Value) {
					hits = append(hits, fmt.Sprintf("%q in ConfigMap %s key %s", h.Value, n, h.Key))
				}
			}
		}
		if len(hits) > 0 {
			c.Report(&w.Object, fmt.Sprintf("%s is a Windows pod template that uses dotted short service names, which the Windows DNS client does not complete: %s",
				workloadLabel(w), names(hits, 5)), "")
		}
	})
}

// isServiceShortName reports whether h ("name.namespace" or
// "name.namespace.svc") names a Service in the snapshot.
func (x *Index) isServiceShortName(h string) bool {
	p := strings.Split(h, ".")
	if len(p) < 2 {
		return false
	}
	return x.HasService(p[1], p[0])
}

// Linux-only security context fields (the API's validateWindows).
var (
	linuxPodSC = []string{"appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup", "fsGroupChangePolicy",
		"sysctls", "runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy", "seLinuxChangePolicy"}
	linuxContainerSC = []string{"appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities",
		"readOnlyRootFilesystem", "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup"}
)

// HC110
func windowsLinuxSecurityContext(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		var bad []string
		for _, f := range linuxPodSC {
			if _, ok := spec.SecurityContext[f]; ok {
				bad = append(bad, "spec.securityContext."+f)
			}
		}
		if spec.OSName() == "windows" {
			// Enforced by the API only with spec.os.name; without it the
			// kubelet tolerates them.
			if spec.HostUsers != nil {
				bad = append(bad, "spec.hostUsers")
			}
			if spec.HostPID {
				bad = append(bad, "spec.hostPID")
			}
			if spec.HostIPC {
				bad = append(bad, "spec.hostIPC")
			}
			if spec.ShareProcessNamespace != nil {
				bad = append(bad, "spec.shareProcessNamespace")
			}
		}
		for _, ctr := range spec.AllContainers() {
			for _, f := range linuxContainerSC {
				if _, ok := ctr.SecurityContext[f]; ok {
					bad = append(bad, fmt.Sprintf("container %s securityContext.%s", ctr.Name, f))
				}
			}
		}
		if len(bad) == 0 {
			return
		}
		effect := "they are silently ignored on the node"
		if spec.OSName() == "windows" {
			effect = "the API server rejects it (\"cannot be set for a windows pod\")"
		}
		c.Report(&w.Object, fmt.Sprintf("%s is a Windows pod template with Linux-only fields: %s; %s",
			workloadLabel(w), names(bad, 6), effect), "")
	})
}

// HC111
func hostProcessPodSecurity(c *Ctx) {
	for _, w := range c.S.Workloads {
		spec := &w.Template.Spec
		if !spec.HostProcess() {
			continue
		}
		level, known := c.PodSecurityLevel(w.Meta.Namespace)
		if !known || level == "privileged" {
			continue
		}
		c.Report(&w.Object, fmt.Sprintf("%s runs HostProcess containers in namespace %s, which enforces Pod Security level %q: its pods are rejected",
			workloadLabel(w), w.Meta.Namespace, level), "")
	}
}
