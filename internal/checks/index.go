package checks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// Index holds lookups over a snapshot that several checks share. It is
// built once per run and only read by checks.
type Index struct {
	S *snapshot.Snapshot

	nodes          map[string]*snapshot.Node
	windowsNodes   []*snapshot.Node
	runtimeClasses map[string]*snapshot.RuntimeClass
	namespaces     map[string]*snapshot.Namespace
	services       map[string]bool
	configMaps     map[string]*snapshot.ConfigMap
	// pods by their top controller, "Kind/namespace/name".
	podsByController map[string][]*snapshot.Pod
	// placed are all pods, owned and bare, in the slim form.
	placed        []*snapshot.Pod
	clusterConfig *snapshot.ClusterConfiguration
	// taints and taintsFrom are the Windows nodes' taints given by the
	// caller (lint --spec), when the snapshot has no Windows node.
	taints     []snapshot.Taint
	taintsFrom string
	// builds and buildsFrom are the Windows nodes' builds given by the
	// caller (lint --spec), when the snapshot has no Windows node.
	builds     []string
	buildsFrom string
	// spec is the cluster spec given by the caller (doctor -f), or nil.
	spec *Spec
}

// NewIndex builds the lookups.
func NewIndex(s *snapshot.Snapshot) *Index {
	x := &Index{S: s, nodes: map[string]*snapshot.Node{}, runtimeClasses: map[string]*snapshot.RuntimeClass{},
		namespaces: map[string]*snapshot.Namespace{}, services: map[string]bool{}, configMaps: map[string]*snapshot.ConfigMap{},
		podsByController: map[string][]*snapshot.Pod{}}
	for _, n := range s.Nodes {
		x.nodes[n.Meta.Name] = n
		if n.IsWindows() {
			x.windowsNodes = append(x.windowsNodes, n)
		}
	}
	for _, r := range s.RuntimeClasses {
		x.runtimeClasses[r.Meta.Name] = r
	}
	for _, n := range s.Namespaces {
		x.namespaces[n.Meta.Name] = n
	}
	for _, v := range s.Services {
		x.services[v.Meta.Namespace+"/"+v.Meta.Name] = true
	}
	for _, c := range s.ConfigMaps {
		x.configMaps[c.Meta.Namespace+"/"+c.Meta.Name] = c
	}
	for _, p := range s.Pods {
		k := x.controllerKey(p.Namespace, p.Owner)
		x.podsByController[k] = append(x.podsByController[k], p)
		x.placed = append(x.placed, p)
	}
	for _, w := range s.Workloads {
		if w.Pod != nil {
			x.placed = append(x.placed, &snapshot.Pod{Namespace: w.Meta.Namespace, Name: w.Meta.Name,
				NodeName: w.Template.Spec.NodeName, App: w.Template.Metadata.Labels["k8s-app"], Status: *w.Pod})
		}
	}
	if len(s.ClusterConfigs) > 0 {
		x.clusterConfig = s.ClusterConfigs[0]
	}
	return x
}

// controllerKey resolves a pod's owner to the controller a user wrote
// (a Deployment for a ReplicaSet it owns, a CronJob for a Job).
func (x *Index) controllerKey(ns string, o snapshot.OwnerRef) string {
	key := o.Kind + "/" + ns + "/" + o.Name
	if up, ok := x.S.Owners[key]; ok {
		return up.Kind + "/" + ns + "/" + up.Name
	}
	return key
}

// AllPods returns every pod, owned by a controller or bare, in slim form.
func (x *Index) AllPods() []*snapshot.Pod { return x.placed }

// PodsOf returns the pods controlled by a workload.
func (x *Index) PodsOf(w *snapshot.Workload) []*snapshot.Pod {
	return x.podsByController[w.Kind+"/"+w.Meta.Namespace+"/"+w.Meta.Name]
}

