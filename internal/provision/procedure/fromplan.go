package procedure

import (
	"context"
	"errors"
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
	"github.com/hybridctl/hybridctl/internal/safeurl"
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
	if min := plan.ContainerdRequired(p.KubernetesVersion); min != "" && p.PackagesSource != "bundle" {
		x.ContainerdMin, x.ContainerdFor, x.ContainerdSpec = min, "Kubernetes "+p.KubernetesMinor, p.Versions.Containerd
	}
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

// downloadClient follows redirects (GitHub's release downloads go to its
// object store), at most 10 and never from https to http.
func downloadClient() *http.Client {
	return &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("refusing a redirect from https to %s", req.URL.Redacted())
		}
		return nil
	}}
}

// maxManifestBytes bounds a downloaded Calico manifest (the CRD file is
// about 3.5 MB).
const maxManifestBytes = 32 << 20

// CalicoFrom says where the calico phase gets the upstream manifests: the
// directory of an air-gapped site (--manifests-dir, read with
// render.ReadManifests), else the release URLs of the plan, downloaded
// when the phase runs.
func CalicoFrom(p *plan.Plan, dir string) *CalicoManifests { return calicoFrom(p, dir, nil) }

// calicoFrom is CalicoFrom downloading with client (nil: the default,
// downloadClient).
func calicoFrom(p *plan.Plan, dir string, client *http.Client) *CalicoManifests {
	if dir != "" {
		return &CalicoManifests{
			Load: func(ctx context.Context) (*render.Manifests, error) { return render.ReadManifests(ctx, dir, p) },
			Describe: []string{filepath.Join(dir, p.Calico.CRDManifest) + " (the Calico CRDs)",
				filepath.Join(dir, render.OperatorManifest) + " (the Tigera operator)"},
		}
	}
	return &CalicoManifests{
		Load: func(ctx context.Context) (*render.Manifests, error) {
			prefix, err := plan.CalicoManifestsPrefix(p.Calico.Version)
			if err != nil {
				return nil, err
			}
			crds, err := download(ctx, client, p.Calico.CRDManifestURL, prefix)
			if err != nil {
				return nil, err
			}
			op, err := download(ctx, client, p.Calico.OperatorManifestURL, prefix)
			if err != nil {
				return nil, err
			}
			return &render.Manifests{CRDs: crds, Operator: op}, nil
		},
		Describe: []string{p.Calico.CRDManifestURL + " (the Calico CRDs)", p.Calico.OperatorManifestURL + " (the Tigera operator)"},
	}
}

// download fetches a manifest from url, which must stay under prefix (the
// release it was built for: safeurl.Under, also after dot-segment
// removal), with client (nil: downloadClient()).
func download(ctx context.Context, client *http.Client, url, prefix string) ([]byte, error) {
	if err := safeurl.Under(prefix, url); err != nil {
		return nil, fmt.Errorf("refusing to download: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = downloadClient()
	}
	resp, err := client.Do(req)
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
