// Package procedure holds hybridctl's procedures as a library: apply,
// reset and upgrade (and what diff compares), each an ordered list of
// phases that follows the guide section by section, with the phases'
// implementations and the entry points the commands call (Apply, Reset,
// Diff, Upgrade). A procedure is defined once as descriptions bound to
// implementations: `apply --help`, `reset --help`, `upgrade --help`,
// docs/apply.md and docs/upgrade.md show ApplyProcedure, ResetProcedure and
// UpgradeProcedure, the static descriptions; Phases, ResetPhases and
// UpgradePhases bind them to their dependencies, checked when the list is
// built.
package procedure

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Deps are what the phases need from the command.
type Deps struct {
	Hosts []engine.Host
	// Connect returns the SSH client of a host (a transport.Pool's Get).
	Connect func(ctx context.Context, host string) (*transport.Client, error)
	// Expect is what preflight checks the hosts against.
	Expect preflight.Expect
	// IgnorePreflight lists preflight check names downgraded to warnings.
	IgnorePreflight []string
	// Files are the rendered artifacts (render.Render of the plan).
	Files Artifacts
	// Bundle is the verified bundle of apply --bundle (BundleFrom); nil
	// with packages.source upstream (bundle-upload then has no hosts).
	Bundle *Bundle
	// RebootTimeout bounds one reboot of a node (default 15 minutes).
	RebootTimeout time.Duration
	// Redactor learns the join tokens as they are created.
	Redactor *engine.Redactor
	// Kubeconfig is where the kubeconfig phase imports admin.conf; nil
	// leaves that phase unimplemented.
	Kubeconfig *KubeconfigTarget
	// RESTConfig gives the API phases their connection (RESTConfigFrom
	// the Kubeconfig target); nil leaves them unimplemented.
	RESTConfig func(ctx context.Context) (*rest.Config, error)
	// Calico is where the upstream Calico manifests come from.
	Calico *CalicoManifests
	// CalicoTimeout bounds the wait for Calico to be ready (default 15m).
	CalicoTimeout time.Duration
	// Addons are the add-ons the spec asks for (AddonsFrom).
	Addons []AddonSource
	// Inventory is what the CSR approval phases check kubelet-serving
	// requests against (InventoryFrom the plan).
	Inventory csr.Inventory
	// CSRTimeout bounds the wait for the kubelet-serving CSRs (default 10m).
	CSRTimeout time.Duration
	// NodesReadyTimeout bounds the wait for the joined nodes to be Ready,
	// for CoreDNS's rollout after its restart and for the check workloads'
	// rollout (default 15m).
	NodesReadyTimeout time.Duration
	// Members is the cluster and its hosts as they were before the run
	// (inventory.Discover); nil (an offline dry run) treats every node as
	// new.
	Members *inventory.Inventory
	// Reconcile names the members apply changes anyway (--reconcile),
	// one at a time with a drain.
	Reconcile []string
	// ResetNodes are the nodes reset takes apart (empty: all).
	ResetNodes []string
	// DrainTimeout bounds draining one node in reset (default 5m).
	DrainTimeout time.Duration
	// Upgrade is what the upgrade procedure needs (UpgradePhases).
	Upgrade UpgradeDeps
}

// cleanupTimeout bounds removing a secret file after its use.
const cleanupTimeout = 30 * time.Second

