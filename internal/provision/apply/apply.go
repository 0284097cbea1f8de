// Package apply is `hybridctl apply` and `hybridctl reset` as a library:
// Apply and Reset take the derived plan's hosts and the commands' options
// and run the ordered phase lists, Phases and ResetPhases, which follow the
// guide section by section. Every phase of both lists is implemented;
// `apply --help`, `reset --help` and docs/apply.md show the lists as
// generated from Phases and ResetPhases.
package apply

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/provision"
	"github.com/hybridctl/hybridctl/internal/provision/preflight"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Deps are what the phases need from the command.
type Deps struct {
	Hosts []provision.Host
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
	Redactor *provision.Redactor
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
	// NodesReadyTimeout bounds the wait for the joined nodes to be Ready
	// and for CoreDNS's rollout after its restart (default 15m).
	NodesReadyTimeout time.Duration
	// ResetNodes are the nodes reset takes apart (empty: all).
	ResetNodes []string
	// DrainTimeout bounds draining one node in reset (default 5m).
	DrainTimeout time.Duration
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

// Phases returns the apply procedure in order. Gates: the Linux workers
// join after Calico is ready; the Windows nodes are prepared in parallel
// with the Linux part (reboots included) and join after Calico is ready
// for Windows; the cluster-wide phases run one after another.
func Phases(d Deps) []provision.Phase {
	runner := func(ctx context.Context, host string) (preflight.Runner, error) { return d.Connect(ctx, host) }
	list, postPrepare := preflight.Phases(runner, d.Hosts, d.Expect, d.IgnorePreflight)
	calicoTimeout := d.CalicoTimeout
	if calicoTimeout <= 0 {
		calicoTimeout = 15 * time.Minute
	}
	rebootTimeout := d.RebootTimeout
	if rebootTimeout <= 0 {
		rebootTimeout = 15 * time.Minute
	}
	csrTimeout := d.CSRTimeout
	if csrTimeout <= 0 {
		csrTimeout = 10 * time.Minute
	}
	nodesTimeout := d.NodesReadyTimeout
	if nodesTimeout <= 0 {
		nodesTimeout = 15 * time.Minute
	}
	ready := func(title, who, runsOn string, after []string, nodes func([]provision.Host) []provision.Host) provision.Phase {
		return &nodesReadyPhase{title: title, who: who, runsOn: runsOn, after: after, nodes: nodes, hosts: d.Hosts,
			restConfig: d.RESTConfig, timeout: nodesTimeout, poll: 2 * time.Second}
	}
	approve := func(title, who string, after []string, nodes func([]provision.Host) []provision.Host) provision.Phase {
		return &approveCSRsPhase{title: title, who: who, after: after, nodes: nodes, hosts: d.Hosts, inventory: d.Inventory,
			restConfig: d.RESTConfig, timeout: csrTimeout, poll: 2 * time.Second}
	}
	return append(list,
		&bundleUploadPhase{bundle: d.Bundle, connect: func(ctx context.Context, host string) (bundleConn, error) { return d.Connect(ctx, host) }},
		&linuxPreparePhase{files: d.Files, connect: d.hostConn},
		&windowsPreparePhase{files: d.Files, connect: d.hostConn, rebootTimeout: rebootTimeout},
		postPrepare,
		&kubeadmInitPhase{files: d.Files, connect: d.hostConn},
		&kubeconfigPhase{target: d.Kubeconfig, hosts: d.Hosts, connect: d.hostConn, redactor: d.Redactor},
		&calicoPhase{files: d.Files, manifests: d.Calico, restConfig: d.RESTConfig},
		&calicoReadyPhase{hosts: d.Hosts, restConfig: d.RESTConfig, timeout: calicoTimeout, poll: 5 * time.Second},
		&joinPhase{title: "join-linux", after: []string{"calico-ready"}, files: d.Files, hosts: d.Hosts, connect: d.hostConn, redactor: d.Redactor},
		approve("approve-linux-csrs", "the control plane and the Linux workers", []string{"join-linux"}, provision.LinuxNodes),
		ready("linux-nodes-ready", "the control plane and the Linux workers", "cluster", []string{"join-linux"}, provision.LinuxNodes),
		&corednsRestartPhase{restConfig: d.RESTConfig, timeout: nodesTimeout, poll: 2 * time.Second},
		&addonsPhase{addons: d.Addons, restConfig: d.RESTConfig},
		&joinPhase{title: "join-windows", windows: true, after: []string{"calico-ready", "windows-prepare"}, files: d.Files, hosts: d.Hosts, connect: d.hostConn, redactor: d.Redactor},
		approve("approve-windows-csrs", "the Windows nodes", []string{"join-windows"}, provision.WindowsNodes),
		&manifestPhase{title: "kube-proxy-windows", desc: "kube-proxy-windows DaemonSet (HostProcess, winkernel) for the cluster's version",
			paths: d.Files.under("cluster/windows/kube-proxy-windows"), files: d.Files, restConfig: d.RESTConfig},
		ready("windows-nodes-ready", "the Windows nodes", "cluster, with Windows nodes", []string{"join-windows"}, provision.WindowsNodes),
		&manifestPhase{title: "runtimeclasses", desc: "a RuntimeClass per Windows build (handler runhcs-wcow-process, nodeSelector and the os=windows toleration)",
			paths: d.Files.under("cluster/windows/runtimeclass-"), files: d.Files, restConfig: d.RESTConfig},
		&manifestPhase{title: "check-workloads", desc: "the guide's check workloads: hello on the Linux workers, aspnetapp on Windows through its RuntimeClass (doctor then checks they run)",
			paths: d.Files.under("workloads/"), files: d.Files, restConfig: d.RESTConfig},
		&doctorPhase{restConfig: d.RESTConfig},
	)
}
