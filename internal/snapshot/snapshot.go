package snapshot

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Snapshot is the set of objects the checks read.
type Snapshot struct {
	// Live is true for a snapshot listed from a cluster: a kind in Listed is
	// then complete, so "X does not exist" can be concluded. From files
	// nothing is complete.
	Live bool
	// ServerVersion is the API server's version ("v1.37.2"), from discovery
	// when live, else from a kubeadm ClusterConfiguration.
	ServerVersion string

	Nodes          []*Node
	Namespaces     []*Namespace
	Workloads      []*Workload
	Pods           []*Pod
	Services       []*Service
	ConfigMaps     []*ConfigMap
	RuntimeClasses []*RuntimeClass
	CSRs           []*CSR
	Installations  []*Installation
	TigeraStatuses []*TigeraStatus
	IPPools        []*IPPool
	IPAMConfigs    []*IPAMConfiguration
	FelixConfigs   []*FelixConfiguration
	ClusterConfigs []*ClusterConfiguration
	// Owners maps "Kind/namespace/name" of ReplicaSets owned by Deployments
	// and Jobs owned by CronJobs to their owner, so a pod is reported under
	// the controller a user wrote.
	Owners map[string]OwnerRef
	// Other counts objects of kinds no check reads (custom kinds pass
	// through).
	Other int
	// PodsDropped counts the pods a controller owns that a live read did
	// not keep in Pods because no check reads them (see SlimPods).
	PodsDropped int

	// Listed holds the kinds that were listed completely (live).
	Listed map[Kind]bool
	// Unavailable holds, for kinds that could not be read, the reason
	// (forbidden, CRD not installed).
	Unavailable map[Kind]string
	// Diagnostics are problems with the input files (file loader only):
	// documents that cannot be read or are not Kubernetes objects, in
	// input order.
	Diagnostics []Diagnostic

	// slimPods: keep only the owned pods a check can read (SlimPods).
	slimPods bool
	// nodeWindows maps the names of the nodes decoded so far to whether
	// they run Windows (with slimPods).
	nodeWindows map[string]bool

	mu sync.Mutex
	// rawPods are decoding structs for pods, reused (decodePod).
	rawPods sync.Pool
	// noWatchList is set once the server refused a watch-list stream.
	noWatchList atomic.Bool
}

// New returns an empty snapshot.
func New() *Snapshot {
	return &Snapshot{Owners: map[string]OwnerRef{}, Listed: map[Kind]bool{}, Unavailable: map[Kind]string{}}
}

// Complete reports whether every object of kind k is in the snapshot.
func (s *Snapshot) Complete(k Kind) bool { return s.Live && s.Listed[k] }

// Len returns the number of objects held.
func (s *Snapshot) Len() int {
	return len(s.Nodes) + len(s.Namespaces) + len(s.Workloads) + len(s.Pods) + len(s.Services) +
		len(s.ConfigMaps) + len(s.RuntimeClasses) + len(s.CSRs) + len(s.Installations) + len(s.TigeraStatuses) +
		len(s.IPPools) + len(s.IPAMConfigs) + len(s.FelixConfigs) + len(s.ClusterConfigs) + len(s.Owners) + s.Other + s.PodsDropped
}

// SlimPods makes the snapshot keep, of the pods a controller owns, only
// those a check can read: a pod with a k8s-app label (CoreDNS and Calico
// pods), a pod that is not ready (a container not ready or waiting), and
// a pod on a Windows node (pods stuck there, image pulls that found no
// Windows manifest). The others, most pods of a healthy cluster, are
// counted in PodsDropped. A pod on a node not decoded yet is kept until
// DropUnreadPods, which the caller runs once every kind is in; pods
// already held are dropped there too. Both loaders use it (doctor's live
// read, and lint's unless FileOptions.KeepAllPods), so that their memory
// does not grow with the healthy pods.
// TestSlimPodsSameFindings (internal/checks) requires every check's
// findings to be the same either way on every check's fixtures.
func (s *Snapshot) SlimPods() {
	s.locked(func() {
		s.slimPods = true
		s.nodeWindows = map[string]bool{}
		for _, n := range s.Nodes {
			s.nodeWindows[n.Meta.Name] = n.IsWindows()
		}
	})
}

// DropUnreadPods drops, after SlimPods, the kept pods no check reads now
// that every node is in: those on a node that is not Windows or that the
// snapshot does not have (the checks ignore pods on unknown nodes).
func (s *Snapshot) DropUnreadPods() {
	if !s.slimPods {
		return
	}
	s.locked(func() {
		kept := s.Pods[:0]
		for _, p := range s.Pods {
			if p.readBySomeCheck() || s.nodeWindows[p.NodeName] {
				kept = append(kept, p)
			} else {
				s.PodsDropped++
			}
		}
		clear(s.Pods[len(kept):])
		s.Pods = slices.Clip(kept)
	})
}

// readBySomeCheck reports whether a check reads the pod wherever it runs.
func (p *Pod) readBySomeCheck() bool {
	return p.App != "" || !p.Status.Ready()
}

// keepPod reports whether a pod just decoded is kept (under s.mu).
func (s *Snapshot) keepPod(p *Pod) bool {
	if !s.slimPods || p.readBySomeCheck() {
		return true
	}
	windows, known := s.nodeWindows[p.NodeName]
	return windows || !known
}

