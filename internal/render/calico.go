package render

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// The Tigera operator's and Calico's API types are not worth their module
// dependencies for four objects: these carry the fields the guide sets, named
// as in operator.tigera.io/v1 and projectcalico.org/v3. The tests check them
// against the real CRD schemas with a server-side dry run.

type installation struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        objectMeta       `json:"metadata"`
	Spec            installationSpec `json:"spec"`
}

type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type installationSpec struct {
	// Registry (ending in /) and ImagePath point every Calico image at a
	// private registry: REGISTRY/calico/node:VERSION.
	Registry      string        `json:"registry,omitempty"`
	ImagePath     string        `json:"imagePath,omitempty"`
	ServiceCIDRs  []string      `json:"serviceCIDRs,omitempty"`
	CalicoNetwork calicoNetwork `json:"calicoNetwork"`
}

type calicoNetwork struct {
	BGP                        string                    `json:"bgp"`
	LinuxDataplane             string                    `json:"linuxDataplane"`
	WindowsDataplane           string                    `json:"windowsDataplane,omitempty"`
	MTU                        *int32                    `json:"mtu,omitempty"`
	NodeAddressAutodetectionV4 *nodeAddressAutodetection `json:"nodeAddressAutodetectionV4,omitempty"`
	IPPools                    []ipPool                  `json:"ipPools"`
}

// nodeAddressAutodetection is the operator's NodeAddressAutodetection with
// the one method hybridctl sets.
type nodeAddressAutodetection struct {
	Kubernetes string `json:"kubernetes,omitempty"`
}

type ipPool struct {
	Name          string `json:"name"`
	CIDR          string `json:"cidr"`
	BlockSize     int32  `json:"blockSize"`
	Encapsulation string `json:"encapsulation"`
	NATOutgoing   string `json:"natOutgoing"`
	NodeSelector  string `json:"nodeSelector"`
}

type apiServerCR struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        objectMeta `json:"metadata"`
	Spec            struct{}   `json:"spec"`
}

type ipamConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        objectMeta            `json:"metadata"`
	Spec            ipamConfigurationSpec `json:"spec"`
}

type ipamConfigurationSpec struct {
	StrictAffinity     bool `json:"strictAffinity"`
	AutoAllocateBlocks bool `json:"autoAllocateBlocks"`
}

// kubernetesServicesEndpoint renders the ConfigMap through which the
// operator gives Calico the API address (guide: "The API address for
// Calico").
func kubernetesServicesEndpoint(p *plan.Plan) ([]byte, error) {
	cm := corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-services-endpoint", Namespace: "tigera-operator"},
		Data: map[string]string{
			"KUBERNETES_SERVICE_HOST": p.APIServer.Host,
			"KUBERNETES_SERVICE_PORT": strconv.Itoa(p.APIServer.Port),
		},
	}
	header := comment(
		"The API address Calico components use instead of the kubernetes service",
		"(a Windows host cannot reach service addresses). Guide: \"The API address for Calico\".",
		"Create it after the operator manifest (its namespace) and before the Installation.",
	)
	return yamlDocs(header, cm)
}

// calicoInstallation renders the Installation and APIServer (guide:
// "Installation").
func calicoInstallation(p *plan.Plan) ([]byte, error) {
	nat := "Disabled"
	if p.PodNetwork.NATOutgoing {
		nat = "Enabled"
	}
	inst := installation{
		TypeMeta: typeMeta("operator.tigera.io/v1", "Installation"),
		Metadata: objectMeta{Name: "default"},
		Spec: installationSpec{
			ServiceCIDRs: []string{p.ServiceNetwork.CIDR},
			CalicoNetwork: calicoNetwork{
				BGP:              p.Calico.BGP,
				LinuxDataplane:   p.Calico.LinuxDataplane,
				WindowsDataplane: p.Calico.WindowsDataplane,
				IPPools: []ipPool{{
					Name: p.Calico.IPPoolName, CIDR: p.PodNetwork.CIDR, BlockSize: int32(p.PodNetwork.BlockSize),
					Encapsulation: p.Calico.Encapsulation, NATOutgoing: nat, NodeSelector: "all()",
				}},
			},
		},
	}
	if p.Calico.WindowsDataplane != "" {
		// Each node's address is its Node's InternalIP, which the Windows
		// kubelets get from the spec (--node-ip), instead of the operator's
		// default firstFound: on Windows the first address found may be the
		// NAT or HNS adapter's.
		inst.Spec.CalicoNetwork.NodeAddressAutodetectionV4 = &nodeAddressAutodetection{Kubernetes: "NodeInternalIP"}
	}
	if p.Registry != nil {
		inst.Spec.Registry = p.Registry.Prefix + "/"
		inst.Spec.ImagePath = "calico"
	}
	// The guide leaves the MTU to Calico's auto-detection (1450 on a 1500
	// network). Only a non-default node MTU is written down.
	if p.NodeNetwork.MTU != 0 && p.NodeNetwork.MTU != 1500 {
		mtu := int32(p.VXLAN.PodMTU)
		inst.Spec.CalicoNetwork.MTU = &mtu
	}
	api := apiServerCR{TypeMeta: typeMeta("operator.tigera.io/v1", "APIServer"), Metadata: objectMeta{Name: "default"}}
	header := comment(
		"Calico's Installation and APIServer, rendered by hybridctl. Guide: \"Installation\".",
		fmt.Sprintf("VXLAN (VNI %d, UDP %d), BGP %s, pod MTU %d, blocks /%d.", p.VXLAN.VNI, p.VXLAN.Port, p.Calico.BGP, p.VXLAN.PodMTU, p.PodNetwork.BlockSize),
		"kubectl create -f calico-installation.yaml",
	)
	return yamlDocs(header, verbatim{inst}, verbatim{api})
}

// ipamConfig renders the IPAMConfiguration with strictAffinity: true. The
// guide patches the object Calico creates; applying this file does the same
// and also works before Calico created it.
func ipamConfig(p *plan.Plan) ([]byte, error) {
	ic := ipamConfiguration{
		TypeMeta: typeMeta("projectcalico.org/v3", "IPAMConfiguration"),
		Metadata: objectMeta{Name: "default"},
		Spec:     ipamConfigurationSpec{StrictAffinity: true, AutoAllocateBlocks: true},
	}
	header := comment(
		"strictAffinity: true - no node may take addresses from another node's block;",
		"Calico for Windows requires it. Guide: \"strictAffinity\".",
		"kubectl apply -f ipamconfiguration.yaml",
	)
	if p.Calico.CRDMode != "projectcalico.org/v3" {
		// crd.projectcalico.org/v1 clusters serve projectcalico.org/v3 only
		// through Calico's aggregated API server; apply after it is up.
		header += comment("This cluster's Calico serves projectcalico.org/v3 through its API server:", "apply once kubectl get tigerastatus apiserver is Available.")
	}
	return yamlDocs(header, verbatim{ic})
}
