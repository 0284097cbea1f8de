package csr

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// Where the API server's names are read from.
const (
	KubeadmConfigNamespace = "kube-system"
	KubeadmConfigName      = "kubeadm-config"
	APIServiceNamespace    = "default"
	APIServiceName         = "kubernetes"
)

// kubeadmClusterConfiguration is the part of kubeadm's ClusterConfiguration
// that names the API server.
type kubeadmClusterConfiguration struct {
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
	APIServer            struct {
		CertSANs []string `json:"certSANs"`
	} `json:"apiServer"`
}

// hostOf is the host of a host[:port] endpoint.
func hostOf(endpoint string) string {
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		return h
	}
	return strings.Trim(endpoint, "[]")
}

// DiscoverAPIServer reads the names and addresses clients know the API
// server by: the host of server (the URL this client connects to), the
// controlPlaneEndpoint and apiServer.certSANs of ConfigMap
// kube-system/kubeadm-config (a kubeadm cluster), and the ClusterIPs of
// Service default/kubernetes. An object that does not exist is skipped;
// one the identity may not read is a warning; any other API error is
// returned.
func DiscoverAPIServer(ctx context.Context, client kubeclient.Interface, server string) ([]Endpoint, []string, error) {
	var out []Endpoint
	var warnings []string
	if server != "" {
		if u, err := url.Parse(server); err == nil && u.Hostname() != "" {
			out = append(out, Endpoint{Host: u.Hostname(), Source: "the server this client connects to, " + u.Host, ControlPlane: true})
		}
	}

	cm, err := client.CoreV1().ConfigMaps(KubeadmConfigNamespace).Get(ctx, KubeadmConfigName, metav1.GetOptions{})
	switch {
	case err == nil:
		var cc kubeadmClusterConfiguration
		if raw := cm.Data["ClusterConfiguration"]; raw != "" {
			if err := yaml.Unmarshal([]byte(raw), &cc); err != nil {
				return nil, nil, fmt.Errorf("ConfigMap %s/%s: data.ClusterConfiguration: %w", KubeadmConfigNamespace, KubeadmConfigName, err)
			}
		}
		if cc.ControlPlaneEndpoint != "" {
			out = append(out, Endpoint{Host: hostOf(cc.ControlPlaneEndpoint), ControlPlane: true,
				Source: fmt.Sprintf("controlPlaneEndpoint %q in ConfigMap %s/%s", cc.ControlPlaneEndpoint, KubeadmConfigNamespace, KubeadmConfigName)})
		}
		for _, san := range cc.APIServer.CertSANs {
			if san != "" {
				out = append(out, Endpoint{Host: san, ControlPlane: true,
					Source: fmt.Sprintf("apiServer.certSANs in ConfigMap %s/%s", KubeadmConfigNamespace, KubeadmConfigName)})
			}
		}
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		warnings = append(warnings, fmt.Sprintf("may not get ConfigMap %s/%s: the API server's controlPlaneEndpoint and certSANs are not compared with the names Nodes report", KubeadmConfigNamespace, KubeadmConfigName))
	default:
		return nil, nil, fmt.Errorf("getting ConfigMap %s/%s: %w", KubeadmConfigNamespace, KubeadmConfigName, err)
	}

	svc, err := client.CoreV1().Services(APIServiceNamespace).Get(ctx, APIServiceName, metav1.GetOptions{})
	switch {
	case err == nil:
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, ip := range ips {
			if ip != "" && ip != corev1.ClusterIPNone {
				out = append(out, Endpoint{Host: ip, Source: fmt.Sprintf("ClusterIP of Service %s/%s", APIServiceNamespace, APIServiceName)})
			}
		}
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		warnings = append(warnings, fmt.Sprintf("may not get Service %s/%s: its ClusterIPs are not compared with the addresses Nodes report", APIServiceNamespace, APIServiceName))
	default:
		return nil, nil, fmt.Errorf("getting Service %s/%s: %w", APIServiceNamespace, APIServiceName, err)
	}
	return out, warnings, nil
}

// ListNodes lists every Node, page by page.
func ListNodes(ctx context.Context, client kubeclient.Interface) ([]*corev1.Node, error) {
	var out []*corev1.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing Nodes: %w", err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// APIClusterView reads the ClusterView through the API: every Node and
// DiscoverAPIServer's endpoints, server being the URL the client connects
// to. The first complete answer is remembered for the life of the getter
// (one one-shot run); an error is not.
func APIClusterView(client kubeclient.Interface, server string) ClusterGetter {
	var mu sync.Mutex
	var view *ClusterView
	return func(ctx context.Context) (*ClusterView, error) {
		mu.Lock()
		defer mu.Unlock()
		if view != nil {
			return view, nil
		}
		nodes, err := ListNodes(ctx, client)
		if err != nil {
			return nil, err
		}
		api, warnings, err := DiscoverAPIServer(ctx, client, server)
		if err != nil {
			return nil, err
		}
		view = &ClusterView{Nodes: nodes, APIServer: api, Warnings: warnings}
		return view, nil
	}
}
