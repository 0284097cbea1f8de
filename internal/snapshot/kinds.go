package snapshot

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/manifest"
)

// kindEntry is one kind the checks read: how a manifest names it, where it
// is listed live, and how one object of it is stored.
type kindEntry struct {
	kind Kind
	// groups are the API groups whose apiVersion names the kind by its own
	// name ("" is the core group).
	groups []string
	// aliases are other names of the kind in a group.
	aliases []groupKind
	// resources are where the kind is listed live, tried in order while
	// the previous one is not served; none for a kind read another way.
	resources []resource
	// decode stores one object of the kind.
	decode decodeFunc
}

type groupKind struct{ group, kind string }

// decodeFunc decodes one object of kind k from JSON and stores it with the
// identity and origin id. On error nothing is stored.
type decodeFunc func(s *Snapshot, k Kind, data []byte, id identity) error

// identity is what every stored object carries besides its own fields.
type identity struct {
	apiVersion, kind string
	src              Source
}

// fill sets o's identity and origin, and drops every annotation but the
// ignore annotation.
func (id *identity) fill(o *Object) {
	o.APIVersion, o.Kind, o.Source = id.apiVersion, id.kind, id.src
	o.Meta.Annotations = keepIgnore(o.Meta.Annotations)
}

// kindTable is every kind the checks read, in one ordered table: KindOf,
// the live lister (resourcesFor) and AddKind read it, and nothing else
// decides which kinds exist. It is never modified.
var kindTable = []kindEntry{
	{kind: KindNode, groups: coreGroup, resources: res("v1", "nodes", false), decode: decodeNode},
	{kind: KindNamespace, groups: coreGroup, resources: res("v1", "namespaces", false),
		decode: into(func(s *Snapshot) *[]*Namespace { return &s.Namespaces }, nil)},
	{kind: KindPod, groups: coreGroup, resources: res("v1", "pods", true), decode: decodePod},
	{kind: KindService, groups: coreGroup, resources: res("v1", "services", true),
		decode: into(func(s *Snapshot) *[]*Service { return &s.Services }, func(v *Service) { v.Meta.Labels = nil })},
	{kind: KindConfigMap, groups: coreGroup, resources: res("v1", "configmaps", true), decode: decodeConfigMap},
	// extensions/v1beta1: removed from the API in 1.16, still in old
	// manifests; the pod template is where it always was.
	{kind: KindDaemonSet, groups: appsGroups, resources: res("apps/v1", "daemonsets", true), decode: decodeWorkload},
	{kind: KindDeployment, groups: appsGroups, resources: res("apps/v1", "deployments", true), decode: decodeWorkload},
	{kind: KindStatefulSet, groups: []string{"apps"}, resources: res("apps/v1", "statefulsets", true), decode: decodeWorkload},
	{kind: KindReplicaSet, groups: appsGroups, resources: res("apps/v1", "replicasets", true), decode: decodeWorkload},
	{kind: KindJob, groups: []string{"batch"}, resources: res("batch/v1", "jobs", true), decode: decodeWorkload},
	{kind: KindCronJob, groups: []string{"batch"}, resources: res("batch/v1", "cronjobs", true), decode: decodeWorkload},
	{kind: KindRuntimeClass, groups: []string{"node.k8s.io"}, resources: res("node.k8s.io/v1", "runtimeclasses", false),
		decode: into(func(s *Snapshot) *[]*RuntimeClass { return &s.RuntimeClasses }, nil)},
	{kind: KindCSR, groups: []string{"certificates.k8s.io"}, resources: res("certificates.k8s.io/v1", "certificatesigningrequests", false),
		decode: into(func(s *Snapshot) *[]*CSR { return &s.CSRs }, nil)},
	{kind: KindInstallation, groups: []string{"operator.tigera.io"}, resources: res("operator.tigera.io/v1", "installations", false),
		decode: into(func(s *Snapshot) *[]*Installation { return &s.Installations }, nil)},
	{kind: KindTigeraStatus, groups: []string{"operator.tigera.io"}, resources: res("operator.tigera.io/v1", "tigerastatuses", false),
		decode: into(func(s *Snapshot) *[]*TigeraStatus { return &s.TigeraStatuses }, nil)},
	// Calico: the projectcalico.org/v3 native CRDs, then the older
	// crd.projectcalico.org/v1.
	{kind: KindIPPool, groups: calicoGroups,
		resources: []resource{{"projectcalico.org/v3", "ippools", false}, {"crd.projectcalico.org/v1", "ippools", false}},
		decode:    into(func(s *Snapshot) *[]*IPPool { return &s.IPPools }, nil)},
	// crd.projectcalico.org/v1 names it IPAMConfig (resource ipamconfigs),
	// the manifests of Calico before 3.30 with it.
	{kind: KindIPAMConfiguration, groups: calicoGroups, aliases: []groupKind{{"crd.projectcalico.org", "IPAMConfig"}},
		resources: []resource{{"projectcalico.org/v3", "ipamconfigurations", false}, {"crd.projectcalico.org/v1", "ipamconfigs", false}},
		decode:    into(func(s *Snapshot) *[]*IPAMConfiguration { return &s.IPAMConfigs }, nil)},
	{kind: KindFelixConfiguration, groups: calicoGroups,
		resources: []resource{{"projectcalico.org/v3", "felixconfigurations", false}, {"crd.projectcalico.org/v1", "felixconfigurations", false}},
		decode:    into(func(s *Snapshot) *[]*FelixConfiguration { return &s.FelixConfigs }, nil)},
	// Live, the ClusterConfiguration comes from the kubeadm-config
	// ConfigMap (decodeConfigMap); in files it may also stand alone.
	{kind: KindClusterConfiguration, groups: []string{"kubeadm.k8s.io"},
		decode: into(func(s *Snapshot) *[]*ClusterConfiguration { return &s.ClusterConfigs }, nil)},
}

