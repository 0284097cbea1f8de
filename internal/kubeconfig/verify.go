package kubeconfig

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// DefaultVerifyTimeout bounds --verify.
const DefaultVerifyTimeout = 15 * time.Second

// Verified is what --verify learned from the API server.
type Verified struct {
	// ServerVersion is the git version /version reports.
	ServerVersion string `json:"serverVersion"`
	// TrustedBy says what the server certificate was checked against:
	// "the imported CA", or "the system CAs" when the cluster has no CA data.
	TrustedBy string `json:"trustedBy"`
	// Username and Groups are who the server says the credentials are
	// (a SelfSubjectReview); empty when the server does not serve it.
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// RESTConfig builds a client configuration from exactly these entries, as
// kubectl would for the context, with nothing taken from other files.
func RESTConfig(cluster *api.Cluster, user *api.AuthInfo) (*rest.Config, error) {
	cfg := api.NewConfig()
	cfg.Clusters["verify"] = cluster
	cfg.AuthInfos["verify"] = user
	cfg.Contexts["verify"] = &api.Context{Cluster: "verify", AuthInfo: "verify"}
	cfg.CurrentContext = "verify"
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, "verify", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// Verify connects to the cluster with the new credentials: the server's
// certificate must chain to the imported CA (never skipped), /version must
// answer, and the server must authenticate the credentials as someone other
// than system:anonymous. where names the entry in messages.
func Verify(ctx context.Context, cluster *api.Cluster, user *api.AuthInfo, timeout time.Duration, where string) (*Verified, error) {
	// --verify never runs a program and never reads a local file: it
	// connects with exactly the data the import holds.
	if p := DescribePlugin(user); p != "" {
		return nil, newErr(KindVerify, fmt.Sprintf("%s: cannot verify: the user has %s, and --verify never runs a plugin", where, p), nil)
	}
	if refs := fileRefs(cluster, user); len(refs) > 0 {
		return nil, newErr(KindVerify, fmt.Sprintf("%s: cannot verify: the entries refer to local files (%s), and --verify sends only what the import holds", where, strings.Join(refs, ", ")), nil)
	}
	if cluster.InsecureSkipTLSVerify {
		return nil, newErr(KindVerify, where+": cannot verify: the cluster sets insecure-skip-tls-verify, so the server's identity cannot be checked", nil)
	}
	rc, err := RESTConfig(cluster, user)
	if err != nil {
		return nil, newErr(KindVerify, where+": building a client", err)
	}
	if timeout <= 0 {
		timeout = DefaultVerifyTimeout
	}
	rc.Timeout = timeout
	rc.UserAgent = "hybridctl-kubeconfig-verify"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, newErr(KindVerify, where+": building a client", err)
	}
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, newErr(verifyKind(err), fmt.Sprintf("%s: GET %s/version", where, cluster.Server), explainTLS(err))
	}
	v := &Verified{ServerVersion: gitVersion(body), TrustedBy: "the imported CA"}
	if len(cluster.CertificateAuthorityData) == 0 && cluster.CertificateAuthority == "" {
		v.TrustedBy = "the system CAs"
	}

	cs, err := kubeclient.NewForConfig(rc)
	if err != nil {
		return nil, newErr(KindVerify, where+": building a client", err)
	}
	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case err == nil:
		v.Username, v.Groups = ssr.Status.UserInfo.Username, ssr.Status.UserInfo.Groups
		if v.Username == "" || v.Username == "system:anonymous" {
			return nil, newErr(KindVerify, fmt.Sprintf("%s: the server at %s does not accept the credentials (it treats them as system:anonymous)", where, cluster.Server), nil)
		}
	case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
		// An old server without SelfSubjectReview: /version answered with
		// these credentials, which is as far as we can check.
	default:
		return nil, newErr(verifyKind(err), fmt.Sprintf("%s: authenticating to %s", where, cluster.Server), explainTLS(err))
	}
	return v, nil
}

// fileRefs names the file references left in a cluster and user.
func fileRefs(c *api.Cluster, u *api.AuthInfo) []string {
	var refs []string
	for _, r := range []struct{ field, path string }{
		{"certificate-authority", c.CertificateAuthority},
		{"client-certificate", u.ClientCertificate},
		{"client-key", u.ClientKey},
		{"tokenFile", u.TokenFile},
	} {
		if r.path != "" {
			refs = append(refs, r.field)
		}
	}
	return refs
}

func gitVersion(body []byte) string {
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return ""
	}
	return info.GitVersion
}

// explainTLS adds a plain sentence to the errors people meet most.
// verifyKind is KindUnreachable for a request that got no answer (refused,
// reset, unresolved, timed out) and KindVerify for an answer that fails the
// check (a certificate, the credentials).
func verifyKind(err error) Kind {
	var ne net.Error
	var de *net.DNSError
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &de),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return KindUnreachable
	case errors.As(err, &ne) && ne.Timeout():
		return KindUnreachable
	case errors.As(err, &oe) && oe.Op == "dial":
		return KindUnreachable
	}
	return KindVerify
}

func explainTLS(err error) error {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return fmt.Errorf("the server's certificate is not signed by the imported CA (certificate-authority-data): %w", err)
	case errors.As(err, &hn):
		return fmt.Errorf("the server's certificate is not valid for this address (add the name to the API server's certSANs, or use a name it has): %w", err)
	case errors.As(err, &ci):
		return fmt.Errorf("the server's certificate is not valid: %w", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the server rejects the credentials (401 Unauthorized): %w", err)
	}
	return err
}
