// Package snapshot holds the set of objects the hybrid-cluster checks read,
// and the two loaders that fill it: a live loader (paginated LISTs through
// client-go) and a file loader (manifests, directories, Helm output, stdin).
//
// Objects are kept as small structs that carry only the fields the checks
// read, never whole API objects: a 150,000-pod cluster fits in a few hundred
// megabytes. The structs decode straight from the API's JSON (json tags
// follow the Kubernetes field names), so both loaders share one model.
package snapshot

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Kind names a resource type a check can need. The values are the
// Kubernetes kind names.
type Kind string

// The resource types the checks read.
const (
	KindNode               Kind = "Node"
	KindNamespace          Kind = "Namespace"
	KindPod                Kind = "Pod"
	KindService            Kind = "Service"
	KindConfigMap          Kind = "ConfigMap"
	KindDaemonSet          Kind = "DaemonSet"
	KindDeployment         Kind = "Deployment"
	KindStatefulSet        Kind = "StatefulSet"
	KindReplicaSet         Kind = "ReplicaSet"
	KindJob                Kind = "Job"
	KindCronJob            Kind = "CronJob"
	KindRuntimeClass       Kind = "RuntimeClass"
	KindCSR                Kind = "CertificateSigningRequest"
	KindInstallation       Kind = "Installation"
	KindTigeraStatus       Kind = "TigeraStatus"
	KindIPPool             Kind = "IPPool"
	KindIPAMConfiguration  Kind = "IPAMConfiguration"
	KindFelixConfiguration Kind = "FelixConfiguration"
	// KindClusterConfiguration is kubeadm's ClusterConfiguration: live it is
	// read from the kube-system/kubeadm-config ConfigMap.
	KindClusterConfiguration Kind = "ClusterConfiguration"
)

// WorkloadKinds returns the kinds that carry a pod template, in a fixed order.
func WorkloadKinds() []Kind {
	return []Kind{KindDaemonSet, KindDeployment, KindStatefulSet, KindReplicaSet, KindJob, KindCronJob, KindPod}
}

// Ref identifies an object the way findings name it.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

func (r Ref) String() string {
	k := strings.ToLower(r.Kind)
	if r.Namespace != "" {
		return k + "/" + r.Namespace + "/" + r.Name
	}
	return k + "/" + r.Name
}

// Source is where a manifest object was read from (file loader only).
type Source struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Template is the Helm template named by a "# Source:" comment.
	Template string `json:"template,omitempty"`

	// order is the document's place in the input (file loader), which
	// decides between objects that are otherwise equal.
	order int
}

// OwnerRef is a metadata.ownerReferences entry.
type OwnerRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Controller *bool  `json:"controller,omitempty"`
}