// Known reports whether the checks can reason about kind k: listed
// completely from a cluster, or present in the manifests.
func (x *Index) Known(k snapshot.Kind) bool {
	if x.S.Complete(k) {
		return true
	}
	switch k {
	case snapshot.KindNode:
		return len(x.S.Nodes) > 0
	case snapshot.KindRuntimeClass:
		return len(x.S.RuntimeClasses) > 0
	case snapshot.KindDaemonSet:
		for _, w := range x.S.Workloads {
			if w.Kind == "DaemonSet" {
				return true
			}
		}
	}
	return false
}

// WindowsNodes returns the Windows nodes.
func (x *Index) WindowsNodes() []*snapshot.Node { return x.windowsNodes }

// Hybrid reports whether the cluster has, or is set up for, Windows nodes:
// a Windows node exists, or an Installation enables the HNS dataplane.
func (x *Index) Hybrid() bool {
	if len(x.windowsNodes) > 0 {
		return true
	}
	for _, i := range x.S.Installations {
		if i.Spec.CalicoNetwork != nil && i.Spec.CalicoNetwork.WindowsDataplane == "HNS" {
			return true
		}
	}
	return false
}

// ClusterConfig returns kubeadm's ClusterConfiguration, if known.
func (x *Index) ClusterConfig() *snapshot.ClusterConfiguration { return x.clusterConfig }

// ServerVersion is the API server version: discovery when live, else the
// kubeadm ClusterConfiguration's kubernetesVersion.
func (x *Index) ServerVersion() string {
	if x.S.ServerVersion != "" {
		return x.S.ServerVersion
	}
	if x.clusterConfig != nil {
		return x.clusterConfig.KubernetesVersion
	}
	return ""
}

// RuntimeClass returns the RuntimeClass named by a pod spec, if known.
func (x *Index) RuntimeClass(spec *snapshot.PodSpec) *snapshot.RuntimeClass {
	if spec.RuntimeClass() == "" {
		return nil
	}
	return x.runtimeClasses[spec.RuntimeClass()]
}

// selectors returns every node selector a pod must satisfy: its own, and
// its RuntimeClass's scheduling selector.
func (x *Index) selectors(spec *snapshot.PodSpec) []map[string]string {
	out := []map[string]string{spec.NodeSelector}
	if rc := x.RuntimeClass(spec); rc != nil {
		out = append(out, rc.NodeSelector())
	}
	return out
}

// isOSKey reports whether a label key selects the OS: kubernetes.io/os or
// the deprecated beta.kubernetes.io/os, which kubelets still set.
func isOSKey(k string) bool { return k == snapshot.LabelOS || k == snapshot.LabelOSBeta }

func isArchKey(k string) bool { return k == snapshot.LabelArch || k == snapshot.LabelArchBeta }

// windowsArch reports whether a Windows node can have architecture a: the
// architectures of the Windows nodes when known, else amd64 (the only
// architecture Windows Server containers run on).
func (x *Index) windowsArch(a string) bool {
	archs := map[string]bool{}
	for _, n := range x.windowsNodes {
		if v := n.Arch(); v != "" {
			archs[v] = true
		}
	}
	if len(archs) == 0 {
		return a == "amd64"
	}
	return archs[a]
}

// pinsOS reports whether scheduling constraints pin a pod to Windows nodes
// (windows true) or keep it off them (windows false): through a node
// selector (the pod's or its RuntimeClass's), or through every required
// node-affinity term. Both OS labels count, and an architecture no Windows
// node has keeps a pod off Windows.
func (x *Index) pinsOS(spec *snapshot.PodSpec, windows bool) bool {
	for _, sel := range x.selectors(spec) {
		for k, v := range sel {
			switch {
			case isOSKey(k) && (v == "windows") == windows:
				return true
			case k == snapshot.LabelWindowsBuild && windows:
				return true
			case isArchKey(k) && !windows && !x.windowsArch(v):
				return true
			}
		}
	}
	terms := spec.Affinity.RequiredTerms()
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !x.termPinsOS(t, windows) {
			return false
		}
	}
	return true
}

