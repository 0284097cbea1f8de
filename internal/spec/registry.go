package spec

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hybridctl/hybridctl/internal/finding"
)

// Registry is a parsed images.registry: host[:port][/path].
type Registry struct {
	// Host is a DNS name, an IPv4 address or a bracketed IPv6 address.
	Host string
	// Port is 0 when none is given (HTTPS, 443).
	Port int
	// Path is the repository prefix without slashes at either end.
	Path string
}

// HostPort is the registry's host with its port, as containerd's certs.d
// directory and image references name it.
func (r Registry) HostPort() string {
	if r.Port == 0 {
		return r.Host
	}
	return r.Host + ":" + strconv.Itoa(r.Port)
}

// Prefix is what replaces an image's registry host: host[:port][/path].
func (r Registry) Prefix() string {
	if r.Path == "" {
		return r.HostPort()
	}
	return r.HostPort() + "/" + r.Path
}

// pathComponent is distribution's repository path component.
var pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)

// ParseRegistry parses images.registry. The error says what is wrong in
// words a user can act on.
func ParseRegistry(s string) (Registry, error) {
	var r Registry
	if s == "" {
		return r, fmt.Errorf("is empty")
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return r, fmt.Errorf("%q has a scheme (%s://); write host[:port][/path]: containerd and kubeadm reach the registry over HTTPS", s, s[:i])
	}
	if strings.Contains(s, "@") {
		return r, fmt.Errorf("%q has a digest; a registry is host[:port][/path], the images keep their own digests", s)
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return r, fmt.Errorf("%q contains white space", s)
	}
	hostport, path, _ := strings.Cut(s, "/")
	if strings.HasPrefix(hostport, "[") {
		end := strings.Index(hostport, "]")
		if end < 0 {
			return r, fmt.Errorf("%q has no closing ] after the IPv6 address", s)
		}
		a, err := netip.ParseAddr(hostport[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return r, fmt.Errorf("%q: %q is not an IPv6 address", s, hostport[1:end])
		}
		r.Host = hostport[:end+1]
		rest := hostport[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return r, fmt.Errorf("%q: want :port after the IPv6 address, got %q", s, rest)
			}
			port, err := parsePort(p)
			if err != nil {
				return r, fmt.Errorf("%q: %w", s, err)
			}
			r.Port = port
		}
	} else {
		if strings.Count(hostport, ":") > 1 {
			return r, fmt.Errorf("%q looks like an IPv6 address without brackets; write [address]:port", s)
		}
		h, p, hasPort := strings.Cut(hostport, ":")
		if hasPort {
			port, err := parsePort(p)
			if err != nil {
				return r, fmt.Errorf("%q: %w", s, err)
			}
			r.Port = port
		}
		if h == "" {
			return r, fmt.Errorf("%q has no host", s)
		}
		if a, err := netip.ParseAddr(h); err == nil {
			if !a.Is4() {
				return r, fmt.Errorf("%q: %q is not an IPv4 address", s, h)
			}
		} else if !isRegistryHostName(h) {
			return r, fmt.Errorf("%q: host %q is not a DNS name or an IP address", s, h)
		}
		if !hasPort && h != "localhost" && !strings.Contains(h, ".") {
			return r, fmt.Errorf("%q: a host without a dot or a port is read as a Docker Hub namespace; write %s:PORT or its full DNS name", s, h)
		}
		r.Host = h
	}
	if path != "" || strings.HasSuffix(s, "/") {
		comps := strings.Split(path, "/")
		for _, c := range comps {
			switch {
			case c == "":
				return r, fmt.Errorf("%q has an empty path component (a doubled or trailing /)", s)
			case strings.Contains(c, ":"):
				return r, fmt.Errorf("%q has a tag (%s); a registry is host[:port][/path], the images keep their own tags", s, c[strings.Index(c, ":"):])
			case !pathComponent.MatchString(c):
				return r, fmt.Errorf("%q: path component %q must be lowercase letters and digits separated by ., _, __ or -", s, c)
			}
		}
		r.Path = path
	}
	if len(r.Prefix())+len("/calico/node-windows") > 255 {
		return r, fmt.Errorf("%q is too long: image names are at most 255 characters", s)
	}
	return r, nil
}

func parsePort(p string) (int, error) {
	if p == "" {
		return 0, fmt.Errorf("the port after : is empty")
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number", p)
		}
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, fmt.Errorf("port %q has a leading zero", p)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s is outside 1-65535", p)
	}
	return n, nil
}

var registryLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)

func isRegistryHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if len(l) > 63 || !registryLabel.MatchString(l) {
			return false
		}
	}
	return true
}