func (d Deps) hostConn(ctx context.Context, host string) (hostConn, error) {
	c, err := d.Connect(ctx, host)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// withDefaults fills the zero timeouts with the flags' defaults.
func (d Deps) withDefaults() Deps {
	def := func(v *time.Duration, dflt time.Duration) {
		if *v <= 0 {
			*v = dflt
		}
	}
	def(&d.CalicoTimeout, 15*time.Minute)
	def(&d.RebootTimeout, 15*time.Minute)
	def(&d.CSRTimeout, 10*time.Minute)
	def(&d.NodesReadyTimeout, 15*time.Minute)
	def(&d.DrainTimeout, 5*time.Minute)
	def(&d.Upgrade.DrainTimeout, 5*time.Minute)
	def(&d.Upgrade.ReadyTimeout, 10*time.Minute)
	def(&d.Upgrade.AvailableTimeout, 10*time.Minute)
	return d
}

// ssh, api and files are the dependencies phases check for.
func (d Deps) ssh() (string, bool)   { return "SSH connections (Deps.Connect)", d.Connect != nil }
func (d Deps) api() (string, bool)   { return "API access (Deps.RESTConfig)", d.RESTConfig != nil }
func (d Deps) files() (string, bool) { return "the rendered files (Deps.Files)", d.Files != nil }

// applyDefs is the apply procedure in order. Gates: the Linux workers join
// after Calico is ready; the Windows nodes are prepared in parallel with
// the Linux part (reboots included) and join after Calico is ready for
// Windows; the cluster-wide phases run one after another.
func applyDefs() []def[*applyBinding] {
	cluster := func(name, does string, after ...string) engine.Descriptor {
		return engine.Descriptor{Name: name, Targets: engine.ClusterWide, After: after, Does: does}
	}
	readOnly := func(d engine.Descriptor) engine.Descriptor { d.ReadOnly = true; return d }
	approveDoes := func(who string) string {
		return "approve the kubelet-serving CSRs of " + who + " through the verified approver (requester, names and IPs checked against the spec); deny wrong ones"
	}
	readyDoes := func(who string) string {
		return "wait until " + who + " are registered and Ready (the pod network runs on them)"
	}
	return []def[*applyBinding]{
		{preflight.HostDescriptor(), func(b *applyBinding) (engine.Runner, error) { return b.preflight(0) }},
		{preflight.ClusterDescriptor(), func(b *applyBinding) (engine.Runner, error) { return b.preflight(1) }},
		{engine.Descriptor{Name: "bundle-upload", RunsOn: "every node, with a bundle", After: []string{"preflight-cluster"},
			Does: "packages.source bundle (apply --bundle DIR): send each node the bundle files its OS needs to /var/cache/hybridctl/bundle (Windows C:\\k\\bundle), only those missing or different there, checked by sha256 on the node"},
			func(b *applyBinding) (engine.Runner, error) { return b.bundleUpload() }},
		{engine.Descriptor{Name: "linux-prepare", Targets: engine.LinuxNodes, After: []string{"preflight-cluster"},
			Does: "run the rendered prepare.sh: name, address, swap, modules, sysctl, chrony, containerd, Kubernetes packages"},
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.ssh()); err != nil {
					return nil, err
				}
				if err := needs(b.d.files()); err != nil {
					return nil, err
				}
				return &linuxPreparePhase{files: b.d.Files, connect: b.d.hostConn, members: members{b.d.Members}}, nil
			}},
		{engine.Descriptor{Name: "windows-prepare", Targets: engine.WindowsNodes, After: []string{"preflight-cluster"},
			Does: "run the rendered prepare.ps1 with its reboots: name, DNS suffix, time, firewall, Containers, containerd, kubelet service"},
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.ssh()); err != nil {
					return nil, err
				}
				if err := needs(b.d.files()); err != nil {
					return nil, err
				}
				return &windowsPreparePhase{files: b.d.Files, connect: b.d.hostConn, rebootTimeout: b.d.RebootTimeout, members: members{b.d.Members}}, nil
			}},
		{preflight.PostPrepareDescriptor(), func(b *applyBinding) (engine.Runner, error) {
			r, err := b.preflight(2)
			if err != nil {
				return nil, err
			}
			return unlessMember{r, members{b.d.Members}}, nil
		}},
		{engine.Descriptor{Name: "kubeadm-init", Targets: engine.ControlPlanes,
			Does: "kubeadm config validate and kubeadm init with the rendered kubeadm-config.yaml"},
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.ssh()); err != nil {
					return nil, err
				}
				if err := needs(b.d.files()); err != nil {
					return nil, err
				}
				return &kubeadmInitPhase{files: b.d.Files, connect: b.d.hostConn, members: members{b.d.Members}}, nil
			}},
		{cluster("kubeconfig", "import the control plane's admin.conf into your kubeconfig (hybridctl kubeconfig import)", "kubeadm-init"),
			func(b *applyBinding) (engine.Runner, error) {
				d := b.d
				if err := needs(d.ssh()); err != nil {
					return nil, err
				}
				if err := needs("the kubeconfig to import into (Deps.Kubeconfig)", d.Kubeconfig != nil); err != nil {
					return nil, err
				}
				return &kubeconfigPhase{target: d.Kubeconfig, hosts: d.Hosts, connect: d.hostConn, redactor: d.Redactor}, nil
			}},
		{engine.Descriptor{Name: "reconcile", Targets: engine.LinuxNodes, RunsOn: "Linux members named by --reconcile", After: []string{"kubeconfig"},
			Does: "apply --reconcile NODE: one node at a time, drain a member, run its prepare.sh again, rewrite the kubelet's configuration from the cluster's, restart the kubelet, wait until Ready, uncordon"},
			func(b *applyBinding) (engine.Runner, error) {
				d := b.d
				if err := needs(d.ssh()); err != nil {
					return nil, err
				}
				if err := needs(d.api()); err != nil {
					return nil, err
				}
				return &reconcilePhase{nodes: d.Reconcile, files: d.Files, connect: d.hostConn, restConfig: d.RESTConfig,
					drainTimeout: d.DrainTimeout, readyTimeout: d.NodesReadyTimeout, poll: 2 * time.Second, members: members{d.Members}}, nil
			}},
		{cluster("calico", "Calico CRDs and Tigera operator, the endpoint ConfigMap, Installation (VXLAN, BGP off, HNS), APIServer, strictAffinity"),
			func(b *applyBinding) (engine.Runner, error) { return b.calico() }},
		{readOnly(cluster("calico-ready", "wait until every TigeraStatus is Available")),
			func(b *applyBinding) (engine.Runner, error) { return b.calicoReady() }},
		{engine.Descriptor{Name: "join-linux", Targets: engine.LinuxWorkers, After: []string{"calico-ready"}, Does: joinDoes},
			func(b *applyBinding) (engine.Runner, error) { return b.join("join-linux", false) }},
		{cluster("approve-linux-csrs", approveDoes("the control plane and the Linux workers"), "join-linux"),
			func(b *applyBinding) (engine.Runner, error) {
				return b.approve("approve-linux-csrs", engine.LinuxNodes)
			}},
		{readOnly(cluster("linux-nodes-ready", readyDoes("the control plane and the Linux workers"), "join-linux")),
			func(b *applyBinding) (engine.Runner, error) {
				return b.ready("linux-nodes-ready", engine.LinuxNodes)
			}},
		{cluster("coredns-restart", "restart CoreDNS so its replicas spread over the workers; wait for the rollout"),
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.api()); err != nil {
					return nil, err
				}
				return &corednsRestartPhase{restConfig: b.d.RESTConfig, timeout: b.d.NodesReadyTimeout, poll: 2 * time.Second}, nil
			}},
		{cluster("addons", "metrics-server and cert-manager from their release manifests, when the spec asks"),
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.api()); err != nil {
					return nil, err
				}
				return &addonsPhase{addons: b.d.Addons, restConfig: b.d.RESTConfig}, nil
			}},
		{engine.Descriptor{Name: "join-windows", Targets: engine.WindowsNodes, After: []string{"calico-ready", "windows-prepare"}, Does: joinDoes},
			func(b *applyBinding) (engine.Runner, error) { return b.join("join-windows", true) }},
		{cluster("approve-windows-csrs", approveDoes("the Windows nodes"), "join-windows"),
			func(b *applyBinding) (engine.Runner, error) {
				return b.approve("approve-windows-csrs", engine.WindowsNodes)
			}},
		{cluster("kube-proxy-windows", "kube-proxy-windows DaemonSet (HostProcess, winkernel) for the cluster's version"),
			func(b *applyBinding) (engine.Runner, error) {
				return b.manifests("kube-proxy-windows", "cluster/windows/kube-proxy-windows")
			}},
		{cluster("kube-proxy-win-pods", kubeProxyWindowsRolloutDoes, "kube-proxy-windows"),
			func(b *applyBinding) (engine.Runner, error) { return b.kubeProxyWindowsRollout(b.d.NodesReadyTimeout) }},
		{engine.Descriptor{Name: "windows-nodes-ready", Targets: engine.ClusterWide, RunsOn: "cluster, with Windows nodes",
			After: []string{"join-windows"}, Does: readyDoes("the Windows nodes") + "; a node still not Ready once Calico created its vSwitch gets its kubelet restarted, once (Calico's Windows troubleshooting)", ReadOnly: true},
			func(b *applyBinding) (engine.Runner, error) {
				r, err := b.ready("windows-nodes-ready", engine.WindowsNodes)
				if err != nil {
					return nil, err
				}
				if err := needs(b.d.ssh()); err != nil {
					return nil, err
				}
				d := b.d
				r.(*nodesReadyPhase).vswitch = &kubeletAfterVSwitch{
					connect:    func(ctx context.Context, host string) (vswitchConn, error) { return d.Connect(ctx, host) },
					after:      windowsVSwitchGrace,
					sshTimeout: 2 * time.Minute,
				}
				return r, nil
			}},
		{cluster("runtimeclasses", "a RuntimeClass per Windows build (handler runhcs-wcow-process, nodeSelector and the os=windows toleration)"),
			func(b *applyBinding) (engine.Runner, error) {
				return b.manifests("runtimeclasses", "cluster/windows/runtimeclass-")
			}},
		{cluster("check-workloads", "the guide's check workloads (spec.checkWorkloads.image): hello on the Linux workers, aspnetapp on Windows through its RuntimeClass; waits for their rollout, and a pod that cannot pull its image fails the phase naming the image and node"),
			func(b *applyBinding) (engine.Runner, error) {
				r, err := b.manifests("check-workloads", "workloads/")
				if err != nil {
					return nil, err
				}
				return &checkWorkloadsPhase{manifestPhase: r.(*manifestPhase), timeout: b.d.NodesReadyTimeout, poll: 2 * time.Second}, nil
			}},
		{readOnly(cluster("doctor", "hybridctl doctor against the new cluster; its summary ends the output")),
			func(b *applyBinding) (engine.Runner, error) {
				if err := needs(b.d.api()); err != nil {
					return nil, err
				}
				return &doctorPhase{restConfig: b.d.RESTConfig}, nil
			}},
	}
}