var (
	coreGroup    = []string{""}
	appsGroups   = []string{"apps", "extensions"}
	calicoGroups = []string{"projectcalico.org", "crd.projectcalico.org"}
)

func res(groupVersion, plural string, namespaced bool) []resource {
	return []resource{{groupVersion, plural, namespaced}}
}

// entryFor returns the table's entry of k, or nil.
func entryFor(k Kind) *kindEntry {
	for i := range kindTable {
		if kindTable[i].kind == k {
			return &kindTable[i]
		}
	}
	return nil
}

// KindOf maps apiVersion and kind to the Kind the checks know, or "".
func KindOf(apiVersion, kind string) Kind {
	group := ""
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	for i := range kindTable {
		e := &kindTable[i]
		if kind == string(e.kind) {
			for _, g := range e.groups {
				if g == group {
					return e.kind
				}
			}
		}
		for _, a := range e.aliases {
			if a.group == group && a.kind == kind {
				return e.kind
			}
		}
	}
	return ""
}

// resourcesFor returns where kind k is listed, in the order to try.
func resourcesFor(k Kind) []resource {
	if e := entryFor(k); e != nil {
		return e.resources
	}
	return nil
}

// AddKind is Add for a caller that knows the kind (list items from the API
// carry none). An object of kind "" is counted in Other and dropped. On
// error nothing is stored, but for a *TypeError marked Kept: a pod or pod
// template with a container field of the wrong type is stored without
// that field.
func (s *Snapshot) AddKind(k Kind, apiVersion, kind string, data []byte, src Source) error {
	if k == "" {
		s.locked(func() { s.Other++ })
		return nil
	}
	e := entryFor(k)
	if e == nil {
		return fmt.Errorf("internal: no decoder for kind %s", k)
	}
	return e.decode(s, k, data, identity{apiVersion, kind, src})
}

// decodeJSON decodes data into v (a pointer to a zero value); a field of
// the wrong type is a *TypeError, v holding the rest of the object. It decodes with github.com/go-json-experiment/json
// (the Go project's encoding/json/v2, which encoding/json itself runs on
// under GOEXPERIMENT=jsonv2) set to encoding/json's semantics: about twice
// as fast, mostly because it does not scan the whole input once before
// decoding it. On any error, v is zeroed and decoded again with
// encoding/json, so errors and what a failed document stores are
// encoding/json's. TestDecodeJSONSame, TestDecodeJSONRepository and
// FuzzDecodeJSON check that decodeJSON gives encoding/json's value and
// error.
func decodeJSON(data []byte, v any) error {
	if err := unmarshalJSON(data, v); err != nil {
		return fieldError(data, err)
	}
	return nil
}

// unmarshalJSON is json.Unmarshal, value and error, through the faster
// decoder: encoding/json decodes again, into a zeroed v, only when the
// faster one fails.
func unmarshalJSON(data []byte, v any) error {
	if jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1()) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return json.Unmarshal(data, v)
}

