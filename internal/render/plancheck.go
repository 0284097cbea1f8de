package render

import (
	"fmt"
	"net/netip"
	"strings"

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
	if err := p.CheckURLs(); err != nil {
		return bad("URLs", "%v", err)
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