const joinDoes = "kubeadm join with a fresh one-hour token and the CA hash; join.yaml removed afterwards"

// ApplyProcedure describes the apply procedure's phases, in order: what
// --help and docs/apply.md show, known without a cluster.
func ApplyProcedure() []engine.Descriptor { return describe(applyDefs()) }

// Phases builds the apply procedure's phases bound to d. The error wraps
// ErrMissingDependency and names every phase whose dependencies d lacks.
func Phases(d Deps) ([]engine.Phase, error) {
	return bind(applyDefs(), &applyBinding{d: d.withDefaults()})
}

// applyBinding is what apply's phases are built from: the dependencies,
// and the preflight phases' shared implementation, made once.
type applyBinding struct {
	d          Deps
	preflight3 []engine.Runner
}

func (b *applyBinding) bundleUpload() (engine.Runner, error) {
	d := b.d
	if err := needs(d.ssh()); err != nil {
		return nil, err
	}
	return &bundleUploadPhase{bundle: d.Bundle, connect: func(ctx context.Context, host string) (bundleConn, error) { return d.Connect(ctx, host) }}, nil
}

func (b *applyBinding) calico() (engine.Runner, error) {
	d := b.d
	if err := needs(d.api()); err != nil {
		return nil, err
	}
	if err := needs("Calico's manifests (Deps.Calico)", d.Calico != nil); err != nil {
		return nil, err
	}
	return &calicoPhase{files: d.Files, manifests: d.Calico, restConfig: d.RESTConfig}, nil
}

