package procedure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// The guide's teardown commands.
const (
	// linuxResetScript runs under sudo: the glob is expanded by root's
	// shell (/etc/cni/net.d is closed to ordinary users). kubeadm reset
	// removes the pods it finds through the CRI; what containerd still
	// holds in Kubernetes' namespace after that (containers whose pods
	// the CRI lost, as after a containerd restart: found in the lab) is
	// killed and removed with ctr, so the host is left without containers.
	linuxResetScript = "kubeadm reset -f\nrm -rf /etc/cni/net.d/*\n" +
		"if command -v ctr >/dev/null 2>&1 && ctr version >/dev/null 2>&1; then\n" +
		"\tfor id in $(ctr -n k8s.io tasks ls -q); do ctr -n k8s.io tasks delete -f \"$id\" >/dev/null 2>&1 || true; done\n" +
		"\tids=$(ctr -n k8s.io containers ls -q)\n" +
		"\tif [ -n \"$ids\" ]; then ctr -n k8s.io containers rm $ids; fi\n" +
		"fi"
	// checks: is there anything to reset? On Windows also HNS networks
	// other than the Containers feature's own nat network: a reset whose
	// final step never ran is finished by the next one.
	linuxJoinedCheck   = "test -e /etc/kubernetes/kubelet.conf || test -e /etc/kubernetes/admin.conf || test -n \"$(ls -A /etc/cni/net.d 2>/dev/null)\""
	windowsJoinedCheck = "if ((Test-Path C:\\etc\\kubernetes\\kubelet.conf) -or (Get-ChildItem C:\\etc\\cni\\net.d -ErrorAction SilentlyContinue) -or " +
		"((Get-Command Get-HnsNetwork -ErrorAction SilentlyContinue) -and (@(Get-HnsNetwork | Where-Object { $_.Name -ne 'nat' }).Count -gt 0))) { exit 0 } else { exit 1 }"
	// windowsResetTask is the scheduled task of the final step.
	windowsResetTask = "hybridctl-reset"
	// windowsResetFinal runs detached, as SYSTEM: removing the HNS
	// networks drops the node's address for a few seconds (the guide says
	// so), which would cut the SSH session that started it. The reboot
	// returns the address to the physical adapter. It goes on after an
	// error, so the node always reboots. It does not delete its own task
	// (whether deleting a running task ends it is not documented, and then
	// the node would not reboot): hybridctl deletes it once the node is
	// back (windowsResetUnregister).
	windowsResetFinal = "$ErrorActionPreference = 'Continue'\n" +
		"Get-HnsNetwork | Remove-HnsNetwork\n" +
		"Restart-Computer -Force"
	// windowsResetUnregister deletes the final step's task after the
	// reboot; a task already gone is not an error.
	windowsResetUnregister = "Get-ScheduledTask -TaskName '" + windowsResetTask + "' -ErrorAction SilentlyContinue | Unregister-ScheduledTask -Confirm:$false"
)

// windowsResetScript is the Windows reset while the SSH session is still
// needed, in the guide's order: kubeadm reset by full path first, with the
// CNI configuration still there for the pods' teardown (Invoke-Native: its
// exit code is checked, a failure stops the reset before the reboot), then
// the CNI configuration. Only the HNS removal, which drops the node's
// address for a moment, waits for the detached final step.
var windowsResetScript = transport.NativeCommand(windowsKubeadm, "reset", "-f") + "\n" +
	"Remove-Item -Path 'C:\\etc\\cni\\net.d\\*' -Force -Recurse -ErrorAction SilentlyContinue"

// windowsResetDetach registers and starts the final step as a SYSTEM
// scheduled task (the script encoded, so no quoting can break it) and
// returns at once.
func windowsResetDetach() string {
	return "$action = New-ScheduledTaskAction -Execute 'powershell.exe' -Argument '-NoProfile -NonInteractive -EncodedCommand " +
		transport.EncodePowerShell(windowsResetFinal) + "'\n" +
		"Register-ScheduledTask -TaskName '" + windowsResetTask + "' -Action $action -User 'NT AUTHORITY\\SYSTEM' -RunLevel Highest -Force | Out-Null\n" +
		"Start-ScheduledTask -TaskName '" + windowsResetTask + "'"
}

