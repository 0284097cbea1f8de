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
			how := "the Windows nodes carry no taint that keeps it off"
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
			}
			where := "on Windows nodes"
			if len(nodes) > 0 {
				where = "on Windows nodes (" + names(nodes, 5) + ")"
			}
			msg := fmt.Sprintf("%s has no kubernetes.io/os: linux node selector or required affinity and %s: its Linux image %s can land %s and never start",
				workloadLabel(w), how, firstImage(spec), where)
			if stuck := stuckPods(c, w); stuck != "" {
				msg += "; " + stuck
			}
			c.Report(&w.Object, msg, "")
		}
	}
}

// windowsImage returns the first image of a pod template that is a
// Windows image by its name, or "".
func windowsImage(spec *snapshot.PodSpec) string {
	for _, c := range spec.AllContainers() {
		if IsWindowsImage(c.Image) {
			return c.Image
		}
	}
	return ""
}

// IsWindowsImage reports whether an image reference names a Windows image:
// a Windows base image (servercore, nanoserver, server, IIS, .NET
// Framework), a repository named for Windows (calico/node-windows,
// windows-exporter, sigwindowstools/...), or a tag naming a Windows
// release (ltsc2022, nanoserver-1809, windowsservercore). Multi-arch images
// that also hold a Windows variant are not recognised: by name they are
// Linux images too.
func IsWindowsImage(image string) bool {
	ref := strings.ToLower(image)
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	repo, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i:], "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	segs := strings.Split(repo, "/")
	last := segs[len(segs)-1]
	switch {
	case strings.Contains(repo, "mcr.microsoft.com/windows"), strings.Contains(repo, "/dotnet/framework/"),
		last == "windowsservercore", last == "nanoserver", last == "iis", last == "servercore",
		strings.Contains(last, "windows"), segs[0] == "sigwindowstools" || len(segs) > 1 && segs[len(segs)-2] == "sigwindowstools":
		return true
	}
	for _, tok := range strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		switch tok {
		case "windowsservercore", "nanoserver", "servercore", "windows", "ltsc2016", "ltsc2019", "ltsc2022", "ltsc2025":
			return true
		}
	}
	return false
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
		if spec.OSName() != "" {
			return
		}
		msg := fmt.Sprintf("%s runs on Windows nodes but its pod template does not set spec.os.name: windows", workloadLabel(w))
		if bad := linuxOnlyFields(spec); len(bad) > 0 {
			msg += fmt.Sprintf("; its Linux-only fields (%s) are ignored on the node, and with spec.os.name the API server would reject them", names(bad, 6))
		}
		c.Report(&w.Object, msg, "")
	})
}

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

// Windows builds by name.
var windowsBuilds = []struct {
	build int
	names []string
	label string
}{
	{14393, []string{"ltsc2016", "1607"}, "Windows Server 2016 / ltsc2016"},
	{16299, []string{"1709"}, "Windows Server 1709"},
	{17134, []string{"1803"}, "Windows Server 1803"},
	{17763, []string{"ltsc2019", "1809"}, "Windows Server 2019 / ltsc2019"},
	{18362, []string{"1903"}, "Windows Server 1903"},
	{18363, []string{"1909"}, "Windows Server 1909"},
	{19041, []string{"2004"}, "Windows Server 2004"},
	{19042, []string{"20h2"}, "Windows Server 20H2"},
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

var tagBuild = regexp.MustCompile(`(?:^|[^0-9a-z])(ltsc2016|ltsc2019|ltsc2022|ltsc2025|1607|1709|1803|1809|1903|1909|2004|20h2|10\.0\.(\d{5}))(?:$|[^0-9a-z])`)

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
	tag = strings.ToLower(tag[i+1:])
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

// linuxOnlyFields lists the Linux-only fields a pod template sets.
func linuxOnlyFields(spec *snapshot.PodSpec) []string {
	var bad []string
	for _, f := range linuxPodSC {
		if spec.SecurityContext.Has(f) {
			bad = append(bad, "spec.securityContext."+f)
		}
	}
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
	for _, ctr := range spec.AllContainers() {
		for _, f := range linuxContainerSC {
			if ctr.SecurityContext.Has(f) {
				bad = append(bad, fmt.Sprintf("container %s securityContext.%s", ctr.Name, f))
			}
		}
	}
	return bad
}

// HC110: an error only with spec.os.name: windows, the one case in which
// the API server rejects the pod. Without it the fields are ignored on the
// node and HC103 (info) names them.
func windowsLinuxSecurityContext(c *Ctx) {
	windowsTemplates(c, func(w *snapshot.Workload, spec *snapshot.PodSpec) {
		if spec.OSName() != "windows" {
			return
		}
		bad := linuxOnlyFields(spec)
		if len(bad) == 0 {
			return
		}
		c.Report(&w.Object, fmt.Sprintf("%s sets spec.os.name: windows and Linux-only fields: %s; the API server rejects its pods (\"cannot be set for a windows pod\")",
			workloadLabel(w), names(bad, 6)), "")
	})
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
		c.Report(&w.Object, msg, "")
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
		if c.ExcludesWindows(spec) {
			c.Report(&w.Object, fmt.Sprintf("%s %s but its scheduling constraints keep it on Linux nodes, where it never starts", workloadLabel(w), why), "")
			continue
		}
		c.Report(&w.Object, fmt.Sprintf("%s %s but nothing places it on Windows nodes (no kubernetes.io/os: windows node selector, required node affinity or RuntimeClass): the scheduler puts it on a Linux node, where it never starts",
			workloadLabel(w), why), "")
	}
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
