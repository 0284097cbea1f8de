package apply

import (
	"net"
	"strconv"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// The guide's Linux nodes; another distribution is a preflight warning.
const (
	expectedLinuxID      = "ubuntu"
	expectedLinuxVersion = "26.04"
)

// Hosts returns the plan's nodes as engine hosts, in plan order.
func Hosts(p *plan.Plan) []provision.Host {
	out := make([]provision.Host, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		h := provision.Host{Name: n.Name, Role: provision.RoleWorker, OS: provision.Linux, Address: n.Address}
		if n.IsControlPlane() {
			h.Role = provision.RoleControlPlane
		}
		if n.IsWindows() {
			h.OS = provision.Windows
		}
		out = append(out, h)
	}
	return out
}

// Expectations derives what preflight checks the hosts against.
func Expectations(p *plan.Plan) preflight.Expect {
	x := preflight.Expect{LinuxID: expectedLinuxID, LinuxVersionID: expectedLinuxVersion,
		WindowsBuilds: map[string]string{}, APIName: p.APIServer.Host}
	for _, n := range p.Nodes {
		if n.IsControlPlane() {
			x.APIAddresses = append(x.APIAddresses, n.Address)
		}
		if n.IsWindows() && n.WindowsBuild != "" {
			x.WindowsBuilds[n.Name] = n.WindowsBuild
		}
	}
	return x
}

// SSHConfigs returns one transport configuration per node from the plan's
// SSH settings; base supplies what the command line decides (keys, agent,
// known_hosts, timeouts). Linux users other than root go through sudo -n.
func SSHConfigs(p *plan.Plan, base transport.Config) []transport.Config {
	out := make([]transport.Config, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		c := base
		c.Host = n.Name
		host := n.SSH.Host
		if host == "" {
			host = n.Address
		}
		port := n.SSH.Port
		if port == 0 {
			port = 22
		}
		c.Address = net.JoinHostPort(host, strconv.Itoa(port))
		c.User = n.SSH.User
		c.OS = provision.Linux
		if n.IsWindows() {
			c.OS = provision.Windows
		}
		c.Sudo = c.OS == provision.Linux && c.User != "root"
		out = append(out, c)
	}
	return out
}
