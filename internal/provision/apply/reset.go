package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// The guide's teardown commands, exactly.
const (
	// linuxResetScript runs under sudo: the glob is expanded by root's
	// shell (/etc/cni/net.d is closed to ordinary users).
	linuxResetScript = "kubeadm reset -f\nrm -rf /etc/cni/net.d/*"
	// windowsResetScript is followed by a reboot, which removes the
	// virtual switch and returns the address to the physical adapter.
	windowsResetScript = "kubeadm reset -f\nGet-HnsNetwork | Remove-HnsNetwork\nRemove-Item C:\\etc\\cni\\net.d\\* -Force"
	// checks: is there anything to reset?
	linuxJoinedCheck   = "test -e /etc/kubernetes/kubelet.conf || test -e /etc/kubernetes/admin.conf || test -n \"$(ls -A /etc/cni/net.d 2>/dev/null)\""
	windowsJoinedCheck = "if ((Test-Path C:\\etc\\kubernetes\\kubelet.conf) -or (Get-ChildItem C:\\etc\\cni\\net.d -ErrorAction SilentlyContinue)) { exit 0 } else { exit 1 }"
)

// ResetPhases returns the reset procedure: the nodes are drained and
// deleted through the API, then taken apart on the host — workers first,
// the control plane last. Limit it to one node with Options.Hosts (plus
// provision.ClusterHostName for the API side).
func ResetPhases(d Deps, rebootTimeout time.Duration) []provision.Phase {
	nodes := resetNodes(d)
	drainTimeout := d.DrainTimeout
	if drainTimeout <= 0 {
		drainTimeout = 5 * time.Minute
	}
	return []provision.Phase{
		&drainPhase{nodes: nodes, all: len(nodes) == len(d.Hosts), restConfig: d.RESTConfig, timeout: drainTimeout, gracePeriod: -1},
		&deleteNodePhase{nodes: nodes, restConfig: d.RESTConfig},
		&hostReset{title: "reset-workers", d: d, on: func(h []provision.Host) []provision.Host {
			return append(provision.LinuxWorkers(h), provision.WindowsNodes(h)...)
		}, after: []string{"delete-node"}, rebootTimeout: rebootTimeout},
		&hostReset{title: "reset-control-plane", d: d, on: provision.ControlPlanes,
			after: []string{"reset-workers"}, rebootTimeout: rebootTimeout},
	}
}

// hostReset takes a node apart as the guide's troubleshooting section
// does: kubeadm reset and the CNI configuration on Linux; on Windows also
// the HNS networks, then a reboot.
type hostReset struct {
	title         string
	d             Deps
	on            func([]provision.Host) []provision.Host
	after         []string
	rebootTimeout time.Duration
}

func (p *hostReset) Title() string                               { return p.title }
func (p *hostReset) Targets(h []provision.Host) []provision.Host { return p.on(h) }
func (p *hostReset) Waits() []string                             { return p.after }
func (p *hostReset) Description() string {
	return "kubeadm reset -f and remove the CNI configuration; on Windows remove the HNS networks and reboot"
}

func script(h provision.Host) string {
	if h.OS == provision.Windows {
		return windowsResetScript
	}
	return linuxResetScript
}

func (p *hostReset) DryRun(_ context.Context, h provision.Host) ([]string, error) {
	out := []string{}
	for _, l := range strings.Split(script(h), "\n") {
		out = append(out, "run: "+l)
	}
	if h.OS == provision.Windows {
		out = append(out, "run: Restart-Computer -Force; wait until the node is back (new boot id)")
	}
	return out, nil
}

// ShouldRun skips a node that has nothing left to reset.
func (p *hostReset) ShouldRun(ctx context.Context, h provision.Host) (bool, string, error) {
	c, err := p.d.Connect(ctx, h.Name)
	if err != nil {
		return false, "", err
	}
	check := linuxJoinedCheck
	if h.OS == provision.Windows {
		check = windowsJoinedCheck
	}
	if _, err := c.Run(ctx, check); err != nil {
		var ce *transport.CommandError
		if errors.As(err, &ce) && ce.ExitCode == 1 {
			return false, "no kubelet.conf, admin.conf or CNI configuration: nothing to reset", nil
		}
		return false, "", err
	}
	return true, "", nil
}

func (p *hostReset) Run(ctx context.Context, h provision.Host) error {
	c, err := p.d.Connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if _, err := c.Run(ctx, script(h)); err != nil {
		return err
	}
	if h.OS != provision.Windows {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, p.rebootTimeout)
	defer cancel()
	if err := c.Reboot(rctx); err != nil {
		return fmt.Errorf("rebooting after reset: %w", err)
	}
	return nil
}