// Meta is the part of metadata the checks read.
type Meta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerRef        `json:"ownerReferences,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
}

// Created parses creationTimestamp; zero when absent or malformed.
func (m Meta) Created() time.Time {
	t, err := time.Parse(time.RFC3339, m.CreationTimestamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Controller returns the controlling owner, if any.
func (m Meta) Controller() *OwnerRef {
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		if o.Controller != nil && *o.Controller {
			return o
		}
	}
	if len(m.OwnerReferences) == 1 {
		return &m.OwnerReferences[0]
	}
	return nil
}

// Object is what every stored object has: its identity, metadata and origin.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Meta       Meta   `json:"metadata"`
	Source     Source `json:"-"`
}

// Ref returns the object's reference.
func (o *Object) Ref() Ref {
	return Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Meta.Namespace, Name: o.Meta.Name}
}

// IgnoreAnnotation suppresses checks on an object: a comma-separated list
// of check IDs or names.
const IgnoreAnnotation = "hybridctl.dev/ignore"

// Count is an integer that the API writes as a string (resource
// quantities such as capacity.pods) and manifests may write as a number.
type Count struct {
	Value int64
	Set   bool
}

// UnmarshalJSON accepts 60, "60" and plain quantity suffixes such as "1k".
func (c *Count) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		return nil
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "Ki"):
		mult, s = 1024, strings.TrimSuffix(s, "Ki")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return &json.UnmarshalTypeError{Value: "quantity " + string(b), Type: nil}
	}
	c.Value, c.Set = v*mult, true
	return nil
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Condition is a status condition (nodes, TigeraStatus, CSRs).
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// Node is a cluster node.
type Node struct {
	Object
	Spec struct {
		Taints   []Taint  `json:"taints,omitempty"`
		PodCIDR  string   `json:"podCIDR,omitempty"`
		PodCIDRs []string `json:"podCIDRs,omitempty"`
	} `json:"spec"`
	Status struct {
		Capacity struct {
			Pods Count `json:"pods"`
		} `json:"capacity"`
		Allocatable struct {
			Pods Count `json:"pods"`
		} `json:"allocatable"`
		Conditions []Condition `json:"conditions,omitempty"`
		NodeInfo   struct {
			KubeletVersion  string `json:"kubeletVersion"`
			OSImage         string `json:"osImage"`
			OperatingSystem string `json:"operatingSystem"`
			KernelVersion   string `json:"kernelVersion"`
		} `json:"nodeInfo"`
	} `json:"status"`
}

// Well-known node labels.
const (
	LabelOS   = "kubernetes.io/os"
	LabelArch = "kubernetes.io/arch"
	// LabelOSBeta and LabelArchBeta are the deprecated labels kubelets
	// still set and older manifests still select on.
	LabelOSBeta       = "beta.kubernetes.io/os"
	LabelArchBeta     = "beta.kubernetes.io/arch"
	LabelWindowsBuild = "node.kubernetes.io/windows-build"
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
)

// OS returns the node's operating system from its label (kubernetes.io/os,
// else beta.kubernetes.io/os), falling back to
// status.nodeInfo.operatingSystem.
func (n *Node) OS() string {
	if os := n.Meta.Labels[LabelOS]; os != "" {
		return os
	}
	if os := n.Meta.Labels[LabelOSBeta]; os != "" {
		return os
	}
	return n.Status.NodeInfo.OperatingSystem
}

// Arch returns the node's architecture label (kubernetes.io/arch, else
// beta.kubernetes.io/arch), or "".
func (n *Node) Arch() string {
	if a := n.Meta.Labels[LabelArch]; a != "" {
		return a
	}
	return n.Meta.Labels[LabelArchBeta]
}

// IsWindows reports whether the node runs Windows.
func (n *Node) IsWindows() bool { return n.OS() == "windows" }

// WindowsBuild is the node.kubernetes.io/windows-build label ("10.0.26100"),
// falling back to the first three parts of the kernel version.
func (n *Node) WindowsBuild() string {
	if b := n.Meta.Labels[LabelWindowsBuild]; b != "" {
		return b
	}
	if n.IsWindows() {
		p := strings.SplitN(n.Status.NodeInfo.KernelVersion, ".", 4)
		if len(p) >= 3 {
			return strings.Join(p[:3], ".")
		}
	}
	return ""
}

// IsControlPlane reports whether the node carries the control-plane role
// label or taint.
func (n *Node) IsControlPlane() bool {
	if _, ok := n.Meta.Labels[LabelControlPlane]; ok {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == LabelControlPlane {
			return true
		}
	}
	return false
}

// Condition returns the node condition of the given type.
func (n *Node) Condition(t string) *Condition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Namespace is a namespace; its labels carry the Pod Security levels.
type Namespace struct {
	Object
}

// Service is a Service (only its identity is read).
type Service struct {
	Object
	Spec struct {
		ClusterIP string `json:"clusterIP,omitempty"`
	} `json:"spec"`
}

// ConfigMap keeps a ConfigMap's data. The loaders keep the data only of the
// ConfigMaps the checks read whole (kubeadm-config,
// kubernetes-services-endpoint); for the others, Hosts lists the candidate
// "name.namespace" host names found in the values, which is all the checks
// need of them.
type ConfigMap struct {
	Object
	Data map[string]string `json:"data,omitempty"`
	// Hosts are candidate dotted short host names in the values, "key: host".
	Hosts []KeyedString `json:"-"`
}

// KeyedString is a string found under a key.
type KeyedString struct{ Key, Value string }

// RuntimeClass is a node.k8s.io RuntimeClass.
type RuntimeClass struct {
	Object
	Handler    string `json:"handler"`
	Scheduling *struct {
		NodeSelector map[string]string `json:"nodeSelector,omitempty"`
		Tolerations  []Toleration      `json:"tolerations,omitempty"`
	} `json:"scheduling,omitempty"`
}

// NodeSelector returns scheduling.nodeSelector (nil when unset).
func (r *RuntimeClass) NodeSelector() map[string]string {
	if r.Scheduling == nil {
		return nil
	}
	return r.Scheduling.NodeSelector
}

// CSR is a certificates.k8s.io CertificateSigningRequest.
type CSR struct {
	Object
	Spec struct {
		SignerName string `json:"signerName"`
		Username   string `json:"username"`
	} `json:"spec"`
	Status struct {
		Conditions  []Condition `json:"conditions,omitempty"`
		Certificate string      `json:"certificate,omitempty"`
	} `json:"status"`
}

// Pending reports whether the CSR is neither approved, denied nor failed.
func (c *CSR) Pending() bool {
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case "Approved", "Denied", "Failed":
			return false
		}
	}
	return true
}

// Installation is the Tigera operator's operator.tigera.io/v1 Installation.
type Installation struct {
	Object
	Spec struct {
		ServiceCIDRs  []string `json:"serviceCIDRs,omitempty"`
		CalicoNetwork *struct {
			BGP              string `json:"bgp,omitempty"`
			LinuxDataplane   string `json:"linuxDataplane,omitempty"`
			WindowsDataplane string `json:"windowsDataplane,omitempty"`
			IPPools          []struct {
				Name          string `json:"name,omitempty"`
				CIDR          string `json:"cidr"`
				BlockSize     *int   `json:"blockSize,omitempty"`
				Encapsulation string `json:"encapsulation,omitempty"`
				NodeSelector  string `json:"nodeSelector,omitempty"`
			} `json:"ipPools,omitempty"`
		} `json:"calicoNetwork,omitempty"`
	} `json:"spec"`
}

// TigeraStatus is the operator's per-component status.
type TigeraStatus struct {
	Object
	Status struct {
		Conditions []Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// IPPool is a Calico IPPool (projectcalico.org/v3 or crd.projectcalico.org/v1).
type IPPool struct {
	Object
	Spec struct {
		CIDR         string `json:"cidr"`
		BlockSize    *int   `json:"blockSize,omitempty"`
		VXLANMode    string `json:"vxlanMode,omitempty"`
		IPIPMode     string `json:"ipipMode,omitempty"`
		NodeSelector string `json:"nodeSelector,omitempty"`
		Disabled     bool   `json:"disabled,omitempty"`
	} `json:"spec"`
}

// IPAMConfiguration is Calico's IPAM configuration (the one named default).
type IPAMConfiguration struct {
	Object
	Spec struct {
		StrictAffinity bool `json:"strictAffinity"`
	} `json:"spec"`
}

// FelixConfiguration is Calico's Felix configuration.
type FelixConfiguration struct {
	Object
	Spec struct {
		VXLANVNI  *int `json:"vxlanVNI,omitempty"`
		VXLANPort *int `json:"vxlanPort,omitempty"`
	} `json:"spec"`
}

// ClusterConfiguration is the part of kubeadm's ClusterConfiguration the
// checks read.
type ClusterConfiguration struct {
	Object
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	Networking        struct {
		ServiceSubnet string `json:"serviceSubnet,omitempty"`
		PodSubnet     string `json:"podSubnet,omitempty"`
		DNSDomain     string `json:"dnsDomain,omitempty"`
	} `json:"networking"`
}
