package render

import (
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// Where containerd looks for registry host configuration (config_path).
const (
	LinuxCertsDir   = "/etc/containerd/certs.d"
	WindowsCertsDir = `C:\Program Files\containerd\certs.d`
)

// hostsFile is one containerd registry host directory: certs.d/DIR with a
// hosts.toml and, for the private registry, its ca.crt.
type hostsFile struct {
	// Dir is the directory name: the registry host, with :port written
	// _port_ (containerd reads that form first, and Windows needs it).
	Dir       string
	HostsTOML string
	// CA is the PEM of ca.crt, only in the private registry's directory.
	CA string
}

// hostDirectory is containerd's certs.d name for a host[:port].
func hostDirectory(host string) string {
	if i := strings.LastIndex(host, ":"); i > 0 && !strings.HasSuffix(host, "]") {
		return host[:i] + "_" + host[i+1:] + "_"
	}
	return host
}

// containerdHosts returns the certs.d directories of a plan with a private
// registry: one per mirrored public registry, each pulling through the
// private one, and the private registry's own (with its CA when one is
// given). certsDir is the node's certs.d and sep its path separator.
func containerdHosts(p *plan.Plan, certsDir, sep string) []hostsFile {
	reg := p.Registry
	if reg == nil {
		return nil
	}
	regDir := hostDirectory(reg.HostPort)
	// The private registry is the namespace's `server`, not a [host]:
	// containerd tries the [host] entries in order and then `server`, and
	// when `server` is missing it appends the upstream registry itself
	// (registry-1.docker.io for docker.io), so a mirror given only as a
	// [host] falls back to the internet when it fails. With `server` set
	// and no [host], the private registry is the only host containerd
	// knows for the namespace (containerd docs/hosts.md, "server field";
	// core/remotes/docker/config/hosts.go, parseHostsFile and
	// ConfigureHosts).
	serverURL := "https://" + reg.HostPort
	override := ""
	if reg.Path != "" {
		serverURL += "/v2/" + reg.Path
		override = "override_path = true\n"
	}
	caLine := ""
	if reg.HasCA {
		caLine = fmt.Sprintf("ca = '%s%s%s%sca.crt'\n", certsDir, sep, regDir, sep)
	}
	mirror := "# containerd registry host configuration, rendered by hybridctl: every\n" +
		"# image of this directory's registry is pulled from the private registry,\n" +
		"# under the same repository path. The private registry is the server,\n" +
		"# with no host table before it: containerd never falls back to the\n" +
		"# upstream registry.\n" +
		fmt.Sprintf("server = '%s'\n", serverURL) +
		"capabilities = ['pull', 'resolve']\n" + override + caLine
	var out []hostsFile
	for _, up := range plan.MirroredRegistries() {
		out = append(out, hostsFile{Dir: up, HostsTOML: mirror})
	}
	own := "# containerd registry host configuration for the private registry, rendered by hybridctl.\n" +
		fmt.Sprintf("server = 'https://%s'\n", reg.HostPort)
	own += caLine
	out = append(out, hostsFile{Dir: regDir, HostsTOML: own, CA: reg.CA})
	return out
}
