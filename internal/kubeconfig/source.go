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
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hybridctl/hybridctl/internal/manifest"
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
//
// client-go expands YAML aliases into JSON without a bound on the bytes
// they add (a few KB can grow to gigabytes), so the aliases are measured
// first and a file whose aliases expand past manifest's limits is refused.
func LoadConfig(name string, data []byte) (*api.Config, error) {
	if err := manifest.CheckYAML(data, &manifest.AliasBudget{}); err != nil {
		return nil, newErr(KindInvalid, fmt.Sprintf("%s: not a valid kubeconfig", name), err)
	}
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

// SourceOptions say how a source kubeconfig is read.
type SourceOptions struct {
	// Context picks the source's context; its current context when empty.
	Context string
	// Dir is the source file's own directory: file references
	// (certificate-authority, client-certificate, client-key, tokenFile)
	// are read only inside it, through this os.Root, so that neither `..`
	// nor a symbolic link can lead out of it. Nil for a source read from
	// standard input: then every file reference is refused, since it would
	// resolve against whatever the current directory happens to be.
	Dir *os.Root
	// AllowExec accepts a user that authenticates through an exec
	// credential plugin or an auth-provider. The plugin is stored, never
	// run by hybridctl; it runs when the context is used.
	AllowExec bool
}

// maxRefSize bounds a file a source refers to: a certificate, a key or a
// token is a few kilobytes.
const maxRefSize = 1 << 20

// ParseSource reads one context (opts.Context, else the current one) out of
// a source kubeconfig. It never executes anything and never reads a file
// outside opts.Dir: the referenced files are read and inlined, so the
// returned entries hold no file reference at all.
func ParseSource(name string, data []byte, opts SourceOptions) (*Source, error) {
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

	sourceContext := opts.Context
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
	if c.Namespace != "" {
		// The namespace is the one field of the context that is kept as it
		// is, and kubeconfig list shows it: a namespace is a DNS label.
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			return nil, newErr(KindInvalid, fmt.Sprintf("%s: context %q: namespace %q is not a namespace name: %s", name, ctxName, c.Namespace, strings.Join(msgs, "; ")), nil)
		}
	}
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

	// Plugins first: a refused user must not cause any file to be read.
	user := u.DeepCopy()
	user.LocationOfOrigin = ""
	user.Extensions = map[string]runtimeObject{}
	if err := checkPlugins(user, where("user", c.AuthInfo), opts); err != nil {
		return nil, err
	}

	cluster := cl.DeepCopy()
	cluster.LocationOfOrigin = ""
	cluster.Extensions = map[string]runtimeObject{}
	if err := inline(opts.Dir, &cluster.CertificateAuthority, &cluster.CertificateAuthorityData, where("cluster", c.Cluster), "certificate-authority"); err != nil {
		return nil, err
	}
	if err := checkCluster(cluster, where("cluster", c.Cluster)); err != nil {
		return nil, err
	}

	if err := inline(opts.Dir, &user.ClientCertificate, &user.ClientCertificateData, where("user", c.AuthInfo), "client-certificate"); err != nil {
		return nil, err
	}
	if err := inline(opts.Dir, &user.ClientKey, &user.ClientKeyData, where("user", c.AuthInfo), "client-key"); err != nil {
		return nil, err
	}
	if user.TokenFile != "" {
		var tok []byte
		if err := inline(opts.Dir, &user.TokenFile, &tok, where("user", c.AuthInfo), "tokenFile"); err != nil {
			return nil, err
		}
		if user.Token == "" {
			user.Token = strings.TrimSpace(string(tok))
		}
	}
	if err := checkUser(user, where("user", c.AuthInfo)); err != nil {
		return nil, err
	}
	src.Cluster, src.User = cluster, user
	return src, nil
}

