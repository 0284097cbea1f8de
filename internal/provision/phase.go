// Package provision runs hybridctl's apply and reset: one explicit ordered
// list of phases, each run on the hosts it targets, with a state file so that
// an interrupted run resumes where it stopped.
//
// The model follows k0sctl's phase manager and kubeadm's phase workflow: a
// Phase has a Title and a Run method; everything else is an optional
// capability discovered by type assertion (Targeter, Waiter, Skipper,
// DryRunner). The engine, not the phases, owns ordering, concurrency,
// dry-run, the state file, progress events and error aggregation.
//
// Ordering. Steps (a phase on one host) on the same host run in list order.
// Hosts progress independently, so a Windows node can be prepared (with its
// reboots) while the control plane is initialised; a phase that must not
// start before another is finished everywhere declares it with Waiter (a
// gate). Gates may only name earlier phases, so the list order is always a
// valid execution order and there can be no cycle.
package provision

import (
	"context"
	"fmt"
)

// OS is a host's operating system family.
type OS string

// Operating systems.
const (
	Linux   OS = "linux"
	Windows OS = "windows"
)

// Role is a host's role in the cluster.
type Role string

// Roles. RoleCluster is the pseudo-host that cluster-wide phases (those that
// talk to the Kubernetes API rather than to a machine) run on.
const (
	RoleControlPlane Role = "control-plane"
	RoleWorker       Role = "worker"
	RoleCluster      Role = "cluster"
)

// ClusterHostName is the name of the pseudo-host of cluster-wide phases, in
// progress lines and in the state file.
const ClusterHostName = "cluster"

// Host is one target of the phases. It is deliberately small: the engine
// needs names, roles and OS for ordering and reporting; connections live in
// the phases (see package transport).
type Host struct {
	Name    string `json:"name"`
	Role    Role   `json:"role"`
	OS      OS     `json:"os"`
	Address string `json:"address,omitempty"`
}

// ClusterHost returns the pseudo-host cluster-wide phases target.
func ClusterHost() Host { return Host{Name: ClusterHostName, Role: RoleCluster} }

// IsControlPlane reports whether h is a control-plane node.
func (h Host) IsControlPlane() bool { return h.Role == RoleControlPlane }

// IsLinuxWorker reports whether h is a Linux worker node.
func (h Host) IsLinuxWorker() bool { return h.Role == RoleWorker && h.OS == Linux }

// IsWindows reports whether h is a Windows node.
func (h Host) IsWindows() bool { return h.OS == Windows && h.Role != RoleCluster }

func (h Host) String() string { return h.Name }

// Phase is one step of the procedure. Title is its stable kebab-case name:
// it is what --skip-phases and --only take and what the state file records,
// so it must not change between releases once shipped.
//
// Run does the work on one host. It must honour ctx (return promptly when it
// is cancelled) and should be idempotent: the engine may run it again on a
// host where an earlier run was interrupted half-way.
type Phase interface {
	Title() string
	Run(ctx context.Context, h Host) error
}

// Targeter selects the hosts a phase runs on, preserving their order.
// A phase without it runs on every node (never on the cluster pseudo-host).
type Targeter interface {
	Targets(hosts []Host) []Host
}

// Waiter names phases that must be finished on all of their hosts before this
// phase starts on any host (a gate: for example the Windows join waits for
// Calico to be ready for Windows). Only earlier phases may be named.
type Waiter interface {
	Waits() []string
}

// Skipper checks the host's actual state before acting. ShouldRun returns
// false with a human reason ("kubelet.conf exists: already joined") when the
// phase's effect is already in place. It must not change anything: the
// engine calls it in dry-run too (unless offline).
type Skipper interface {
	ShouldRun(ctx context.Context, h Host) (run bool, reason string, err error)
}

// DryRunner describes what Run would do on h: the exact commands it would
// run and the files it would write, one line each, without changing
// anything. Phases without it are shown by title only. Secrets must be
// referred to, never included (the engine redacts them anyway).
type DryRunner interface {
	DryRun(ctx context.Context, h Host) ([]string, error)
}

// Describer gives a one-line description shown by `apply --help`-like
// listings and docs.
type Describer interface {
	Description() string
}

// Selectors for Targeter implementations, in host order.

// ControlPlanes returns the control-plane nodes.
func ControlPlanes(hosts []Host) []Host { return filter(hosts, Host.IsControlPlane) }

// LinuxWorkers returns the Linux worker nodes.
func LinuxWorkers(hosts []Host) []Host { return filter(hosts, Host.IsLinuxWorker) }

// LinuxNodes returns every Linux node.
func LinuxNodes(hosts []Host) []Host {
	return filter(hosts, func(h Host) bool { return h.OS == Linux && h.Role != RoleCluster })
}

// WindowsNodes returns the Windows nodes.
func WindowsNodes(hosts []Host) []Host { return filter(hosts, Host.IsWindows) }

// Nodes returns every real host (not the cluster pseudo-host).
func Nodes(hosts []Host) []Host {
	return filter(hosts, func(h Host) bool { return h.Role != RoleCluster })
}

// ClusterWide targets the cluster pseudo-host only.
func ClusterWide([]Host) []Host { return []Host{ClusterHost()} }

func filter(hosts []Host, keep func(Host) bool) []Host {
	var out []Host
	for _, h := range hosts {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// Func is a Phase built from functions; the unset capabilities are absent.
// It is the simplest way to write a phase and what the tests use.
type Func struct {
	Name      string
	Desc      string
	On        func(hosts []Host) []Host // nil: every node
	After     []string
	Check     func(ctx context.Context, h Host) (bool, string, error)
	Describe  func(ctx context.Context, h Host) ([]string, error)
	RunOnHost func(ctx context.Context, h Host) error
}

// Title implements Phase.
func (f *Func) Title() string { return f.Name }

// Description implements Describer.
func (f *Func) Description() string { return f.Desc }

// Run implements Phase.
func (f *Func) Run(ctx context.Context, h Host) error {
	if f.RunOnHost == nil {
		return fmt.Errorf("phase %s has no implementation yet", f.Name)
	}
	return f.RunOnHost(ctx, h)
}

// Targets implements Targeter.
func (f *Func) Targets(hosts []Host) []Host {
	if f.On == nil {
		return Nodes(hosts)
	}
	return f.On(hosts)
}

// Waits implements Waiter.
func (f *Func) Waits() []string { return f.After }

// ShouldRun implements Skipper; without Check the phase always runs.
func (f *Func) ShouldRun(ctx context.Context, h Host) (bool, string, error) {
	if f.Check == nil {
		return true, "", nil
	}
	return f.Check(ctx, h)
}

// DryRun implements DryRunner; without Describe it says so.
func (f *Func) DryRun(ctx context.Context, h Host) ([]string, error) {
	if f.Describe == nil {
		return []string{"(" + f.Name + ": no dry-run description)"}, nil
	}
	return f.Describe(ctx, h)
}
