package snapshot

import (
	"encoding/json"
	"slices"
	"sort"
	"time"
)

// Toleration is a pod toleration.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// SelectorRequirement is a node selector requirement.
type SelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// SelectorTerm is one ORed term of a required node affinity.
type SelectorTerm struct {
	MatchExpressions []SelectorRequirement `json:"matchExpressions,omitempty"`
}

// Affinity is the node-affinity part of a pod's affinity.
type Affinity struct {
	NodeAffinity *struct {
		Required *struct {
			NodeSelectorTerms []SelectorTerm `json:"nodeSelectorTerms"`
		} `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	} `json:"nodeAffinity,omitempty"`
}

// RequiredTerms returns the required node-affinity terms (ORed).
func (a *Affinity) RequiredTerms() []SelectorTerm {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.Required == nil {
		return nil
	}
	return a.NodeAffinity.Required.NodeSelectorTerms
}

// Fields records which keys of a JSON object (a security context) are set
// to a non-null value: the checks need to know that a field is set, not
// what it holds, except windowsOptions, whose value is kept. A sorted list
// of keys rather than a map: a small map costs ~300 bytes, and doctor
// keeps two or three per workload (bench/README.md).
type Fields struct {
	keys           []string
	windowsOptions json.RawMessage
}

// securityContextKeys are the field names of Kubernetes' PodSecurityContext
// and SecurityContext: a key among them is stored as this list's string,
// not as a copy of its own.
var securityContextKeys = []string{
	"allowPrivilegeEscalation", "appArmorProfile", "capabilities", "fsGroup", "fsGroupChangePolicy",
	"privileged", "procMount", "readOnlyRootFilesystem", "runAsGroup", "runAsNonRoot", "runAsUser",
	"seLinuxChangePolicy", "seLinuxOptions", "seccompProfile", "supplementalGroups",
	"supplementalGroupsPolicy", "sysctls", "windowsOptions",
}

// UnmarshalJSON keeps the keys with non-null values. It decodes through
// unmarshalJSON (the faster decoder, encoding/json on an error) and
// returns encoding/json's error as it is.
func (f *Fields) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := unmarshalJSON(b, &m); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	var wo json.RawMessage
	for k, v := range m {
		if string(v) == "null" {
			continue
		}
		if i, ok := slices.BinarySearch(securityContextKeys, k); ok {
			k = securityContextKeys[i]
		}
		keys = append(keys, k)
		if k == "windowsOptions" {
			wo = v
		}
	}
	sort.Strings(keys)
	*f = Fields{keys: keys, windowsOptions: wo}
	return nil
}

// Has reports whether key is set.
func (f Fields) Has(key string) bool {
	_, ok := slices.BinarySearch(f.keys, key)
	return ok
}

// Keys returns the set keys, sorted.
func (f Fields) Keys() []string { return slices.Clone(f.keys) }

// HostProcess reports windowsOptions.hostProcess: true in a security context.
func (f Fields) HostProcess() bool {
	if f.windowsOptions == nil {
		return false
	}
	var w struct {
		HostProcess *bool `json:"hostProcess"`
	}
	if json.Unmarshal(f.windowsOptions, &w) != nil || w.HostProcess == nil {
		return false
	}
	return *w.HostProcess
}

// EnvVar is a container environment variable.
type EnvVar struct {
	Name      string `json:"name"`
	Value     string `json:"value,omitempty"`
	ValueFrom *struct {
		ConfigMapKeyRef *struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"configMapKeyRef,omitempty"`
	} `json:"valueFrom,omitempty"`
}

// Container is the part of a container the checks read.
type Container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image,omitempty"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Env     []EnvVar `json:"env,omitempty"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `json:"name"`
		} `json:"configMapRef,omitempty"`
	} `json:"envFrom,omitempty"`
	SecurityContext Fields `json:"securityContext,omitempty"`
}

// Volume is the part of a volume the checks read: ConfigMap sources.
type Volume struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap,omitempty"`
	Projected *struct {
		Sources []struct {
			ConfigMap *struct {
				Name string `json:"name"`
			} `json:"configMap,omitempty"`
		} `json:"sources,omitempty"`
	} `json:"projected,omitempty"`
}