// checkPlugins refuses a user that would run a program (an exec credential
// plugin, or an auth-provider such as gcp's cmd-path) unless AllowExec. The
// message names what would run: the command, its arguments and the names
// (never the values) of the environment variables it would get.
func checkPlugins(u *api.AuthInfo, where string, opts SourceOptions) error {
	if u.Exec == nil && u.AuthProvider == nil {
		return nil
	}
	if !opts.AllowExec {
		return newErr(KindInvalid, fmt.Sprintf("%s: refusing %s. hybridctl never runs it, and a kubeadm admin.conf never has one; if you trust this file, --allow-exec stores it (it then runs whenever the context is used)", where, DescribePlugin(u)), nil)
	}
	if u.Exec != nil && strings.ContainsAny(u.Exec.Command, `/\`) && !filepath.IsAbs(u.Exec.Command) {
		// client-go resolves a relative command against the file that
		// names it; the import no longer has that file.
		if opts.Dir == nil {
			return newErr(KindInvalid, fmt.Sprintf("%s: the exec plugin's command %q is a relative path, which means nothing for standard input; give an absolute path", where, u.Exec.Command), nil)
		}
		u.Exec.Command = filepath.Join(opts.Dir.Name(), u.Exec.Command)
	}
	return nil
}

// DescribePlugin says what program a user's exec plugin or auth-provider
// would run, for messages; "" when it has none. Environment values and
// auth-provider secrets are never included.
func DescribePlugin(u *api.AuthInfo) string {
	var parts []string
	if e := u.Exec; e != nil {
		s := fmt.Sprintf("an exec credential plugin that would run %q", e.Command)
		if len(e.Args) > 0 {
			q := make([]string, len(e.Args))
			for i, a := range e.Args {
				q[i] = strconv.Quote(a)
			}
			s += " with arguments " + strings.Join(q, " ")
		}
		if len(e.Env) > 0 {
			names := make([]string, len(e.Env))
			for i, v := range e.Env {
				names[i] = v.Name
			}
			s += " and environment variables " + strings.Join(names, ", ")
		}
		parts = append(parts, s)
	}
	if a := u.AuthProvider; a != nil {
		s := fmt.Sprintf("the auth-provider %q", a.Name)
		if cmd := a.Config["cmd-path"]; cmd != "" {
			s += fmt.Sprintf(", which would run %q", cmd)
			if args := a.Config["cmd-args"]; args != "" {
				s += fmt.Sprintf(" with arguments %q", args)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " and ")
}

// inline replaces a file reference by the file's content, read through
// dir. When both are set, the data wins, as in client-go; the reference is
// dropped either way (and still checked, so that a source from standard
// input never names a local file).
func inline(dir *os.Root, path *string, data *[]byte, where, field string) error {
	if *path == "" {
		return nil
	}
	ref := *path
	b, err := readRef(dir, ref)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Msg = fmt.Sprintf("%s: %s %q: %s", where, field, ref, e.Msg)
			return e
		}
		return newErr(KindIO, fmt.Sprintf("%s: %s %q", where, field, ref), err)
	}
	if len(*data) == 0 {
		*data = b
	}
	*path = ""
	return nil
}

// readRef reads one file a source refers to, only when it lies inside
// dir: refused are any reference when dir is nil (standard input), an
// absolute path, a path with "..", a symbolic link that leads out of dir,
// anything but a regular file (a FIFO would block for ever, a device never
// end) and a file over maxRefSize.
func readRef(dir *os.Root, ref string) ([]byte, error) {
	refused := func(why string) error { return newErr(KindInvalid, "refused: "+why, nil) }
	switch {
	case dir == nil:
		return nil, refused("a kubeconfig read from standard input cannot refer to files (they would be read from whatever the current directory is); embed the data (certificate-authority-data, client-certificate-data, client-key-data, token) or import from a file")
	case filepath.IsAbs(ref) || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, `\`) || filepath.VolumeName(ref) != "":
		return nil, refused("an absolute path; only files inside the source's own directory are read")
	case slices.Contains(strings.FieldsFunc(ref, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return nil, refused(`".." leads out of the source's directory; only files inside it are read`)
	case !filepath.IsLocal(ref):
		return nil, refused("not a plain path inside the source's directory")
	}
	// Say clearly when a symbolic link leads out; os.Root below refuses
	// it anyway.
	if base, err := filepath.EvalSymlinks(dir.Name()); err == nil {
		if real, err := filepath.EvalSymlinks(filepath.Join(dir.Name(), ref)); err == nil {
			if rel, err := filepath.Rel(base, real); err != nil || !filepath.IsLocal(rel) {
				return nil, refused("a symbolic link that leads out of the source's directory; only files inside it are read")
			}
		}
	}
	fi, err := dir.Stat(ref)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, newErr(KindInvalid, "refused: cannot be read inside the source's directory", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, refused(fmt.Sprintf("not a regular file (%s)", fileType(fi.Mode())))
	}
	if fi.Size() > maxRefSize {
		return nil, refused(fmt.Sprintf("%d bytes; a certificate, key or token file is at most %d", fi.Size(), maxRefSize))
	}
	f, err := dir.OpenFile(ref, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have been swapped between Stat and Open.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, refused("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRefSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRefSize {
		return nil, refused(fmt.Sprintf("over %d bytes; a certificate, key or token file is smaller", maxRefSize))
	}
	return b, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
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
