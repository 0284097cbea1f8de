package kubeclient

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the part of client-go's typed clientset
// (kubernetes.Interface) hybridctl uses: the API groups it talks to. A
// *kubernetes.Clientset is one too. Importing the whole clientset brings
// every API group's client and apply configurations into the binary.
type Interface interface {
	Discovery() discovery.DiscoveryInterfaces
	CoreV1() corev1.CoreV1Interface
	AppsV1() appsv1.AppsV1Interface
	AuthenticationV1() authenticationv1.AuthenticationV1Interface
	CertificatesV1() certificatesv1.CertificatesV1Interface
	DiscoveryV1() discoveryv1.DiscoveryV1Interface
	PolicyV1() policyv1.PolicyV1Interface
}

// Clientset is Interface's implementation: one typed client per group,
// sharing one HTTP client and one rate limiter, as kubernetes.NewForConfig
// makes them.
type Clientset struct {
	discovery        *discovery.DiscoveryClient
	coreV1           *corev1.CoreV1Client
	appsV1           *appsv1.AppsV1Client
	authenticationV1 *authenticationv1.AuthenticationV1Client
	certificatesV1   *certificatesv1.CertificatesV1Client
	discoveryV1      *discoveryv1.DiscoveryV1Client
	policyV1         *policyv1.PolicyV1Client
}

var _ Interface = (*Clientset)(nil)

func (c *Clientset) Discovery() discovery.DiscoveryInterfaces { return c.discovery }
func (c *Clientset) CoreV1() corev1.CoreV1Interface           { return c.coreV1 }
func (c *Clientset) AppsV1() appsv1.AppsV1Interface           { return c.appsV1 }
func (c *Clientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return c.authenticationV1
}
func (c *Clientset) CertificatesV1() certificatesv1.CertificatesV1Interface {
	return c.certificatesV1
}
func (c *Clientset) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return c.discoveryV1 }
func (c *Clientset) PolicyV1() policyv1.PolicyV1Interface          { return c.policyV1 }

// NewForConfig is kubernetes.NewForConfig for the groups of Interface.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&cfg, hc)
}

// NewForConfigAndClient is kubernetes.NewForConfigAndClient for the groups
// of Interface: hc is shared, and so is the rate limiter made from the
// configuration's QPS and burst when it has none.
func NewForConfigAndClient(c *rest.Config, hc *http.Client) (*Clientset, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var cs Clientset
	var err error
	if cs.coreV1, err = corev1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.appsV1, err = appsv1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.authenticationV1, err = authenticationv1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.certificatesV1, err = certificatesv1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.discoveryV1, err = discoveryv1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.policyV1, err = policyv1.NewForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	if cs.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(&cfg, hc); err != nil {
		return nil, err
	}
	return &cs, nil
}