// PodSpec is the part of a pod spec the checks read.
type PodSpec struct {
	NodeName         string            `json:"nodeName,omitempty"`
	NodeSelector     map[string]string `json:"nodeSelector,omitempty"`
	Affinity         *Affinity         `json:"affinity,omitempty"`
	Tolerations      []Toleration      `json:"tolerations,omitempty"`
	RuntimeClassName *string           `json:"runtimeClassName,omitempty"`
	OS               *struct {
		Name string `json:"name"`
	} `json:"os,omitempty"`
	SecurityContext       Fields      `json:"securityContext,omitempty"`
	HostPID               bool        `json:"hostPID,omitempty"`
	HostIPC               bool        `json:"hostIPC,omitempty"`
	HostUsers             *bool       `json:"hostUsers,omitempty"`
	ShareProcessNamespace *bool       `json:"shareProcessNamespace,omitempty"`
	Containers            []Container `json:"containers,omitempty"`
	InitContainers        []Container `json:"initContainers,omitempty"`
	Volumes               []Volume    `json:"volumes,omitempty"`
}

// OSName returns spec.os.name ("" when unset).
func (s *PodSpec) OSName() string {
	if s.OS == nil {
		return ""
	}
	return s.OS.Name
}

// RuntimeClass returns spec.runtimeClassName ("" when unset).
func (s *PodSpec) RuntimeClass() string {
	if s.RuntimeClassName == nil {
		return ""
	}
	return *s.RuntimeClassName
}

// AllContainers returns init containers followed by containers.
func (s *PodSpec) AllContainers() []Container {
	out := make([]Container, 0, len(s.InitContainers)+len(s.Containers))
	out = append(out, s.InitContainers...)
	return append(out, s.Containers...)
}

// HostProcess reports whether the pod runs HostProcess containers (set on
// the pod or on any container).
func (s *PodSpec) HostProcess() bool {
	if s.SecurityContext.HostProcess() {
		return true
	}
	for _, c := range s.AllContainers() {
		if c.SecurityContext.HostProcess() {
			return true
		}
	}
	return false
}

// PodTemplate is a pod template's metadata and spec.
type PodTemplate struct {
	Metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec PodSpec `json:"spec"`
}

// WorkloadStatus is the status a controller reports (DaemonSets and
// Deployments; other kinds leave it zero).
type WorkloadStatus struct {
	DesiredNumberScheduled int `json:"desiredNumberScheduled,omitempty"`
	CurrentNumberScheduled int `json:"currentNumberScheduled,omitempty"`
	NumberReady            int `json:"numberReady,omitempty"`
	NumberAvailable        int `json:"numberAvailable,omitempty"`
	NumberMisscheduled     int `json:"numberMisscheduled,omitempty"`
	Replicas               int `json:"replicas,omitempty"`
	ReadyReplicas          int `json:"readyReplicas,omitempty"`
}

// Workload is any object with a pod template: DaemonSet, Deployment,
// StatefulSet, ReplicaSet, Job, CronJob, or a bare Pod (its own spec is the
// template). Pods owned by a controller are not workloads; they are kept
// as slim Pods.
type Workload struct {
	Object
	Template PodTemplate
	Status   WorkloadStatus
	// Pod is the pod's own status when Kind is Pod.
	Pod *PodStatus
}