// object is how into reaches the Object every stored type embeds.
func (o *Object) object() *Object { return o }

// stored is a pointer to a type that embeds Object.
type stored[T any] interface {
	*T
	object() *Object
}

// into decodes an object into a T, lets keep trim it (nil keeps it
// whole) and appends it to the snapshot's list that list returns.
func into[T any, P stored[T]](list func(*Snapshot) *[]P, keep func(P)) decodeFunc {
	return func(s *Snapshot, _ Kind, data []byte, id identity) error {
		v := P(new(T))
		if err := decodeJSON(data, v); err != nil {
			return err
		}
		id.fill(v.object())
		if keep != nil {
			keep(v)
		}
		s.locked(func() {
			l := list(s)
			*l = append(*l, v)
		})
		return nil
	}
}

// decodeNode stores a node and, when the snapshot keeps slim pods, notes
// whether it runs Windows.
func decodeNode(s *Snapshot, _ Kind, data []byte, id identity) error {
	v := new(Node)
	if err := decodeJSON(data, v); err != nil {
		return err
	}
	id.fill(&v.Object)
	// Only the Ready condition is read (HC203); the pressure conditions
	// and their messages were a third of a node's size.
	var ready []Condition
	if c := v.Condition("Ready"); c != nil {
		ready = []Condition{*c}
	}
	v.Status.Conditions = ready
	s.locked(func() {
		s.Nodes = append(s.Nodes, v)
		if s.slimPods {
			s.nodeWindows[v.Meta.Name] = v.IsWindows()
		}
	})
	return nil
}

// decodeConfigMap keeps the data of the ConfigMaps the checks read whole
// and, for kubeadm-config, the ClusterConfiguration inside; of the others
// only the candidate dotted host names in the values.
func decodeConfigMap(s *Snapshot, _ Kind, data []byte, id identity) error {
	var v ConfigMap
	if err := decodeJSON(data, &v); err != nil {
		return err
	}
	id.fill(&v.Object)
	v.Meta.Labels = nil
	ns, name := v.Meta.Namespace, v.Meta.Name
	var cc *ClusterConfiguration
	switch {
	case ns == KubeadmConfigNamespace && name == KubeadmConfigName:
		if raw := v.Data["ClusterConfiguration"]; raw != "" {
			cc = &ClusterConfiguration{}
			// sigs.k8s.io/yaml expands aliases into JSON: the text may
			// grow through them by at most its own size.
			limit := int64(min(len(raw), manifest.MaxAliasExpansionPerDocument))
			if err := manifest.CheckYAML([]byte(raw), &manifest.AliasBudget{PerDocument: limit, Total: limit}); err != nil {
				return fmt.Errorf("data.ClusterConfiguration: %w", err)
			}
			if err := yaml.Unmarshal([]byte(raw), cc); err != nil {
				return fmt.Errorf("data.ClusterConfiguration: %w", err)
			}
			cc.Object = v.Object
		}
	case ns == ServicesEndpointNS && name == ServicesEndpointName:
	default:
		v.Hosts = DottedHostsIn(v.Data)
		v.Data = nil
	}
	s.locked(func() {
		s.ConfigMaps = append(s.ConfigMaps, &v)
		if cc != nil {
			s.ClusterConfigs = append(s.ClusterConfigs, cc)
		}
	})
	return nil
}

// ownedPod is what the checks read of a pod a controller owns: its name
// and namespace, its k8s-app label, its owner, its node and its status.
// Decoding a pod into it skips the rest (most of a pod: its spec, its
// other labels and annotations) without building anything of it.
type ownedPod struct {
	Metadata struct {
		Name            string     `json:"name"`
		Namespace       string     `json:"namespace,omitempty"`
		Labels          appLabel   `json:"labels,omitempty"`
		OwnerReferences []OwnerRef `json:"ownerReferences,omitempty"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName,omitempty"`
	} `json:"spec"`
	Status PodStatus `json:"status"`
}

// appLabel is the k8s-app label of a labels object; the other labels are
// skipped. Anything but an object (or null) of which k8s-app is a string
// (or null) is an error, as it is for a map of strings.
type appLabel string

// UnmarshalJSONFrom reads a labels object, keeping k8s-app (the last one,
// as a map keeps the last of two equal keys).
func (a *appLabel) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		return nil
	case '{':
	default:
		return fmt.Errorf("labels: want an object, got %v", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if name.String() != "k8s-app" {
			if err := dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		var v string
		if err := jsonv2.UnmarshalDecode(dec, &v); err != nil {
			return err
		}
		*a = appLabel(v)
	}
	_, err = dec.ReadToken()
	return err
}

