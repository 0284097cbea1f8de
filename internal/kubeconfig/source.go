package kubeconfig

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"
)

// Source is the part of a source kubeconfig that an import takes: one
// context with its cluster and user, every file reference inlined, so the
// imported entries are self-contained.
type Source struct {
	// Name is how the source is named in messages: the file's path, or
	// "<stdin>".
	Name string
	// Path is the source file's absolute path, "<stdin>" for standard input.
	Path string
	// SHA256 is the hex SHA-256 of the source's bytes.
	SHA256 string
	// Context is the name of the source context that was taken.
	Context string
	// ClusterName and UserName are the entries' names in the source (for
	// kubeadm: "kubernetes" and "kubernetes-admin").
	ClusterName, UserName string

	Cluster   *api.Cluster
	User      *api.AuthInfo
	Namespace string
}

// maxSourceSize bounds what ParseSource reads; a kubeconfig is kilobytes.
const maxSourceSize = 16 << 20

// LoadConfig parses kubeconfig bytes with client-go's loader. The error names
// the file and never carries the file's content: client-go's own message for
// a duplicate name prints the whole list of entries, private keys included,
// so it is cut before the list.
func LoadConfig(name string, data []byte) (*api.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: not a valid kubeconfig", name), errors.New(redactLoadError(err.Error())))
	}
	return cfg, nil
}

// redactLoadError keeps the part of a client-go load error that describes
// the problem and drops any dump of the decoded entries.
func redactLoadError(msg string) string {
	if i := strings.Index(msg, " in list: "); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// ParseSource reads the context named sourceContext (the source's current
// context when empty) out of a source kubeconfig. baseDir resolves relative
// file references (certificate-authority, client-certificate, client-key,
// tokenFile) the way client-go does: relative to the source file's
// directory. The referenced files are read and inlined.
func ParseSource(name string, data []byte, baseDir, sourceContext string) (*Source, error) {
	if len(data) > maxSourceSize {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: %d bytes is too large for a kubeconfig", name, len(data)), nil)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: empty file, not a kubeconfig", name), nil)
	}
	cfg, err := LoadConfig(name, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	src := &Source{Name: name, Path: name, SHA256: hex.EncodeToString(sum[:])}

	ctxName := sourceContext
	if ctxName == "" {
		ctxName = cfg.CurrentContext
	}
	if ctxName == "" {
		switch len(cfg.Contexts) {
		case 0:
			return nil, newErr(KindInvalid, fmt.Sprintf("%s: has no contexts", name), nil)
		case 1:
			for n := range cfg.Contexts {
				ctxName = n
			}
		default:
			return nil, newErr(KindUsage, fmt.Sprintf("%s: has %d contexts and no current-context; pick one with --source-context (%s)", name, len(cfg.Contexts), strings.Join(sortedKeys(cfg.Contexts), ", ")), nil)
		}
	}
	c, ok := cfg.Contexts[ctxName]
	if !ok || c == nil {
		if sourceContext != "" {
			return nil, newErr(KindUsage, fmt.Sprintf("%s: no context %q (it has: %s)", name, ctxName, strings.Join(sortedKeys(cfg.Contexts), ", ")), nil)
		}
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: current-context %q is not defined in the file", name, ctxName), nil)
	}
	src.Context = ctxName
	src.Namespace = c.Namespace
	src.ClusterName, src.UserName = c.Cluster, c.AuthInfo
	cl, ok := cfg.Clusters[c.Cluster]
	if !ok || cl == nil {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: context %q refers to cluster %q, which is not defined", name, ctxName, c.Cluster), nil)
	}
	u, ok := cfg.AuthInfos[c.AuthInfo]
	if !ok || u == nil {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: context %q refers to user %q, which is not defined", name, ctxName, c.AuthInfo), nil)
	}
	where := func(kind, n string) string { return fmt.Sprintf("%s: %s %q", name, kind, n) }

	cluster := cl.DeepCopy()
	cluster.LocationOfOrigin = ""
	cluster.Extensions = map[string]runtimeObject{}
	if err := inline(baseDir, &cluster.CertificateAuthority, &cluster.CertificateAuthorityData, where("cluster", c.Cluster), "certificate-authority"); err != nil {
		return nil, err
	}
	if err := checkCluster(cluster, where("cluster", c.Cluster)); err != nil {
		return nil, err
	}

	user := u.DeepCopy()
	user.LocationOfOrigin = ""
	user.Extensions = map[string]runtimeObject{}
	if err := inline(baseDir, &user.ClientCertificate, &user.ClientCertificateData, where("user", c.AuthInfo), "client-certificate"); err != nil {
		return nil, err
	}
	if err := inline(baseDir, &user.ClientKey, &user.ClientKeyData, where("user", c.AuthInfo), "client-key"); err != nil {
		return nil, err
	}
	if user.TokenFile != "" {
		var tok []byte
		if err := inline(baseDir, &user.TokenFile, &tok, where("user", c.AuthInfo), "tokenFile"); err != nil {
			return nil, err
		}
		if user.Token == "" {
			user.Token = strings.TrimSpace(string(tok))
		}
	}
	if user.Exec != nil && strings.ContainsRune(user.Exec.Command, filepath.Separator) && !filepath.IsAbs(user.Exec.Command) {
		user.Exec.Command = filepath.Join(baseDir, user.Exec.Command)
	}
	if err := checkUser(user, where("user", c.AuthInfo)); err != nil {
		return nil, err
	}
	src.Cluster, src.User = cluster, user
	return src, nil
}