// PodStatus is the part of a pod's status the checks read.
type PodStatus struct {
	Phase             string            `json:"phase,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// ContainerStatus is the part of a container's status the checks read.
type ContainerStatus struct {
	Name string `json:"name"`
	// Image is the image the kubelet runs or tries to pull.
	Image string `json:"image,omitempty"`
	Ready bool   `json:"ready"`
	State struct {
		Waiting *ContainerWaiting `json:"waiting,omitempty"`
	} `json:"state"`
}

// ContainerWaiting is a waiting container's reason and message.
type ContainerWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// WaitingReason returns the first waiting reason among containers.
func (p *PodStatus) WaitingReason() string {
	if p == nil {
		return ""
	}
	for _, c := range p.ContainerStatuses {
		if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
			return c.State.Waiting.Reason
		}
	}
	return ""
}

// WaitingMessages returns every container's waiting reason and message,
// "reason: message", in container order.
func (p *PodStatus) WaitingMessages() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, c := range p.ContainerStatuses {
		if c.State.Waiting != nil && (c.State.Waiting.Reason != "" || c.State.Waiting.Message != "") {
			out = append(out, c.State.Waiting.Reason+": "+c.State.Waiting.Message)
		}
	}
	return out
}

// Ready reports whether every container is ready.
func (p *PodStatus) Ready() bool {
	if p == nil || len(p.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

// Pod is a pod owned by a controller, kept slim: where it runs, who owns
// it, and how it is doing. Its template is its controller's.
type Pod struct {
	Namespace, Name string
	NodeName        string
	Owner           OwnerRef
	// App is the pod's k8s-app label (to find CoreDNS and Calico pods).
	App    string
	Status PodStatus
}

// rawWorkload decodes every kind of workload; the template sits at a
// different path in each.
type rawWorkload struct {
	Object
	Spec struct {
		Template    *PodTemplate `json:"template,omitempty"`
		JobTemplate *struct {
			Spec struct {
				Template PodTemplate `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate,omitempty"`
	} `json:"spec"`
	Status WorkloadStatus `json:"status"`
}

// rawPod decodes a Pod.
type rawPod struct {
	Object
	Spec   PodSpec   `json:"spec"`
	Status PodStatus `json:"status"`
}

// ImagePullReasons are the kubelet's waiting reasons of a container whose
// image cannot be pulled (k8s.io/kubernetes pkg/kubelet/images/types.go).
func ImagePullReasons() []string {
	return []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
}

// IsImagePullFailure reports whether a waiting reason is one of
// ImagePullReasons.
func IsImagePullFailure(reason string) bool { return slices.Contains(ImagePullReasons(), reason) }

// DefaultPullGrace is how long a container may wait in ErrImagePull before
// the failure is taken as lasting (PullWatch). The kubelet reports
// ErrImagePull on the first failed pull, which a registry's brief refusal
// or a slow mirror also gives, and ImagePullBackOff once a retry failed too.
const DefaultPullGrace = 30 * time.Second

// PullWatch tells a lasting image pull failure from a first one, over
// successive looks at the same pods. A container fails for good when it
// waits in ImagePullBackOff (the kubelet failed again and backs off), in
// InvalidImageName or ErrImageNeverPull (no retry can help), or in
// ErrImagePull seen again at least Grace after it was first seen. The zero
// value uses DefaultPullGrace.
type PullWatch struct {
	Grace time.Duration
	first map[string]time.Time
}

// Lasting records that the container key (a pod's UID or name and the
// container's name) waits with reason at now, and reports whether its
// image pull fails for good. A reason that is not a pull failure forgets
// the container.
func (w *PullWatch) Lasting(key, reason string, now time.Time) bool {
	if !IsImagePullFailure(reason) {
		delete(w.first, key)
		return false
	}
	if reason != "ErrImagePull" {
		return true
	}
	if w.first == nil {
		w.first = map[string]time.Time{}
	}
	t0, seen := w.first[key]
	if !seen {
		w.first[key] = now
		return false
	}
	grace := w.Grace
	if grace <= 0 {
		grace = DefaultPullGrace
	}
	return now.Sub(t0) >= grace
}

// PullFailure is a container that cannot pull its image.
type PullFailure struct {
	Container, Image, Reason, Message string
}

// PullFailures returns the containers of the pod that wait because their
// image cannot be pulled, in container order.
func (p *PodStatus) PullFailures() []PullFailure {
	if p == nil {
		return nil
	}
	var out []PullFailure
	for _, c := range p.ContainerStatuses {
		if w := c.State.Waiting; w != nil && IsImagePullFailure(w.Reason) {
			out = append(out, PullFailure{Container: c.Name, Image: c.Image, Reason: w.Reason, Message: w.Message})
		}
	}
	return out
}