// resetDefs is the reset procedure: the nodes are drained and deleted
// through the API, then taken apart on the host — workers first, the
// control plane last. Limit it to one node with Options.Hosts (plus
// engine.ClusterHostName for the API side).
func resetDefs() []def[Deps] {
	const hostDoes = "kubeadm reset -f and remove the CNI configuration and any container kubeadm reset left in containerd; on Windows kubeadm reset, then the CNI configuration, then the HNS networks and a reboot as one detached step"
	hostReset := func(name string) func(d Deps) (engine.Runner, error) {
		return func(d Deps) (engine.Runner, error) {
			if err := needs(d.ssh()); err != nil {
				return nil, err
			}
			return &hostReset{title: name, d: d, rebootTimeout: d.RebootTimeout}, nil
		}
	}
	return []def[Deps]{
		{engine.Descriptor{Name: "drain", Targets: engine.ClusterWide,
			Does: "kubectl drain NODE --ignore-daemonsets --delete-emptydir-data for each node being reset"},
			func(d Deps) (engine.Runner, error) {
				if err := needs(d.api()); err != nil {
					return nil, err
				}
				nodes := resetNodes(d)
				return &drainPhase{nodes: nodes, all: len(nodes) == len(d.Hosts), restConfig: d.RESTConfig, timeout: d.DrainTimeout, gracePeriod: -1}, nil
			}},
		{engine.Descriptor{Name: "delete-node", Targets: engine.ClusterWide, After: []string{"drain"},
			Does: "kubectl delete node NODE for each node being reset"},
			func(d Deps) (engine.Runner, error) {
				if err := needs(d.api()); err != nil {
					return nil, err
				}
				return &deleteNodePhase{nodes: resetNodes(d), restConfig: d.RESTConfig}, nil
			}},
		{engine.Descriptor{Name: "reset-workers", Targets: engine.Workers, After: []string{"delete-node"}, Does: hostDoes},
			hostReset("reset-workers")},
		{engine.Descriptor{Name: "reset-control-plane", Targets: engine.ControlPlanes, After: []string{"reset-workers"}, Does: hostDoes},
			hostReset("reset-control-plane")},
	}
}

// ResetProcedure describes the reset procedure's phases, in order.
func ResetProcedure() []engine.Descriptor { return describe(resetDefs()) }

// ResetPhases builds the reset procedure's phases bound to d (its
// ResetNodes are the nodes taken apart; empty: all).
func ResetPhases(d Deps) ([]engine.Phase, error) { return bind(resetDefs(), d.withDefaults()) }

// hostReset takes a node apart as the guide's troubleshooting section
// does: kubeadm reset and the CNI configuration on Linux; on Windows also
// the HNS networks, then a reboot.
type hostReset struct {
	title         string
	d             Deps
	rebootTimeout time.Duration
}

func script(h engine.Host) string {
	if h.OS == engine.Windows {
		return windowsResetScript
	}
	return linuxResetScript
}

// DryRun shows the reset script as one action: it runs as one script in
// one session, not line by line (on Linux as one block of lines).
func (p *hostReset) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	if h.OS == engine.Windows {
		// As the transport sends them: each script in the wrapper, as
		// -EncodedCommand or, when too long for cmd.exe, as a file.
		return []string{transport.DescribeWindowsRun(windowsResetScript, strings.ReplaceAll(windowsResetScript, "\n", "; ")),
			"read the boot id; " + transport.DescribeWindowsRun(windowsResetDetach(), "start scheduled task "+windowsResetTask+" (SYSTEM, detached): "+
				strings.ReplaceAll(strings.TrimPrefix(windowsResetFinal, "$ErrorActionPreference = 'Continue'\n"), "\n", "; ")),
			"wait until the node is back (new boot id)",
			transport.DescribeWindowsRun(windowsResetUnregister, windowsResetUnregister)}, nil
	}
	return []string{scriptBlock("run as one script:", script(h))}, nil
}

// scriptBlock is title followed by the lines of script, each indented by
// two spaces (a tab as four: a dry run's lines are escaped, tabs too).
func scriptBlock(title, script string) string {
	var b strings.Builder
	b.WriteString(title)
	for _, l := range strings.Split(script, "\n") {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(l, "\t", "    "))
	}
	return b.String()
}

// ShouldRun skips a node that has nothing left to reset.
func (p *hostReset) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	c, err := p.d.Connect(ctx, h.Name)
	if err != nil {
		return false, "", err
	}
	check := linuxJoinedCheck
	if h.OS == engine.Windows {
		check = windowsJoinedCheck
	}
	if _, err := c.Run(ctx, check); err != nil {
		var ce *transport.CommandError
		if errors.As(err, &ce) && ce.ExitCode == 1 {
			return false, "no kubelet.conf, admin.conf, CNI configuration or HNS network: nothing to reset", nil
		}
		return false, "", err
	}
	return true, "", nil
}

func (p *hostReset) Run(ctx context.Context, h engine.Host) error {
	c, err := p.d.Connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if _, err := c.Run(ctx, script(h)); err != nil {
		return err
	}
	if h.OS != engine.Windows {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, p.rebootTimeout)
	defer cancel()
	before, err := c.BootID(rctx)
	if err != nil {
		return err
	}
	if _, err := c.Run(rctx, windowsResetDetach()); err != nil {
		return fmt.Errorf("starting the final reset step (HNS networks, reboot): %w", err)
	}
	if err := c.WaitForReboot(rctx, before); err != nil {
		return fmt.Errorf("rebooting after reset: %w", err)
	}
	if _, err := c.Run(ctx, windowsResetUnregister); err != nil {
		return fmt.Errorf("deleting the scheduled task %s after the reboot: %w", windowsResetTask, err)
	}
	return nil
}
