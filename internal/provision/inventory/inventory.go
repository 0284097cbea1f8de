// Package inventory is what a cluster and its hosts are now, read once
// before a procedure runs or a diff is made: which of the spec's nodes
// already belong to the cluster, which are new, which conflict with it,
// which of the cluster's nodes the spec does not name, and each member's
// versions and settings as its host reports them (hostfacts.GatherInstalled).
//
// The truth is the cluster and the hosts, never apply's state file (a
// cache of progress): a cluster hybridctl did not build, or a lost state
// file, gives the same inventory. Reading it changes nothing anywhere.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Status is a spec node's relation to the cluster.
type Status string

// Statuses. A member is never prepared, joined, restarted or reconfigured
// by a plain apply.
const (
	// StatusNew: no Node object of the name or address, and the host (when
	// it could be read) has not joined a cluster.
	StatusNew Status = "new"
	// StatusMember: a Node object of the spec's name whose InternalIP is
	// the spec's address; or, when the cluster could not be read, a host
	// that has joined (kubelet.conf).
	StatusMember Status = "member"
	// StatusConflict: the name or the address belongs to the cluster but
	// not together (Node.Reason says with what).
	StatusConflict Status = "conflict"
)

// ErrNoCluster matches (errors.Is) a RESTConfig error that means there is
// no cluster to read yet (its context is not in the kubeconfig: apply has
// not imported it), as opposed to a cluster that cannot be reached.
var ErrNoCluster = errors.New("no cluster to read yet")

// Node is one spec node as the cluster and its host report it.
type Node struct {
	Host   engine.Host
	Status Status
	// Reason says why, in words ("Node k8s-lab-node-1 has InternalIP
	// 192.168.10.99, the spec says 192.168.10.24").
	Reason string
	// Object is the cluster's Node of this name, nil when there is none
	// or the cluster was not read.
	Object *corev1.Node
	// Facts are what the host reported; nil when it was not read (offline,
	// no connection) or could not be (HostErr).
	Facts   *hostfacts.Installed
	HostErr error
}

// Ready reports whether the Node object says Ready.
func (n *Node) Ready() bool {
	if n.Object == nil {
		return false
	}
	for _, c := range n.Object.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Extra is a cluster Node the spec does not name.
type Extra struct {
	Name       string `json:"name"`
	InternalIP string `json:"internalIP,omitempty"`
}

// Inventory is the cluster and its hosts, per spec node in spec order.
type Inventory struct {
	Nodes []*Node
	// Extra are the cluster's Nodes the spec does not name, by name.
	Extra []Extra
	// API is set when the cluster was read; ServerVersion is its API
	// server's version (gitVersion).
	API           bool
	ServerVersion string
}

// Node returns the inventory of one spec node, nil for another name.
func (inv *Inventory) Node(name string) *Node {
	if inv == nil {
		return nil
	}
	for _, n := range inv.Nodes {
		if n.Host.Name == name {
			return n
		}
	}
	return nil
}

// Member reports whether the spec node name is a member of the cluster.
func (inv *Inventory) Member(name string) bool {
	n := inv.Node(name)
	return n != nil && n.Status == StatusMember
}

// Conflicts returns an error naming both sides of every conflict, nil
// when there is none.
func (inv *Inventory) Conflicts() error {
	if inv == nil {
		return nil
	}
	var errs []error
	for _, n := range inv.Nodes {
		if n.Status == StatusConflict {
			errs = append(errs, fmt.Errorf("spec node %s: %s", n.Host.Name, n.Reason))
		}
	}
	return errors.Join(errs...)
}

// Options are what Discover reads.
type Options struct {
	// Hosts are the spec's nodes (engine hosts, with their addresses).
	Hosts []engine.Host
	// RESTConfig connects to the cluster; nil, or an error matching
	// ErrNoCluster, means there is no cluster to read (every node is new
	// unless its host has joined).
	RESTConfig func(ctx context.Context) (*rest.Config, error)
	// Connect reaches a host over SSH; nil reads no host.
	Connect func(ctx context.Context, host string) (hostfacts.Runner, error)
	// Concurrency caps the hosts read at once (default 10).
	Concurrency int
}

// Discover reads the cluster once (its Nodes, paginated) and every host in
// parallel, and classifies the spec's nodes. A host that cannot be reached
// is recorded on its node (HostErr) and classified from the cluster alone;
// the error is for what makes the whole inventory impossible (the cluster
// refusing or unreachable).
func Discover(ctx context.Context, o Options) (*Inventory, error) {
	inv := &Inventory{}
	for _, h := range engine.Nodes(o.Hosts) {
		inv.Nodes = append(inv.Nodes, &Node{Host: h})
	}
	var objects []corev1.Node
	if o.RESTConfig != nil {
		cfg, err := o.RESTConfig(ctx)
		switch {
		case errors.Is(err, ErrNoCluster):
		case err != nil:
			return nil, fmt.Errorf("reading the cluster: %w", err)
		default:
			inv.API = true
			if objects, inv.ServerVersion, err = listNodes(ctx, cfg); err != nil {
				return nil, fmt.Errorf("reading the cluster's nodes: %w", err)
			}
		}
	}
	if o.Connect != nil {
		readHosts(ctx, inv.Nodes, o.Connect, o.Concurrency)
	}
	classify(inv, objects)
	return inv, nil
}

// listNodes lists the cluster's Nodes 500 at a time, and its version.
func listNodes(ctx context.Context, cfg *rest.Config) ([]corev1.Node, string, error) {
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, "", err
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Nodes().List(ctx, opts)
	})
	p.PageSize = 500
	var out []corev1.Node
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, *n)
		}
		return nil
	})
	return out, v.GitVersion, err
}