// termPinsOS reports whether one required node-affinity term pins the OS.
func (x *Index) termPinsOS(t snapshot.SelectorTerm, windows bool) bool {
	for _, r := range t.MatchExpressions {
		switch {
		case isOSKey(r.Key) && r.Operator == "In" && len(r.Values) > 0:
			all := true
			for _, v := range r.Values {
				all = all && (v == "windows") == windows
			}
			if all {
				return true
			}
		case isOSKey(r.Key) && r.Operator == "NotIn" && !windows && contains(r.Values, "windows"):
			return true
		case isOSKey(r.Key) && r.Operator == "NotIn" && windows && contains(r.Values, "linux"):
			return true
		case r.Key == snapshot.LabelWindowsBuild && windows && (r.Operator == "In" || r.Operator == "Exists"):
			return true
		case isArchKey(r.Key) && !windows && r.Operator == "In" && len(r.Values) > 0:
			none := true
			for _, v := range r.Values {
				none = none && !x.windowsArch(v)
			}
			if none {
				return true
			}
		}
	}
	return false
}

// OnlyWindows reports whether a pod's scheduling constraints keep it on
// Windows nodes (os=windows or a windows-build selector, directly or
// through its RuntimeClass).
func (x *Index) OnlyWindows(spec *snapshot.PodSpec) bool { return x.pinsOS(spec, true) }

// ExcludesWindows reports whether a pod's scheduling constraints keep it
// off Windows nodes.
func (x *Index) ExcludesWindows(spec *snapshot.PodSpec) bool { return x.pinsOS(spec, false) }

// IsWindowsTemplate reports whether a pod template is meant for Windows:
// spec.os.name windows, Windows-only scheduling, or HostProcess containers.
func (x *Index) IsWindowsTemplate(spec *snapshot.PodSpec) bool {
	return spec.OSName() == "windows" || x.OnlyWindows(spec) || spec.HostProcess()
}

// Matches reports whether a pod's node selectors and required affinity
// admit a node.
func (x *Index) Matches(spec *snapshot.PodSpec, n *snapshot.Node) bool {
	for _, sel := range x.selectors(spec) {
		for k, v := range sel {
			if n.Meta.Labels[k] != v {
				return false
			}
		}
	}
	terms := spec.Affinity.RequiredTerms()
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		if termMatches(t, n.Meta.Labels) {
			return true
		}
	}
	return false
}