// decodeOwnedPod decodes data as a pod a controller owns; ok is false when
// it is not one, or when what it reads does not decode.
func decodeOwnedPod(data []byte) (p *Pod, ok bool) {
	var op ownedPod
	if jsonv2.Unmarshal(data, &op, jsonv1.DefaultOptionsV1()) != nil {
		return nil, false
	}
	o := Meta{OwnerReferences: op.Metadata.OwnerReferences}.Controller()
	if o == nil {
		return nil, false
	}
	return &Pod{Namespace: op.Metadata.Namespace, Name: op.Metadata.Name, NodeName: op.Spec.NodeName, Owner: *o,
		App: string(op.Metadata.Labels), Status: op.Status}, true
}

// decodePod stores a pod a controller owns as a Pod (its owner's status
// is what the checks read) and a bare pod as a Workload of its own. Of a
// pod a controller owns only what the checks read is decoded
// (decodeOwnedPod): a field of the wrong type elsewhere in it is not an
// error. A bare pod, or a pod whose owned part does not decode, is
// decoded whole.
func decodePod(s *Snapshot, _ Kind, data []byte, id identity) error {
	if sp, ok := decodeOwnedPod(data); ok {
		s.addOwnedPod(sp)
		return nil
	}
	// A pod a controller owns leaves nothing behind in p but what sp
	// copies out of it, so p is zeroed and decodes the next pod.
	p, _ := s.rawPods.Get().(*rawPod)
	if p == nil {
		p = new(rawPod)
	}
	err := decodeJSON(data, p)
	if err != nil && !keepPartial(err) {
		*p = rawPod{}
		s.rawPods.Put(p)
		return err
	}
	id.fill(&p.Object)
	if o := p.Meta.Controller(); o != nil {
		sp := &Pod{Namespace: p.Meta.Namespace, Name: p.Meta.Name, NodeName: p.Spec.NodeName, Owner: *o,
			App: p.Meta.Labels["k8s-app"], Status: p.Status}
		*p = rawPod{}
		s.rawPods.Put(p)
		s.addOwnedPod(sp)
		return err
	}
	// A bare pod is kept: its Workload points into p.
	w := &Workload{Object: p.Object, Pod: &p.Status}
	w.Template.Metadata.Labels = p.Meta.Labels
	w.Template.Spec = p.Spec
	s.locked(func() { s.Workloads = append(s.Workloads, w) })
	return err
}

// addOwnedPod keeps a pod a controller owns, or counts it as dropped
// (SlimPods).
func (s *Snapshot) addOwnedPod(sp *Pod) {
	s.locked(func() {
		if s.keepPod(sp) {
			s.Pods = append(s.Pods, sp)
		} else {
			s.PodsDropped++
		}
	})
}

// decodeWorkload stores a workload with its pod template; a ReplicaSet a
// Deployment owns and a Job a CronJob owns are kept only as owner links,
// so a pod is reported under the controller a user wrote.
func decodeWorkload(s *Snapshot, k Kind, data []byte, id identity) error {
	var r rawWorkload
	err := decodeJSON(data, &r)
	if err != nil && !keepPartial(err) {
		return err
	}
	id.fill(&r.Object)
	if o := r.Meta.Controller(); o != nil && ((k == KindReplicaSet && o.Kind == "Deployment") || (k == KindJob && o.Kind == "CronJob")) {
		key := string(k) + "/" + r.Meta.Namespace + "/" + r.Meta.Name
		s.locked(func() { s.Owners[key] = *o })
		return err
	}
	w := &Workload{Object: r.Object, Status: r.Status}
	switch {
	case r.Spec.Template != nil:
		w.Template = *r.Spec.Template
	case r.Spec.JobTemplate != nil:
		w.Template = r.Spec.JobTemplate.Spec.Template
	}
	w.Template.Metadata.Annotations = keepIgnore(w.Template.Metadata.Annotations)
	// No check reads a controller's labels or its template's (a bare pod's
	// k8s-app label is read: decodePod keeps those): two maps per
	// workload, 10% of doctor's memory at 7,500 Deployments.
	w.Meta.Labels, w.Template.Metadata.Labels = nil, nil
	s.locked(func() { s.Workloads = append(s.Workloads, w) })
	return err
}
