package kubeclient

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// ConfigFlags are kubectl's connection flags, with kubectl's names,
// shorthands, defaults and help, bound to client-go's clientcmd loading
// rules and overrides as kubectl binds them (k8s.io/cli-runtime's
// genericclioptions.ConfigFlags, whose package brings kubectl's resource
// builder and kustomize into every binary that imports it). A nil field is
// a flag not offered.
type ConfigFlags struct {
	KubeConfig *string
	// CacheDir is kubectl's discovery cache directory: accepted so that a
	// kubectl command line works, unused (hybridctl keeps no discovery
	// cache).
	CacheDir *string

	ClusterName          *string
	AuthInfoName         *string
	Context              *string
	Namespace            *string
	APIServer            *string
	TLSServerName        *string
	Insecure             *bool
	CertFile             *string
	KeyFile              *string
	CAFile               *string
	BearerToken          *string
	Impersonate          *string
	ImpersonateUID       *string
	ImpersonateGroup     *[]string
	ImpersonateUserExtra *[]string
	Timeout              *string
	DisableCompression   *bool
	ProxyURL             *string
}

func strp(s string) *string { return &s }

// NewConfigFlags returns every flag kubectl offers, with its defaults.
func NewConfigFlags() *ConfigFlags {
	insecure, disableCompression := false, false
	group, extra := []string{}, []string{}
	return &ConfigFlags{
		KubeConfig: strp(""), CacheDir: strp(defaultCacheDir()),
		ClusterName: strp(""), AuthInfoName: strp(""), Context: strp(""), Namespace: strp(""),
		APIServer: strp(""), TLSServerName: strp(""), Insecure: &insecure,
		CertFile: strp(""), KeyFile: strp(""), CAFile: strp(""), BearerToken: strp(""),
		Impersonate: strp(""), ImpersonateUID: strp(""), ImpersonateGroup: &group, ImpersonateUserExtra: &extra,
		Timeout: strp("0"), DisableCompression: &disableCompression, ProxyURL: strp(""),
	}
}

// AddFlags registers the flags on flags, as kubectl does.
func (f *ConfigFlags) AddFlags(flags *pflag.FlagSet) {
	str := func(p *string, name, short, usage string) {
		if p != nil {
			flags.StringVarP(p, name, short, *p, usage)
		}
	}
	boolean := func(p *bool, name, usage string) {
		if p != nil {
			flags.BoolVar(p, name, *p, usage)
		}
	}
	array := func(p *[]string, name, usage string) {
		if p != nil {
			flags.StringArrayVar(p, name, *p, usage)
		}
	}
	str(f.KubeConfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	str(f.CacheDir, "cache-dir", "", "Default cache directory")
	str(f.CertFile, clientcmd.FlagCertFile, "", "Path to a client certificate file for TLS")
	str(f.KeyFile, clientcmd.FlagKeyFile, "", "Path to a client key file for TLS")
	str(f.BearerToken, clientcmd.FlagBearerToken, "", "Bearer token for authentication to the API server")
	str(f.Impersonate, clientcmd.FlagImpersonate, "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	str(f.ImpersonateUID, clientcmd.FlagImpersonateUID, "", "UID to impersonate for the operation.")
	array(f.ImpersonateGroup, clientcmd.FlagImpersonateGroup, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	array(f.ImpersonateUserExtra, "as-user-extra", "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	str(f.ClusterName, clientcmd.FlagClusterName, "", "The name of the kubeconfig cluster to use")
	str(f.AuthInfoName, clientcmd.FlagAuthInfoName, "", "The name of the kubeconfig user to use")
	str(f.Namespace, clientcmd.FlagNamespace, "n", "If present, the namespace scope for this CLI request")
	str(f.Context, clientcmd.FlagContext, "", "The name of the kubeconfig context to use")
	str(f.APIServer, clientcmd.FlagAPIServer, "s", "The address and port of the Kubernetes API server")
	str(f.TLSServerName, clientcmd.FlagTLSServerName, "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	boolean(f.Insecure, clientcmd.FlagInsecure, "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	str(f.CAFile, clientcmd.FlagCAFile, "", "Path to a cert file for the certificate authority")
	str(f.Timeout, clientcmd.FlagTimeout, "", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	boolean(f.DisableCompression, clientcmd.FlagDisableCompression, "If true, opt-out of response compression for all requests to the server")
	str(f.ProxyURL, clientcmd.FlagProxyURL, "", "Proxy URL to use for requests to the API server")
}

// ToRawKubeConfigLoader is the kubeconfig loader: the default loading
// rules ($KUBECONFIG, ~/.kube/config; --kubeconfig instead when given),
// with the flags as overrides. It never prompts.
func (f *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	if f.KubeConfig != nil {
		rules.ExplicitPath = *f.KubeConfig
	}
	o := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	if f.CertFile != nil {
		o.AuthInfo.ClientCertificate, o.AuthInfo.ClientCertificateData = *f.CertFile, nil
	}
	if f.KeyFile != nil {
		o.AuthInfo.ClientKey, o.AuthInfo.ClientKeyData = *f.KeyFile, nil
	}
	if f.BearerToken != nil {
		o.AuthInfo.Token, o.AuthInfo.TokenFile = *f.BearerToken, ""
	}
	set(&o.AuthInfo.Impersonate, f.Impersonate)
	if f.ImpersonateUserExtra != nil && len(*f.ImpersonateUserExtra) > 0 {
		extras := map[string][]string{}
		for _, kv := range *f.ImpersonateUserExtra {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			extras[k] = append(extras[k], v)
		}
		o.AuthInfo.ImpersonateUserExtra = extras
	}
	set(&o.AuthInfo.ImpersonateUID, f.ImpersonateUID)
	if f.ImpersonateGroup != nil {
		o.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	set(&o.ClusterInfo.Server, f.APIServer)
	set(&o.ClusterInfo.TLSServerName, f.TLSServerName)
	set(&o.ClusterInfo.CertificateAuthority, f.CAFile)
	if f.Insecure != nil {
		o.ClusterInfo.InsecureSkipTLSVerify = *f.Insecure
	}
	if f.DisableCompression != nil {
		o.ClusterInfo.DisableCompression = *f.DisableCompression
	}
	set(&o.ClusterInfo.ProxyURL, f.ProxyURL)
	set(&o.CurrentContext, f.Context)
	set(&o.Context.Cluster, f.ClusterName)
	set(&o.Context.AuthInfo, f.AuthInfoName)
	set(&o.Context.Namespace, f.Namespace)
	set(&o.Timeout, f.Timeout)
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, o)
}

// ToRESTConfig is the client configuration the kubeconfig and the flags
// give.
func (f *ConfigFlags) ToRESTConfig() (*rest.Config, error) {
	return f.ToRawKubeConfigLoader().ClientConfig()
}

// defaultCacheDir is kubectl's: $KUBECACHEDIR, else ~/.kube/cache.
func defaultCacheDir() string {
	if d := os.Getenv("KUBECACHEDIR"); d != "" {
		return d
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}