func termMatches(t snapshot.SelectorTerm, labels map[string]string) bool {
	for _, r := range t.MatchExpressions {
		v, has := labels[r.Key]
		switch r.Operator {
		case "In":
			if !has || !contains(r.Values, v) {
				return false
			}
		case "NotIn":
			if has && contains(r.Values, v) {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		case "Gt", "Lt":
			if !has || len(r.Values) != 1 {
				return false
			}
			a, err1 := strconv.ParseInt(v, 10, 64)
			b, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil || (r.Operator == "Gt" && a <= b) || (r.Operator == "Lt" && a >= b) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// WindowsTaint is the taint the guide puts on every Windows node.
var WindowsTaint = snapshot.Taint{Key: "os", Value: "windows", Effect: "NoSchedule"}

// temporaryTaints are set and cleared by Kubernetes itself (node
// lifecycle, cordon, pressure, cloud initialisation, autoscaler); a
// workload is not expected to tolerate them.
var temporaryTaints = []string{
	"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
	"node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
	"node.kubernetes.io/network-unavailable", "node.kubernetes.io/out-of-service",
	"node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
	"ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler",
}

// blockingTaints returns the taints that keep pods off a node for good:
// NoSchedule and NoExecute, without the temporary ones.
func blockingTaints(ts []snapshot.Taint) []snapshot.Taint {
	var out []snapshot.Taint
	for _, t := range ts {
		if (t.Effect == "NoSchedule" || t.Effect == "NoExecute") && !contains(temporaryTaints, t.Key) {
			out = append(out, t)
		}
	}
	return out
}

// taintSet is the blocking taints of one Windows node (Node empty when the
// taints are not a real node's).
type taintSet struct {
	Node   string
	Taints []snapshot.Taint
}

// windowsTaintSets returns, for a pod template, the taint sets of the
// Windows nodes it can be scheduled to, and where they come from: the
// Windows nodes in the snapshot (live, or Node objects in the input);
// else the Options' taints (lint --spec); else the guide's taint, assumed.
// From is "" for real nodes.
func (x *Index) windowsTaintSets(spec *snapshot.PodSpec) (sets []taintSet, from string) {
	if len(x.windowsNodes) > 0 {
		for _, n := range x.windowsNodes {
			if x.Matches(spec, n) {
				sets = append(sets, taintSet{Node: n.Meta.Name, Taints: blockingTaints(n.Spec.Taints)})
			}
		}
		return sets, ""
	}
	if x.taintsFrom != "" {
		return []taintSet{{Taints: blockingTaints(x.taints)}}, x.taintsFrom
	}
	return []taintSet{{Taints: []snapshot.Taint{WindowsTaint}}}, assumedTaint
}

// assumedTaint is where the Windows nodes' taint comes from when nothing
// says: a finding names it in a few words, and assumedTaintNote says the
// rest once per run.
const (
	assumedTaint     = "assumed: the guide's taint"
	assumedTaintNote = "assumed: the Windows nodes carry the guide's taint os=windows:NoSchedule, as the input has no Windows Node; pass --spec cluster.yaml to use the cluster's"
)

// tolerationFor writes the toleration that matches taint t exactly.
func tolerationFor(t snapshot.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("{key: %s, operator: Exists, effect: %s}", t.Key, t.Effect)
	}
	return fmt.Sprintf("{key: %s, operator: Equal, value: %s, effect: %s}", t.Key, t.Value, t.Effect)
}

// linuxNodesFor returns the Linux nodes a pod template admits.
func (x *Index) linuxNodesFor(spec *snapshot.PodSpec) []string {
	var out []string
	for _, n := range x.S.Nodes {
		if !n.IsWindows() && x.Matches(spec, n) {
			out = append(out, n.Meta.Name)
		}
	}
	return out
}

// podTolerations returns a pod's tolerations with its RuntimeClass's
// (the RuntimeClass admission plugin merges them into the pod), and
// whether the RuntimeClass is named but not known (its tolerations then
// cannot be read).
func (x *Index) podTolerations(spec *snapshot.PodSpec) (tols []snapshot.Toleration, unknownRC bool) {
	tols = append(tols, spec.Tolerations...)
	if spec.RuntimeClass() == "" {
		return tols, false
	}
	rc := x.RuntimeClass(spec)
	if rc == nil {
		return tols, true
	}
	if rc.Scheduling != nil {
		tols = append(tols, rc.Scheduling.Tolerations...)
	}
	return tols, false
}

// untolerated returns the taints of ts that no toleration matches.
func untolerated(tols []snapshot.Toleration, ts []snapshot.Taint) []snapshot.Taint {
	var out []snapshot.Taint
	for _, t := range ts {
		if _, ok := Tolerates(tols, t); !ok {
			out = append(out, t)
		}
	}
	return out
}

// taintString is "key=value:Effect".
func taintString(t snapshot.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// nearMiss explains why the toleration closest to taint t does not match
// it, or returns "" when no toleration comes close (same key up to case or
// prefix, or same value).
func nearMiss(tols []snapshot.Toleration, t snapshot.Taint) string {
	best, bestScore := "", 100
	for _, tol := range tols {
		var why []string
		score := 0
		keyRelated := false
		switch {
		case tol.Key == "" && tol.Operator == "Exists":
			keyRelated = true
		case tol.Key == t.Key:
			keyRelated = true
		case strings.EqualFold(tol.Key, t.Key):
			keyRelated = true
			why = append(why, fmt.Sprintf("key %q is not %q (taints match case-sensitively)", tol.Key, t.Key))
			score++
		case lastSegment(tol.Key) == lastSegment(t.Key) || strings.EqualFold(lastSegment(tol.Key), lastSegment(t.Key)):
			keyRelated = true
			why = append(why, fmt.Sprintf("key %q is another key than the taint's %q", tol.Key, t.Key))
			score++
		case tol.Key == "":
			why = append(why, "an empty key matches only with operator Exists")
			score += 2
		}
		if tol.Operator == "" || tol.Operator == "Equal" {
			switch {
			case tol.Value == t.Value:
			case strings.EqualFold(tol.Value, t.Value):
				why = append(why, fmt.Sprintf("value %q is not %q (case-sensitive)", tol.Value, t.Value))
				score++
			default:
				why = append(why, fmt.Sprintf("value %q is not the taint's %q", tol.Value, t.Value))
				score++
			}
		}
		if tol.Effect != "" && tol.Effect != t.Effect {
			why = append(why, fmt.Sprintf("effect %s does not cover %s", tol.Effect, t.Effect))
			score++
		}
		if !keyRelated || len(why) == 0 || score >= bestScore {
			continue
		}
		best, bestScore = describeToleration(tol)+": "+strings.Join(why, ", "), score
	}
	return best
}

func lastSegment(k string) string {
	if i := strings.LastIndex(k, "/"); i >= 0 {
		return k[i+1:]
	}
	return k
}

// Tolerates reports whether a toleration matches a taint (the scheduler's
// rule), and returns it.
func Tolerates(tols []snapshot.Toleration, t snapshot.Taint) (snapshot.Toleration, bool) {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key == "" && tol.Operator != "Exists" {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case "Exists":
			return tol, true
		case "", "Equal":
			if tol.Value == t.Value {
				return tol, true
			}
		}
	}
	return snapshot.Toleration{}, false
}

// describeToleration renders a toleration the way it is written.
func describeToleration(t snapshot.Toleration) string {
	var p []string
	if t.Key != "" {
		p = append(p, "key: "+t.Key)
	}
	op := t.Operator
	if op == "" {
		op = "Equal"
	}
	p = append(p, "operator: "+op)
	if t.Value != "" {
		p = append(p, "value: "+t.Value)
	}
	if t.Effect != "" {
		p = append(p, "effect: "+t.Effect)
	}
	return "{" + strings.Join(p, ", ") + "}"
}

// PodSecurityLevel returns a namespace's enforced Pod Security level, and
// whether the namespace is known.
func (x *Index) PodSecurityLevel(ns string) (string, bool) {
	n, ok := x.namespaces[ns]
	if !ok {
		return "", false
	}
	if l := n.Meta.Labels["pod-security.kubernetes.io/enforce"]; l != "" {
		return l, true
	}
	return "privileged", true
}

// HasService reports whether Service ns/name is in the snapshot.
func (x *Index) HasService(ns, name string) bool { return x.services[ns+"/"+name] }

// HasNamespace reports whether a namespace of that name is in the snapshot.
func (x *Index) HasNamespace(ns string) bool {
	_, ok := x.namespaces[ns]
	return ok
}

// ConfigMap returns ConfigMap ns/name, if in the snapshot.
func (x *Index) ConfigMap(ns, name string) *snapshot.ConfigMap { return x.configMaps[ns+"/"+name] }

// Node returns a node by name.
func (x *Index) Node(name string) *snapshot.Node { return x.nodes[name] }

// workloadLabel is "DaemonSet monitoring/ne" for messages.
func workloadLabel(w *snapshot.Workload) string {
	if w.Meta.Namespace == "" {
		return w.Kind + " " + w.Meta.Name
	}
	return w.Kind + " " + w.Meta.Namespace + "/" + w.Meta.Name
}

// names joins up to max names and says how many more.
func names(xs []string, max int) string {
	sort.Strings(xs)
	if len(xs) <= max {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:max], ", "), len(xs)-max)
}
