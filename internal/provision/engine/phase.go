// Package engine runs hybridctl's procedures (apply, reset) and
// compares them with reality (diff): one explicit ordered list of phases,
// each run on the hosts it targets, with a state file so that an
// interrupted run resumes where it stopped.
//
// The model follows k0sctl's phase manager and kubeadm's phase workflow. A
// phase is a static Descriptor (its name, the hosts it targets, its gates,
// what it does: everything --help, the docs and diff show, known without a
// cluster) bound to an implementation (Bind) whose dependencies were
// checked when it was built. The implementation has a Run method; anything
// else is an optional capability discovered by type assertion (Skipper,
// DryRunner, Differ, Limiter, Narrower). The engine, not the phases, owns
// ordering, concurrency, dry-run, diff, the state file, progress events
// and error aggregation.
//
// Ordering. Steps (a phase on one host) on the same host run in list order.
// Hosts progress independently, so a Windows node can be prepared (with its
// reboots) while the control plane is initialised; a phase that must not
// start before another is finished everywhere names it in After (a gate).
// Gates may only name earlier phases, so the list order is always a valid
// execution order and there can be no cycle.
package engine

import (
	"context"
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

// Descriptor is what a phase is, known without a cluster: enough for
// --help, the docs, the state file and diff's headings.
type Descriptor struct {
	// Name is the phase's stable kebab-case title: --only and --skip-phases
	// take it and the state file records it, so it must not change once
	// shipped.
	Name string
	// Targets selects, in host order, the hosts the phase runs on; nil
	// means every node (never the cluster pseudo-host).
	Targets func(hosts []Host) []Host
	// RunsOn labels the targets in --help and the docs; "" derives the
	// label from Targets.
	RunsOn string
	// After names earlier phases that must be finished on all of their
	// hosts before this phase starts on any host (gates).
	After []string
	// Does says in one line what the phase does.
	Does string
	// ReadOnly marks a phase that changes nothing (checks, waits, reports):
	// diff does not count it as a change.
	ReadOnly bool
}

// targets applies d's selector (every node by default).
func (d Descriptor) targets(hosts []Host) []Host {
	if d.Targets == nil {
		return Nodes(hosts)
	}
	return d.Targets(hosts)
}

// Phase is a described phase ready to run: Describe is its static
// description, Run does the work on one host. Run must honour ctx (return
// promptly when it is cancelled) and should be idempotent: the engine may
// run it again on a host where an earlier run was interrupted half-way.
type Phase interface {
	Describe() Descriptor
	Run(ctx context.Context, h Host) error
}

// Runner is a phase's implementation: what Bind joins to a Descriptor. It
// may also implement Skipper, DryRunner, Differ, Limiter and Narrower.
type Runner interface {
	Run(ctx context.Context, h Host) error
}

// Bind returns the phase described by d and implemented by impl. The
// engine finds impl's optional capabilities.
func Bind(d Descriptor, impl Runner) Phase { return bound{d: d, impl: impl} }

type bound struct {
	d    Descriptor
	impl Runner
}

func (b bound) Describe() Descriptor                  { return b.d }
func (b bound) Run(ctx context.Context, h Host) error { return b.impl.Run(ctx, h) }
func (b bound) implementation() Runner                { return b.impl }

// Impl returns the implementation p was bound to (Bind), or p itself.
func Impl(p Phase) Runner {
	if b, ok := p.(interface{ implementation() Runner }); ok {
		return b.implementation()
	}
	return p
}

// capability returns p's optional capability T: p's own, or that of the
// implementation it was bound to.
func capability[T any](p Phase) (T, bool) {
	if t, ok := p.(T); ok {
		return t, true
	}
	if b, ok := p.(interface{ implementation() Runner }); ok {
		t, ok := b.implementation().(T)
		return t, ok
	}
	var zero T
	return zero, false
}

// Skipper checks the host's actual state before acting. ShouldRun returns
// false with a human reason ("kubelet.conf exists: already joined") when the
// phase's effect is already in place. It must not change anything: the
// engine calls it in dry-run and diff too (unless offline).
type Skipper interface {
	ShouldRun(ctx context.Context, h Host) (run bool, reason string, err error)
}

// DryRunner describes what Run would do on h: the exact commands it would
// run and the files it would write, one line each, without changing
// anything. Phases without it are shown by name only. Secrets must be
// referred to, never included (the engine redacts them anyway).
type DryRunner interface {
	DryRun(ctx context.Context, h Host) ([]string, error)
}

// Change is one thing a phase would change on a host or in the cluster,
// as diff lists it.
type Change struct {
	Phase string `json:"phase"`
	// Host is the node it concerns, or "cluster" for cluster objects.
	Host string `json:"host"`
	// Object names a cluster object ("Installation default",
	// "ConfigMap kube-system/kubernetes-services-endpoint"); empty for a
	// change on a host.
	Object string `json:"object,omitempty"`
	// Action is what would happen: "create", "update", "run" (a host
	// step), "drift" (a member differs; apply leaves it alone).
	Action string `json:"action"`
	// Summary says it in one line.
	Summary string `json:"summary"`
	// Diff is a unified diff of the fields hybridctl owns, when there is
	// one.
	Diff string `json:"diff,omitempty"`
}

// Differ lists what Run would change on h, reading state only. A phase
// without it that is not ReadOnly counts as one "run" change on each host
// where its Skipper (if any) says it would run.
type Differ interface {
	Diff(ctx context.Context, h Host) ([]Change, error)
}

// Limiter caps the steps of one phase running at once (1: one host at a
// time, as a drain-and-change must be), below the run's own cap.
type Limiter interface {
	Limit() int
}

// Narrower narrows a phase's targets at run time, after its Descriptor's
// selector, for phases whose hosts depend on what they were bound to
// (bundle-upload has no hosts without a bundle).
type Narrower interface {
	Narrow(hosts []Host) []Host
}

// Selectors for a Descriptor's Targets, in host order.

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

// Workers returns the worker nodes, Linux and Windows.
func Workers(hosts []Host) []Host {
	return filter(hosts, func(h Host) bool { return h.Role == RoleWorker })
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
