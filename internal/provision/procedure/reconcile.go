package procedure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// reconcilePhase brings a member's host back to the spec, for the members
// named by apply --reconcile, one node at a time: cordon and drain it,
// run its rendered prepare.sh again (containerd's configuration, kernel
// settings, packages: the script changes only what differs, restarting
// containerd and the kubelet when it does), rewrite the kubelet's
// configuration from the cluster's (kubeadm upgrade node phase
// kubelet-config) and restart the kubelet, wait until the node is Ready,
// uncordon it. Windows members are refused: prepare.ps1 does not touch a
// joined node; reset it and let apply join it again.
type reconcilePhase struct {
	nodes                      []string
	files                      Artifacts
	connect                    func(ctx context.Context, host string) (hostConn, error)
	restConfig                 func(ctx context.Context) (*rest.Config, error)
	drainTimeout, readyTimeout time.Duration
	poll                       time.Duration
	members
}

// Narrow implements engine.Narrower: only the nodes --reconcile names.
func (p *reconcilePhase) Narrow(hosts []engine.Host) []engine.Host {
	var out []engine.Host
	for _, h := range hosts {
		if slices.Contains(p.nodes, h.Name) {
			out = append(out, h)
		}
	}
	return out
}

// Limit implements engine.Limiter: one node at a time.
func (p *reconcilePhase) Limit() int { return 1 }

// ShouldRun implements engine.Skipper: a node named but not a member has
// nothing to reconcile (apply prepares and joins it instead).
func (p *reconcilePhase) ShouldRun(_ context.Context, h engine.Host) (bool, string, error) {
	if member, _ := p.skip(h); !member {
		return false, "not a member of the cluster: apply prepares and joins it", nil
	}
	return true, "", nil
}

const reconcileKubelet = "kubeadm upgrade node phase kubelet-config && systemctl daemon-reload && systemctl restart kubelet"

func (p *reconcilePhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	f, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("kubectl drain %s --ignore-daemonsets --delete-emptydir-data --timeout %s (cordon, then evict its pods)", h.Name, p.drainTimeout),
		describeFile(f, linuxPrepare, 0o700), "run as root: bash " + linuxPrepare + " (it changes only what differs from the spec)",
		"run as root: " + reconcileKubelet,
		fmt.Sprintf("wait up to %s until %s is Ready; kubectl uncordon %s", p.readyTimeout, h.Name, h.Name),
	}, nil
}

func (p *reconcilePhase) Run(ctx context.Context, h engine.Host) error {
	if h.OS == engine.Windows {
		return fmt.Errorf("%s runs Windows: prepare.ps1 leaves a joined node alone; reset it (hybridctl reset --node %s) and run apply to join it again", h.Name, h.Name)
	}
	f, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return err
	}
	client, err := clientFor(ctx, p.restConfig, "reconcile")
	if err != nil {
		return err
	}
	engine.Warn(ctx, "reconciling %s: draining it, then its preparation runs again (containerd and the kubelet restart when their configuration changes)", h.Name)
	if err := drainNode(ctx, client, h.Name, p.drainTimeout, -1, nil); err != nil {
		return fmt.Errorf("%w (the node stays cordoned: kubectl uncordon %s)", err, h.Name)
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return fmt.Errorf("%w (%s is cordoned: kubectl uncordon %s after fixing it)", err, h.Name, h.Name)
	}
	if err := c.Upload(ctx, linuxPrepare, f.Data, 0o700); err != nil {
		return fmt.Errorf("%w (%s is cordoned)", err, h.Name)
	}
	res, err := c.Run(ctx, "bash "+linuxPrepare)
	if err != nil {
		return fmt.Errorf("%w (%s is cordoned)", err, h.Name)
	}
	if !strings.Contains(string(res.Stdout), linuxReady+h.Name) {
		return &outputError{msg: "prepare.sh ended without \"" + linuxReady + h.Name + "\" (" + h.Name + " is cordoned)", out: append(res.Stdout, res.Stderr...)}
	}
	if _, err := c.Run(ctx, reconcileKubelet); err != nil {
		return fmt.Errorf("%w (%s is cordoned)", err, h.Name)
	}
	pending, err := waitUntil(ctx, p.readyTimeout, p.poll, func(ctx context.Context) (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, h.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		left := notReadyNodes([]corev1.Node{*n}, []string{h.Name})
		return len(left) == 0, strings.Join(left, "; ")
	})
	if err != nil {
		return fmt.Errorf("%s not Ready after its reconciliation: %s (it stays cordoned)", h.Name, pending)
	}
	return uncordonNode(ctx, client, h.Name)
}
