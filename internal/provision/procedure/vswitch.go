package procedure

import (
	"context"
	"maps"
	"slices"

	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// kubeletAfterVSwitch restarts a Windows node's kubelet once when the node
// stays not Ready after Calico has created its HNS network: Calico's
// Windows troubleshooting ("Kubelet persistently fails to contact the API
// server", tigera/docs troubleshoot.mdx) says the creation of the
// container vSwitch can make a kubelet that was already running lose its
// connection and never reconnect, and that the remedy is to restart the
// kubelet after Calico is installed. Under apply the kubelet always runs
// first (kubeadm join starts it, Calico's node agent then creates the
// network), so windows-nodes-ready does it.
//
// The vSwitch also drops TCP connections through the node's adapter, SSH
// included: the connection is made again before each look at the node.
// The network is the one Calico names "Calico" (VXLAN: sig-windows-tools'
// kube-proxy start.ps1 waits for that name). The restart is recorded on
// the node with the network's ID (windowsVSwitchMarker), so it happens
// once per network: a resumed apply whose node is still not Ready does
// not restart the kubelet again for the same vSwitch, and a network that
// Calico creates anew (its ID changes) gets its one restart.
type kubeletAfterVSwitch struct {
	connect func(ctx context.Context, host string) (vswitchConn, error)
	// after is how long a node stays not Ready (from the phase's first
	// look) before its node is looked at, and between two looks.
	after time.Duration
	// sshTimeout bounds reconnecting and running the script.
	sshTimeout time.Duration
	// state is per node name, for one run of the phase.
	state map[string]*vswitchState
}

type vswitchConn interface {
	Run(ctx context.Context, script string) (*transport.Result, error)
	Reconnect(ctx context.Context) error
}

type vswitchState struct {
	notReadySince time.Time
	lastLook      time.Time
	done          bool
}

// windowsVSwitchGrace is how long windows-nodes-ready lets a Windows node
// be not Ready before it looks for Calico's network and restarts the
// kubelet: the node agent and the CNI plugin need a minute or two after
// the network appears (the guide's node-windows pull alone took about a
// minute), and a kubelet that did keep its connection becomes Ready in
// that time without a restart.
const windowsVSwitchGrace = 3 * time.Minute

// windowsVSwitchMarker records, on the node, the ID of the Calico network
// whose creation the kubelet was restarted for.
const windowsVSwitchMarker = `C:\k\hybridctl\kubelet-restarted-for-vswitch`

// Outcomes of windowsVSwitchScript, on its last line.
const (
	vswitchNone      = "hybridctl-vswitch: none"
	vswitchBefore    = "hybridctl-vswitch: restarted before for "
	vswitchRestarted = "hybridctl-vswitch: restarted for "
)

// windowsVSwitchScript restarts the kubelet when Calico's HNS network
// exists and the kubelet was not restarted for it yet, then records the
// network's ID; it prints which of the three it found.
var windowsVSwitchScript = `$net = Get-HnsNetwork | Where-Object { $_.Name -eq 'Calico' } | Select-Object -First 1
$marker = ` + transport.PSQuote(windowsVSwitchMarker) + `
if ($null -eq $net) {
    Write-Output '` + vswitchNone + `'
} else {
    $id = [string] $net.Id
    $before = ''
    if (Test-Path -LiteralPath $marker) { $before = ([IO.File]::ReadAllText($marker)).Trim() }
    if ($before -eq $id) {
        Write-Output ('` + vswitchBefore + `' + $id)
    } else {
        Restart-Service -Name kubelet -Force
        New-Item -ItemType Directory -Force -Path (Split-Path -Parent $marker) | Out-Null
        [IO.File]::WriteAllText($marker, $id)
        Write-Output ('` + vswitchRestarted + `' + $id)
    }
}`

// look is called at every poll with the wanted Windows nodes that are not
// Ready (by name). It looks at a node that has been not Ready for at least
// after, at most once every after, until its kubelet has been restarted
// (or was, before). A node that became Ready is forgotten. Failures to
// reach the node are reported as progress and retried: the wait goes on.
func (k *kubeletAfterVSwitch) look(ctx context.Context, notReady map[string]bool) {
	now := time.Now()
	for name := range k.state {
		if !notReady[name] {
			delete(k.state, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(notReady)) {
		s := k.state[name]
		if s == nil {
			s = &vswitchState{notReadySince: now}
			k.state[name] = s
		}
		if s.done || now.Sub(s.notReadySince) < k.after || now.Sub(s.lastLook) < k.after {
			continue
		}
		s.lastLook = now
		s.done = k.restart(ctx, name)
	}
}

// restart reconnects to the node and runs windowsVSwitchScript; it reports
// whether the node needs no more looks (the kubelet was restarted for
// Calico's network, now or before).
func (k *kubeletAfterVSwitch) restart(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, k.sshTimeout)
	defer cancel()
	c, err := k.connect(ctx, name)
	if err == nil {
		err = c.Reconnect(ctx)
	}
	if err != nil {
		engine.Progress(ctx, "%s is not Ready; could not reach it over SSH to look for Calico's vSwitch: %v", name, err)
		return false
	}
	res, err := c.Run(ctx, windowsVSwitchScript)
	if err != nil {
		engine.Progress(ctx, "%s is not Ready; looking for Calico's vSwitch failed: %v", name, err)
		return false
	}
	out := lastLine(string(res.Stdout))
	switch {
	case strings.HasPrefix(out, vswitchRestarted):
		engine.Warn(ctx, "%s stayed not Ready after Calico created its HNS network (%s): restarted its kubelet once, as Calico's Windows troubleshooting advises (the vSwitch can leave a running kubelet unable to reach the API server)",
			name, strings.TrimPrefix(out, vswitchRestarted))
		return true
	case strings.HasPrefix(out, vswitchBefore):
		engine.Progress(ctx, "%s is not Ready; its kubelet was already restarted once for Calico's HNS network %s", name, strings.TrimPrefix(out, vswitchBefore))
		return true
	case out == vswitchNone:
		engine.Progress(ctx, "%s is not Ready and Calico has not created its HNS network yet", name)
		return false
	default:
		engine.Progress(ctx, "%s is not Ready; looking for Calico's vSwitch printed %q", name, out)
		return false
	}
}