func readHosts(ctx context.Context, nodes []*Node, connect func(ctx context.Context, host string) (hostfacts.Runner, error), concurrency int) {
	if concurrency <= 0 {
		concurrency = 10
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				n.HostErr = ctx.Err()
				return
			}
			defer func() { <-sem }()
			r, err := connect(ctx, n.Host.Name)
			if err != nil {
				n.HostErr = err
				return
			}
			n.Facts, n.HostErr = hostfacts.GatherInstalled(ctx, r, n.Host)
		}()
	}
	wg.Wait()
}

// InternalIP is a Node's first InternalIP address.
func InternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func classify(inv *Inventory, objects []corev1.Node) {
	byName := map[string]*corev1.Node{}
	byAddr := map[string]*corev1.Node{}
	for i := range objects {
		o := &objects[i]
		byName[o.Name] = o
		if ip := InternalIP(o); ip != "" {
			byAddr[ip] = o
		}
	}
	named := map[string]bool{}
	for _, n := range inv.Nodes {
		named[n.Host.Name] = true
		joined := n.Facts != nil && n.Facts.KubeletConf
		o := byName[n.Host.Name]
		other := byAddr[n.Host.Address]
		switch {
		case o != nil && InternalIP(o) != n.Host.Address:
			n.Object = o
			n.Status = StatusConflict
			n.Reason = fmt.Sprintf("the cluster's Node %s has InternalIP %s, the spec says %s", o.Name, orNone(InternalIP(o)), n.Host.Address)
		case o != nil:
			n.Object = o
			n.Status = StatusMember
			n.Reason = fmt.Sprintf("Node %s with InternalIP %s", o.Name, n.Host.Address)
		case other != nil:
			n.Status = StatusConflict
			n.Reason = fmt.Sprintf("its address %s is the InternalIP of the cluster's Node %s", n.Host.Address, other.Name)
		case joined && inv.API:
			// The host has joined a cluster in which it has no Node: its
			// kubelet is not registered (yet), or it joined another
			// cluster. It is not touched either way.
			n.Status = StatusMember
			n.Reason = "the host has /etc/kubernetes/kubelet.conf but the cluster has no Node " + n.Host.Name + " (not registered yet, or another cluster's)"
		case joined:
			n.Status = StatusMember
			n.Reason = "the host has joined a cluster (kubelet.conf)"
		default:
			n.Status = StatusNew
			n.Reason = "not in the cluster"
		}
	}
	for _, o := range objects {
		if !named[o.Name] {
			inv.Extra = append(inv.Extra, Extra{Name: o.Name, InternalIP: InternalIP(&o)})
		}
	}
	sort.Slice(inv.Extra, func(i, j int) bool { return inv.Extra[i].Name < inv.Extra[j].Name })
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}
