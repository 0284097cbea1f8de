package kubeconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	api "k8s.io/client-go/tools/clientcmd/api"
)

// Identities decide whether an entry already in the target is "the same" as
// the one being imported. They are hashes of what makes a connection: for a
// cluster the server URL, the CA certificates (DER, so PEM formatting does
// not matter) and the TLS options; for a user the client certificate (DER)
// and key, the token, and any exec or auth-provider configuration. Names,
// extensions and file locations are not part of an identity.

// ClusterIdentity is a content hash of a cluster entry.
func ClusterIdentity(c *api.Cluster) string {
	if c == nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "server=%s\n", normalizeServer(c.Server))
	fmt.Fprintf(h, "ca=%s\n", caFingerprint(c))
	fmt.Fprintf(h, "tls-server-name=%s\ninsecure=%t\nproxy=%s\n", c.TLSServerName, c.InsecureSkipTLSVerify, c.ProxyURL)
	return hex.EncodeToString(h.Sum(nil))
}

// UserIdentity is a content hash of a user entry.
func UserIdentity(u *api.AuthInfo) string {
	if u == nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "cert=%s\n", certFingerprint(u.ClientCertificateData))
	fmt.Fprintf(h, "cert-file=%s\nkey-file=%s\n", u.ClientCertificate, u.ClientKey)
	fmt.Fprintf(h, "key=%s\n", sum(bytes.TrimSpace(u.ClientKeyData)))
	fmt.Fprintf(h, "token=%s\ntoken-file=%s\n", sum([]byte(u.Token)), u.TokenFile)
	fmt.Fprintf(h, "basic=%s:%s\n", u.Username, sum([]byte(u.Password)))
	fmt.Fprintf(h, "impersonate=%s|%s|%s|%v\n", u.Impersonate, u.ImpersonateUID, strings.Join(u.ImpersonateGroups, ","), u.ImpersonateUserExtra)
	if u.Exec != nil {
		b, _ := json.Marshal(u.Exec)
		fmt.Fprintf(h, "exec=%s\n", b)
	}
	if u.AuthProvider != nil {
		b, _ := json.Marshal(u.AuthProvider)
		fmt.Fprintf(h, "auth-provider=%s\n", sum(b))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sum(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func normalizeServer(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String()
}

// caFingerprint is the SHA-256 of the DER of every CA certificate, joined;
// "" when the cluster has no CA data, "file:PATH" when it names a file.
func caFingerprint(c *api.Cluster) string {
	if len(c.CertificateAuthorityData) == 0 {
		if c.CertificateAuthority != "" {
			return "file:" + c.CertificateAuthority
		}
		return ""
	}
	certs, err := parseCerts(c.CertificateAuthorityData)
	if err != nil {
		return "raw:" + sum(bytes.TrimSpace(c.CertificateAuthorityData))
	}
	parts := make([]string, len(certs))
	for i, cert := range certs {
		parts[i] = sum(cert.Raw)
	}
	return strings.Join(parts, ",")
}

func certFingerprint(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	certs, err := parseCerts(data)
	if err != nil {
		return "raw:" + sum(bytes.TrimSpace(data))
	}
	return sum(certs[0].Raw)
}

func short(fp string) string {
	if len(fp) > 16 {
		return fp[:16]
	}
	return fp
}

// DescribeCluster says what identifies a cluster, for messages: the server
// and the CA's fingerprint. It never includes secrets.
func DescribeCluster(c *api.Cluster) string {
	s := "server " + c.Server
	switch fp := caFingerprint(c); {
	case c.InsecureSkipTLSVerify:
		s += ", insecure-skip-tls-verify"
	case fp == "":
		s += ", system CAs"
	case strings.HasPrefix(fp, "file:"):
		s += ", CA file " + strings.TrimPrefix(fp, "file:")
	default:
		certs, _ := parseCerts(c.CertificateAuthorityData)
		if len(certs) > 0 {
			s += fmt.Sprintf(", CA %q sha256:%s", certs[0].Subject.CommonName, short(sum(certs[0].Raw)))
		} else {
			s += ", CA data that does not parse"
		}
	}
	return s
}

// DescribeUser says what identifies a user, for messages: the client
// certificate's subject and fingerprint, or a hash of the token. It never
// includes key material or the token itself.
func DescribeUser(u *api.AuthInfo) string {
	var parts []string
	if len(u.ClientCertificateData) > 0 {
		if certs, err := parseCerts(u.ClientCertificateData); err == nil {
			c := certs[0]
			parts = append(parts, fmt.Sprintf("client certificate CN=%q O=%q sha256:%s, expires %s", c.Subject.CommonName, strings.Join(c.Subject.Organization, ","), short(sum(c.Raw)), c.NotAfter.UTC().Format("2006-01-02")))
		} else {
			parts = append(parts, "client certificate that does not parse")
		}
	} else if u.ClientCertificate != "" {
		parts = append(parts, "client certificate file "+u.ClientCertificate)
	}
	if u.Token != "" {
		parts = append(parts, "token sha256:"+short(sum([]byte(u.Token))))
	}
	if u.TokenFile != "" {
		parts = append(parts, "token file "+u.TokenFile)
	}
	if u.Exec != nil {
		parts = append(parts, "exec plugin "+u.Exec.Command)
	}
	if u.AuthProvider != nil {
		parts = append(parts, "auth provider "+u.AuthProvider.Name)
	}
	if u.Username != "" {
		parts = append(parts, "basic auth user "+u.Username)
	}
	if len(parts) == 0 {
		return "no credentials"
	}
	return strings.Join(parts, ", ")
}