func (b *applyBinding) calicoReady() (engine.Runner, error) {
	if err := needs(b.d.api()); err != nil {
		return nil, err
	}
	return &calicoReadyPhase{hosts: b.d.Hosts, restConfig: b.d.RESTConfig, timeout: b.d.CalicoTimeout, poll: 5 * time.Second}, nil
}

func (b *applyBinding) preflight(i int) (engine.Runner, error) {
	if err := needs(b.d.ssh()); err != nil {
		return nil, err
	}
	if b.preflight3 == nil {
		d := b.d
		runner := func(ctx context.Context, host string) (hostfacts.Runner, error) { return d.Connect(ctx, host) }
		h, c, p := preflight.Phases(runner, d.Hosts, d.Expect, d.IgnorePreflight)
		b.preflight3 = []engine.Runner{h, c, p}
	}
	return b.preflight3[i], nil
}

func (b *applyBinding) join(name string, windows bool) (engine.Runner, error) {
	d := b.d
	if err := needs(d.ssh()); err != nil {
		return nil, err
	}
	if err := needs(d.files()); err != nil {
		return nil, err
	}
	return &joinPhase{title: name, windows: windows, files: d.Files, hosts: d.Hosts, connect: d.hostConn, redactor: d.Redactor, members: members{d.Members}}, nil
}

func (b *applyBinding) approve(name string, nodes func([]engine.Host) []engine.Host) (engine.Runner, error) {
	d := b.d
	if err := needs(d.api()); err != nil {
		return nil, err
	}
	if err := needs("the CSR inventory (Deps.Inventory)", d.Inventory != nil); err != nil {
		return nil, err
	}
	return &approveCSRsPhase{title: name, nodes: nodes, hosts: d.Hosts, inventory: d.Inventory,
		restConfig: d.RESTConfig, timeout: d.CSRTimeout, poll: 2 * time.Second, members: members{d.Members}}, nil
}

func (b *applyBinding) ready(name string, nodes func([]engine.Host) []engine.Host) (engine.Runner, error) {
	d := b.d
	if err := needs(d.api()); err != nil {
		return nil, err
	}
	return &nodesReadyPhase{title: name, nodes: nodes, hosts: d.Hosts, restConfig: d.RESTConfig,
		timeout: d.NodesReadyTimeout, poll: 2 * time.Second}, nil
}

func (b *applyBinding) manifests(name, prefix string) (engine.Runner, error) {
	d := b.d
	if err := needs(d.api()); err != nil {
		return nil, err
	}
	if err := needs(d.files()); err != nil {
		return nil, err
	}
	return &manifestPhase{title: name, paths: d.Files.under(prefix), files: d.Files, restConfig: d.RESTConfig}, nil
}