// Well-known ConfigMaps whose data the checks read whole.
const (
	KubeadmConfigNamespace = "kube-system"
	KubeadmConfigName      = "kubeadm-config"
	ServicesEndpointNS     = "tigera-operator"
	ServicesEndpointName   = "kubernetes-services-endpoint"
)

// Add decodes one object from JSON and stores it. apiVersion and kind may be
// empty, then they are read from the object. An object of a kind no check
// reads is counted and dropped.
func (s *Snapshot) Add(data []byte, src Source) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(data, &tm); err != nil {
		return err
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return fmt.Errorf("object has no apiVersion or kind")
	}
	return s.AddKind(KindOf(tm.APIVersion, tm.Kind), tm.APIVersion, tm.Kind, data, src)
}

func (s *Snapshot) addDiagnostic(d Diagnostic) {
	s.locked(func() { s.Diagnostics = append(s.Diagnostics, d) })
}

func (s *Snapshot) locked(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
}

// keepIgnore drops every annotation but the ignore annotation: annotations
// (last-applied-configuration above all) are most of an object's size.
func keepIgnore(a map[string]string) map[string]string {
	v, ok := a[IgnoreAnnotation]
	if !ok {
		return nil
	}
	return map[string]string{IgnoreAnnotation: v}
}

// compareObjects is the total order of objects: namespace, name, kind,
// apiVersion, then where they were read (file, line, place in the input).
func compareObjects(a, b *Object) int {
	return cmp.Or(
		cmp.Compare(a.Meta.Namespace, b.Meta.Namespace),
		cmp.Compare(a.Meta.Name, b.Meta.Name),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.APIVersion, b.APIVersion),
		cmp.Compare(a.Source.File, b.Source.File),
		cmp.Compare(a.Source.Line, b.Source.Line),
		cmp.Compare(a.Source.order, b.Source.order),
	)
}

func sortObjects[T any](xs []T, obj func(T) *Object) {
	slices.SortStableFunc(xs, func(a, b T) int { return compareObjects(obj(a), obj(b)) })
}

// Sort puts every list in one total order, so that reports do not depend
// on the order objects arrived in (documents are decoded in parallel, kinds
// listed concurrently). ClusterConfigurations keep the input's order: the
// checks use the first.
func (s *Snapshot) Sort() {
	sortObjects(s.Nodes, func(x *Node) *Object { return &x.Object })
	sortObjects(s.Namespaces, func(x *Namespace) *Object { return &x.Object })
	sortObjects(s.Workloads, func(x *Workload) *Object { return &x.Object })
	sortObjects(s.Services, func(x *Service) *Object { return &x.Object })
	sortObjects(s.ConfigMaps, func(x *ConfigMap) *Object { return &x.Object })
	sortObjects(s.RuntimeClasses, func(x *RuntimeClass) *Object { return &x.Object })
	sortObjects(s.CSRs, func(x *CSR) *Object { return &x.Object })
	sortObjects(s.Installations, func(x *Installation) *Object { return &x.Object })
	sortObjects(s.TigeraStatuses, func(x *TigeraStatus) *Object { return &x.Object })
	sortObjects(s.IPPools, func(x *IPPool) *Object { return &x.Object })
	sortObjects(s.IPAMConfigs, func(x *IPAMConfiguration) *Object { return &x.Object })
	sortObjects(s.FelixConfigs, func(x *FelixConfiguration) *Object { return &x.Object })
	slices.SortStableFunc(s.Pods, func(a, b *Pod) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.NodeName, b.NodeName),
			cmp.Compare(a.Owner.Kind, b.Owner.Kind),
			cmp.Compare(a.Owner.Name, b.Owner.Name),
			cmp.Compare(a.App, b.App),
		)
	})
	slices.SortStableFunc(s.ClusterConfigs, func(a, b *ClusterConfiguration) int {
		return cmp.Or(
			cmp.Compare(a.Source.order, b.Source.order),
			cmp.Compare(a.Source.Line, b.Source.Line),
			compareObjects(&a.Object, &b.Object),
		)
	})
}

// dottedHost matches host names of the form name.namespace (optionally
// followed by .svc), standing alone or after a scheme: the form the Windows
// DNS client never completes with search suffixes. What follows the match is
// checked by hostEnds.
var dottedHost = regexp.MustCompile(`(?:^|[^A-Za-z0-9.\-_@])([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.svc)?)`)

// hostEnds reports whether rest (what follows a candidate host) ends the
// host name: nothing, a separator, or a port followed by either.
func hostEnds(rest string) bool {
	if rest == "" {
		return true
	}
	if rest[0] == ':' {
		i := 1
		for i < len(rest) && i <= 5 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
		if rest == "" {
			return true
		}
	}
	return strings.ContainsRune("/ \t\r\n\"',;?#)]}", rune(rest[0]))
}

// DottedHosts returns the candidate dotted short host names in s.
func DottedHosts(s string) []string {
	if !strings.Contains(s, ".") {
		return nil
	}
	var out []string
	for _, m := range dottedHost.FindAllStringSubmatchIndex(s, -1) {
		if hostEnds(s[m[3]:]) {
			out = append(out, s[m[2]:m[3]])
		}
	}
	return out
}

// DottedHostsIn returns the candidate hosts in a ConfigMap's data, by key.
func DottedHostsIn(data map[string]string) []KeyedString {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []KeyedString
	for _, k := range keys {
		for _, h := range DottedHosts(data[k]) {
			out = append(out, KeyedString{Key: k, Value: h})
		}
	}
	return out
}
