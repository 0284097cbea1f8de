// Package hosts boots and removes the lab's Linux nodes: one
// systemd-nspawn container per spec node, booted with its own systemd from a
// cached Debian tree, on a bridge that carries the spec's node network, with
// the gateway's services (DNS, the registry) on the host side of the bridge.
// Every resource is recorded in a state file before it is made, so Down
// removes everything after a crash as well. See docs/e2e.md.
package hosts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hybridctl/hybridctl/hack/lab/artifacts"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// RegistryPort is the port the lab registry listens on at the gateway.
const RegistryPort = 5000

// Node is one lab host.
type Node struct {
	Name    string
	FQDN    string
	Address netip.Addr
	// User is the SSH user apply logs in as (root or a sudoer the lab makes).
	User         string
	ControlPlane bool
}

// Record is one DNS A record dnsmasq serves.
type Record struct {
	Name    string
	Address netip.Addr
}

// Lab is what the lab makes for one spec.
type Lab struct {
	// Name is the cluster name (metadata.name).
	Name string
	// Dir holds everything of this lab: state, keys, node trees, logs.
	Dir string
	// CacheDir is the shared cache (~/.cache/hybridctl/lab): the Debian
	// tree and the registry's storage survive lab down.
	CacheDir  string
	Network   netip.Prefix
	Gateway   netip.Addr
	DNSSuffix string
	MTU       int
	Records   []Record
	Nodes     []Node
	// Versions are what the bundle holds (the spec's pinned versions,
	// which FromSpec requires to be ones the lab builds).
	Versions artifacts.BundleVersions
	// APIEndpoint is the spec's controlPlaneEndpoint (host:port), which the
	// nodes resolve through the lab's DNS.
	APIEndpoint string
	// Plan is the spec's plan (the bundle's artifact list comes from it).
	Plan *plan.Plan
}

// ID is the short hash that names the lab's bridge.
func (l *Lab) ID() string {
	sum := sha256.Sum256([]byte(l.Name))
	return hex.EncodeToString(sum[:])[:8]
}

// Bridge is the host's bridge for the node network (at most 15 bytes).
func (l *Lab) Bridge() string { return "hl-" + l.ID() }

// CgroupName is the directory the lab's processes live under in every
// cgroup hierarchy.
func (l *Lab) CgroupName() string { return CgroupPrefix + l.Name }

// HostsMarker ends every line the lab adds to the host's /etc/hosts.
func (l *Lab) HostsMarker() string { return HostsMarkerPrefix + l.Name }

// Registry is host:port of the lab registry.
func (l *Lab) Registry() string {
	return netip.AddrPortFrom(l.Gateway, RegistryPort).String()
}

// Paths of the lab's files.
func (l *Lab) StatePath() string      { return filepath.Join(l.Dir, "state.json") }
func (l *Lab) KeyPath() string        { return filepath.Join(l.Dir, "id_ed25519") }
func (l *Lab) KnownHostsPath() string { return filepath.Join(l.Dir, "known_hosts") }
func (l *Lab) KubeconfigPath() string { return filepath.Join(l.Dir, "kubeconfig") }
func (l *Lab) ApplyStatePath() string { return filepath.Join(l.Dir, "apply.state.json") }
func (l *Lab) CACertPath() string     { return filepath.Join(l.Dir, "pki", "ca.crt") }
func (l *Lab) NodeDir(n string) string {
	return filepath.Join(l.Dir, "nodes", n)
}
func (l *Lab) NodeRoot(n string) string { return filepath.Join(l.NodeDir(n), "root") }
func (l *Lab) BundleDir() string        { return BundleDir(l.CacheDir, l.Versions.Kubernetes) }
func (l *Lab) RegistryStorage() string  { return filepath.Join(l.CacheDir, "registry") }
func (l *Lab) LogDir() string           { return filepath.Join(l.Dir, "log") }

// BundleDir is where `lab bundle` lays out the bundle of a Kubernetes
// version: one directory per version (bundles/v1.36.3, bundles/v1.37.2),
// so an upgrade applies with one and upgrades with the other.
func BundleDir(cache, kubernetes string) string {
	return filepath.Join(cache, "bundles", kubernetes)
}

// Markers that identify the lab's resources on the host, for Down and
// Leftovers.
const (
	CgroupPrefix      = "hybridctl-lab-"
	HostsMarkerPrefix = "# hybridctl-lab "
	BridgePrefix      = "hl-"
)

// Users returns the distinct SSH users other than root, sorted.
func (l *Lab) Users() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range l.Nodes {
		if n.User != "root" && !seen[n.User] {
			seen[n.User] = true
			out = append(out, n.User)
		}
	}
	sort.Strings(out)
	return out
}

// Flags are the extra arguments hybridctl apply and reset need in this lab.
func (l *Lab) Flags() []string {
	return []string{
		"--identity", l.KeyPath(),
		"--known-hosts", l.KnownHostsPath(),
		"--kubeconfig", l.KubeconfigPath(),
		"--state", l.ApplyStatePath(),
	}
}

// ApplyFlags are Flags plus the ones only apply takes: the bundle, and
// time-sync ignored (the nodes share the host's clock, so they cannot
// drift apart, but the host's kernel clock is not marked synchronised and a
// container cannot run chrony).
func (l *Lab) ApplyFlags() []string {
	return append(l.Flags(), "--bundle", l.BundleDir(), "--ignore-preflight-errors", "time-sync")
}

// UpgradeFlags are the flags hybridctl upgrade needs in the lab: the
// connection's and the spec version's bundle (upgrade runs no preflight).
func (l *Lab) UpgradeFlags() []string {
	return append(l.Flags(), "--bundle", l.BundleDir())
}

// validName is what the lab accepts as a node or cluster name: it becomes a
// machine name, a host name and a directory name.
func validName(s string) error {
	if s == "" || len(s) > 63 {
		return fmt.Errorf("%q must be 1 to 63 characters", s)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(s)-1
		if !ok {
			return fmt.Errorf("%q must be lower-case letters, digits and inner dashes", s)
		}
	}
	return nil
}

// validUser is what the lab accepts as an SSH user name: a POSIX user
// name, as the spec requires of a Linux node's ssh.user.
func validUser(s string) error {
	if !spec.IsPOSIXUserName(s) {
		return fmt.Errorf("%q is not a POSIX user name (lower-case letters, digits, '_' and '-', not starting with a digit or '-', at most %d characters)", s, spec.MaxPOSIXUserName)
	}
	return nil
}

// hostsLines are the lines the lab adds to the host's /etc/hosts.
func (l *Lab) hostsLines() []string {
	var out []string
	for _, r := range l.Records {
		out = append(out, fmt.Sprintf("%s %s %s", r.Address, r.Name, l.HostsMarker()))
	}
	return out
}

// joinComma is strings.Join with ", ".
func joinComma(s []string) string { return strings.Join(s, ", ") }