// inline replaces a file reference by the file's content. When both are set,
// the data wins, as in client-go.
func inline(baseDir string, path *string, data *[]byte, where, field string) error {
	if *path == "" {
		return nil
	}
	if len(*data) == 0 {
		p := *path
		if !filepath.IsAbs(p) {
			p = filepath.Join(baseDir, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return newErr(KindIO, fmt.Sprintf("%s: %s", where, field), err)
		}
		*data = b
	}
	*path = ""
	return nil
}

func checkCluster(c *api.Cluster, where string) error {
	if c.Server == "" {
		return newErr(KindInvalid, where+": no server", nil)
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Host == "" {
		return newErr(KindInvalid, fmt.Sprintf("%s: server %q is not a URL", where, c.Server), nil)
	}
	if u.Scheme != "https" {
		return newErr(KindInvalid, fmt.Sprintf("%s: server %q is not https; hybridctl does not import credentials that would travel in clear text", where, c.Server), nil)
	}
	if len(c.CertificateAuthorityData) > 0 {
		if _, err := parseCerts(c.CertificateAuthorityData); err != nil {
			return newErr(KindInvalid, where+": certificate-authority-data", err)
		}
	}
	return nil
}

func checkUser(u *api.AuthInfo, where string) error {
	hasCert, hasKey := len(u.ClientCertificateData) > 0, len(u.ClientKeyData) > 0
	switch {
	case hasCert && !hasKey:
		return newErr(KindInvalid, where+": client certificate without a client key", nil)
	case hasKey && !hasCert:
		return newErr(KindInvalid, where+": client key without a client certificate", nil)
	case hasCert:
		if _, err := parseCerts(u.ClientCertificateData); err != nil {
			return newErr(KindInvalid, where+": client-certificate-data", err)
		}
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			// crypto/tls's messages describe the problem, never the key.
			return newErr(KindInvalid, where+": client certificate and key do not form a pair", err)
		}
	}
	if !hasCert && u.Token == "" && u.Exec == nil && u.AuthProvider == nil && u.Username == "" {
		return newErr(KindInvalid, where+": no credentials (no client certificate, token, exec plugin or basic auth)", nil)
	}
	return nil
}

// parseCerts decodes every CERTIFICATE block of a PEM bundle.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