func checkRegistry(v *validator) {
	im := v.c.Spec.Images
	if im.Registry != "" {
		if _, err := ParseRegistry(im.Registry); err != nil {
			v.errorf("spec.images.registry", "%v", err)
		}
	}
	if im.RegistryCA == "" {
		return
	}
	const path = "spec.images.registryCA"
	switch {
	case im.Registry == "":
		v.errorf(path, "is set without images.registry; the CA is only for the private registry")
	case filepath.IsAbs(im.RegistryCA) || !filepath.IsLocal(im.RegistryCA):
		v.errorf(path, "%q must be a file beside the spec (a relative path that stays in the spec's directory)", im.RegistryCA)
	}
}

func checkOffline(v *validator) {
	s := v.c.Spec
	enum := func(path, val string) {
		allowed := enums()[path]
		for _, a := range allowed {
			if val == a {
				return
			}
		}
		v.errorf(path, "%q is not one of %s", val, strings.Join(allowed, ", "))
	}
	enum("spec.packages.source", s.Packages.Source)
	enum("spec.network.configure", s.Network.Configure)
	if s.Packages.Source == SourceBundle && s.Images.Registry == "" {
		v.warnf("spec.packages.source", "is bundle but images.registry is not set: binaries come from the bundle, yet every image is still pulled from the public registries")
	}
}

// MaxRegistryCABytes bounds the registry CA file.
const MaxRegistryCABytes = 1 << 20

// ReadRegistryCA reads images.registryCA from dir (the spec's directory)
// into RegistryCAData and adds a diagnostic when it is missing or holds
// anything but certificates. It does nothing when the spec has errors on
// the field already or no CA is named.
func (r *Result) ReadRegistryCA(ctx context.Context, dir string) {
	if r.Cluster == nil || r.Cluster.Spec.Images.RegistryCA == "" {
		return
	}
	const path = "spec.images.registryCA"
	for _, d := range r.Diagnostics {
		if d.Path == path && d.Severity == finding.Error {
			return
		}
	}
	name := r.Cluster.Spec.Images.RegistryCA
	data, err := readLimited(ctx, filepath.Join(dir, name), MaxRegistryCABytes)
	if err == nil {
		err = checkCAPEM(data)
	}
	if err != nil {
		rule := Rules()[0]
		for _, ru := range Rules() {
			if ru.ID == "S701" {
				rule = ru
			}
		}
		r.Diagnostics = append(r.Diagnostics, Diagnostic{
			Severity: finding.Error, Rule: rule.ID, Name: rule.Name,
			File: r.File, Line: r.Line(path), Path: path,
			Message: fmt.Sprintf("%s: %v", name, err),
		})
		r.Diagnostics.sort()
		return
	}
	r.Cluster.Spec.Images.RegistryCAData = data
}

func readLimited(ctx context.Context, file string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("is larger than %d bytes", limit)
	}
	return data, nil
}

// checkCAPEM accepts PEM text holding one or more CERTIFICATE blocks that
// parse as X.509 certificates, and nothing else.
func checkCAPEM(data []byte) error {
	rest := data
	n := 0
	line := 1
	for {
		trimmed := bytes.TrimLeft(rest, " \t\r\n")
		line += bytes.Count(rest[:len(rest)-len(trimmed)], []byte("\n"))
		if len(trimmed) == 0 {
			break
		}
		block, after := pem.Decode(trimmed)
		if block == nil {
			return fmt.Errorf("line %d: not a PEM block; the file may hold only CERTIFICATE blocks", line)
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("line %d: a %q block; the file may hold only CERTIFICATE blocks (never a key)", line, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("line %d: the certificate does not parse: %w", line, err)
		}
		n++
		line += bytes.Count(trimmed[:len(trimmed)-len(after)], []byte("\n"))
		rest = after
	}
	if n == 0 {
		return fmt.Errorf("holds no certificate")
	}
	return nil
}

func checkCheckWorkloads(v *validator) {
	cw := v.c.Spec.CheckWorkloads
	const imagePath = "spec.checkWorkloads.image"
	if cw.Image != "" {
		named, err := reference.ParseNormalizedNamed(cw.Image)
		switch {
		case err != nil:
			v.errorf(imagePath, "%q is not an image reference (want for example %s): %v", cw.Image, DefaultCheckWorkloadImage, err)
		default:
			_, digested := named.(reference.Digested)
			tagged, hasTag := named.(reference.Tagged)
			if !digested && (!hasTag || tagged.Tag() == "latest") {
				v.warnf(imagePath, "%q names no version (no tag but latest, no digest): the nodes may run another image than the one the plan lists and the mirror holds; pin a tag or a digest", cw.Image)
			}
		}
	}
	if s := cw.ImagePullSecret; s != "" {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			v.errorf("spec.checkWorkloads.imagePullSecret", "%q is not a Secret name: %s", s, strings.Join(errs, "; "))
		}
	}
}
