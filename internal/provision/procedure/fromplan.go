package procedure

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// The guide's Linux nodes; another distribution is a preflight warning.
const (
	expectedLinuxID      = "ubuntu"
	expectedLinuxVersion = "26.04"
)

// Hosts returns the plan's nodes as engine hosts, in plan order.
func Hosts(p *plan.Plan) []engine.Host {
	out := make([]engine.Host, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		h := engine.Host{Name: n.Name, Role: engine.RoleWorker, OS: engine.Linux, Address: n.Address}
		if n.IsControlPlane() {
			h.Role = engine.RoleControlPlane
		}
		if n.IsWindows() {
			h.OS = engine.Windows
		}
		out = append(out, h)
	}
	return out
}

// Expectations derives what preflight checks the hosts against.
func Expectations(p *plan.Plan) preflight.Expect {
	x := preflight.Expect{LinuxID: expectedLinuxID, LinuxVersionID: expectedLinuxVersion,
		WindowsBuilds: map[string]string{}, APIName: p.APIServer.Host, AllowCgroupV1: p.AllowCgroupV1}
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
		c.OS = engine.Linux
		if n.IsWindows() {
			c.OS = engine.Windows
		}
		c.Sudo = c.OS == engine.Linux && c.User != "root"
		out = append(out, c)
	}
	return out
}

// maxManifestBytes bounds a downloaded Calico manifest (the CRD file is
// about 3.5 MB).
const maxManifestBytes = 32 << 20

// CalicoFrom says where the calico phase gets the upstream manifests: the
// directory of an air-gapped site (--manifests-dir, read with
// render.ReadManifests), else the release URLs of the plan, downloaded
// when the phase runs.
func CalicoFrom(p *plan.Plan, dir string) *CalicoManifests {
	if dir != "" {
		return &CalicoManifests{
			Load: func(ctx context.Context) (*render.Manifests, error) { return render.ReadManifests(ctx, dir, p) },
			Describe: []string{filepath.Join(dir, p.Calico.CRDManifest) + " (the Calico CRDs)",
				filepath.Join(dir, render.OperatorManifest) + " (the Tigera operator)"},
		}
	}
	return &CalicoManifests{
		Load: func(ctx context.Context) (*render.Manifests, error) {
			crds, err := download(ctx, p.Calico.CRDManifestURL)
			if err != nil {
				return nil, err
			}
			op, err := download(ctx, p.Calico.OperatorManifestURL)
			if err != nil {
				return nil, err
			}
			return &render.Manifests{CRDs: crds, Operator: op}, nil
		},
		Describe: []string{p.Calico.CRDManifestURL + " (the Calico CRDs)", p.Calico.OperatorManifestURL + " (the Tigera operator)"},
	}
}

func download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w (air-gapped? use --manifests-dir)", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", url, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("downloading %s: larger than %d bytes", url, maxManifestBytes)
	}
	return data, nil
}
