package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

func (e *Env) restConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: e.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:   -1, // no client-side rate limit; the server is local
		Burst: -1,
	}
}

// Host returns the API server's URL, https://127.0.0.1:PORT.
func (e *Env) Host() string { return e.host }

// Dir returns the environment's temporary directory (logs: etcd.log,
// kube-apiserver.log; pki/; admin.conf).
func (e *Env) Dir() string { return e.dir }

// CAData returns the PEM certificate of the environment's CA, which signs
// the serving certificate and all client certificates.
func (e *Env) CAData() []byte { return bytes.Clone(e.ca.certPEM) }

// AdminConfig returns a fresh copy of the admin client configuration
// (kubernetes-admin in system:masters, client-certificate auth).
func (e *Env) AdminConfig() *rest.Config { return rest.CopyConfig(e.admin) }

// KubeconfigPath returns the path of the admin kubeconfig (mode 0600).
func (e *Env) KubeconfigPath() string { return e.kubeconfig }

// Client returns a typed clientset for the admin.
func (e *Env) Client() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(e.AdminConfig())
}

// UserConfig mints a client certificate signed by the environment's CA for
// user (certificate CN) in groups (O entries) and returns a configuration
// that authenticates with it, exactly as a kubelet or a person with a
// kubeadm-issued certificate would. Authorization is the API server's: RBAC,
// and the Node authorizer for system:node:NAME in system:nodes.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	if user == "" {
		return nil, errors.New("UserConfig: empty user name")
	}
	certPEM, keyPEM, err := e.ca.issue(user, groups, nil, nil)
	if err != nil {
		return nil, err
	}
	return e.restConfig(certPEM, keyPEM), nil
}

// WriteKubeconfig writes cfg (as returned by AdminConfig or UserConfig) as a
// kubeconfig file with one cluster, user and context named "testenv", mode
// 0600, atomically.
func (e *Env) WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["testenv"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "testenv"}
	kc.CurrentContext = "testenv"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	return atomicfile.Write(context.Background(), path, b, 0o600, atomicfile.Options{})
}
