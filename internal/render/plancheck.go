package render

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// checkPlan refuses a plan whose values would be unsafe in what render
// writes: the names, users and hosts that become words of the scripts'
// and the runbook's command lines (none may start with '-'), the versions
// and names written as they are into the runbook's Markdown (no line
// break, no code fence), the URLs (each under its release). A plan that
// plan.Derive made from a validated spec passes; a plan built or changed
// by hand may not, and the error names the field.
func checkPlan(p *plan.Plan) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("plan %s: %s", field, fmt.Sprintf(format, a...))
	}
	if errs := validation.IsDNS1123Label(p.Cluster); len(errs) > 0 {
		return bad("cluster", "%q is not a DNS label: %s", p.Cluster, strings.Join(errs, "; "))
	}
	for _, v := range []struct{ field, val string }{
		{"kubernetesVersion", p.KubernetesVersion}, {"versions.kubernetes", p.Versions.Kubernetes},
		{"versions.containerd", p.Versions.Containerd}, {"versions.crictl", p.Versions.Crictl},
		{"versions.calico", p.Versions.Calico}, {"versions.runc", p.Versions.Runc},
		{"versions.cniPlugins", p.Versions.CNIPlugins}, {"calico.version", p.Calico.Version},
	} {
		if _, err := spec.ParseVersion(v.val); err != nil {
			return bad(v.field, "%v", err)
		}
	}
	for i, a := range p.Addons {
		if _, err := spec.ParseVersion(a.Version); err != nil {
			return bad(fmt.Sprintf("addons[%d].version", i), "%v", err)
		}
	}
	if err := plainStrings(reflect.ValueOf(*p), ""); err != nil {
		return err
	}
	if err := p.CheckURLs(); err != nil {
		return bad("URLs", "%v", err)
	}
	// The CRD manifest's name is also a file name under
	// cluster/calico/manifests/ and --manifests-dir.
	if !safeFileName(p.Calico.CRDManifest) {
		return bad("calico.crdManifest", "%q is not a file name", p.Calico.CRDManifest)
	}
	if host, _, err := spec.SplitEndpoint(p.ControlPlaneEndpoint); err != nil || hostProblem(host) != "" {
		return bad("controlPlaneEndpoint", "%q is not host:port with a DNS name or an IP address", p.ControlPlaneEndpoint)
	}
	for _, n := range []struct{ field, val string }{
		{"dnsDomain", p.DNSDomain}, {"apiServer.host", p.APIServer.Host},
	} {
		if problem := hostProblem(n.val); problem != "" {
			return bad(n.field, "%s", problem)
		}
	}
	if p.DNSSuffix != "" && !spec.IsDNSName(p.DNSSuffix) {
		return bad("dnsSuffix", "%q is not a DNS name", p.DNSSuffix)
	}
	for i, s := range p.APIServer.CertSANs {
		if problem := hostProblem(s); problem != "" {
			return bad(fmt.Sprintf("apiServer.certSANs[%d]", i), "%s", problem)
		}
	}
	if reg := p.Registry; reg != nil {
		r, err := spec.ParseRegistry(reg.Prefix)
		if err != nil {
			return bad("registry.prefix", "%q: %v", reg.Prefix, err)
		}
		if r.HostPort() != reg.HostPort || r.Path != reg.Path {
			return bad("registry", "hostPort %q and path %q are not those of the prefix %q", reg.HostPort, reg.Path, reg.Prefix)
		}
	}
	for i, n := range p.Nodes {
		field := func(f string) string { return fmt.Sprintf("nodes[%d].%s", i, f) }
		if errs := validation.IsDNS1123Label(n.Name); len(errs) > 0 {
			return bad(field("name"), "%q is not a DNS label: %s", n.Name, strings.Join(errs, "; "))
		}
		if a, err := netip.ParseAddr(n.Address); err != nil || !a.Is4() {
			return bad(field("address"), "%q is not an IPv4 address", n.Address)
		}
		if n.SSH.User != "" {
			if problem := spec.SSHUserProblem(n.SSH.User, n.IsWindows()); problem != "" {
				return bad(field("ssh.user"), "%s", problem)
			}
		}
		if n.SSH.Host != "" {
			if problem := spec.SSHHostProblem(n.SSH.Host); problem != "" {
				return bad(field("ssh.host"), "%s", problem)
			}
		}
	}
	return nil
}

// hostProblem says what is wrong with a host that must be an IP address
// or a DNS name, "" when nothing is.
func hostProblem(h string) string {
	if _, err := netip.ParseAddr(h); err == nil {
		return ""
	}
	if spec.IsDNSName(h) {
		return ""
	}
	return fmt.Sprintf("%q is neither an IP address nor a DNS name", h)
}

// plainStrings refuses a string anywhere in v (a plan, walked by its JSON
// field names) that holds a control character or a line or paragraph
// separator: render writes many of them as they are into Markdown and
// comments, where a line break would start a code block or a command.
// The registry CA, a PEM file's text, is the one multi-line value.
func plainStrings(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == 0x2028 || r == 0x2029 }); i >= 0 {
			return fmt.Errorf("plan %s: %q holds the control character %q", path, s, []rune(s[i:])[0])
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return plainStrings(v.Elem(), path)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := plainStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = f.Name
			}
			if path != "" {
				name = path + "." + name
			}
			if name == "registry.CA" {
				continue
			}
			if err := plainStrings(v.Field(i), name); err != nil {
				return err
			}
		}
	}
	return nil
}

// safeFileName reports whether s is one plain file name: letters, digits,
// '.', '_' and '-', not starting with '.' or '-'.
func safeFileName(s string) bool {
	if s == "" || s[0] == '.' || s[0] == '-' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
}
