package procedure

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/inventory"
)

// InventoryFrom is the CSR approver's inventory from the plan: every node's
// address and the DNS suffix. The spec's addresses win over what a node
// reports about itself.
func InventoryFrom(p *plan.Plan) (csr.Inventory, error) {
	inv := csr.StaticInventory{Suffix: p.DNSSuffix, Addresses: map[string]netip.Addr{}}
	for _, n := range p.Nodes {
		a, err := netip.ParseAddr(n.Address)
		if err != nil {
			return nil, fmt.Errorf("node %s: address %q: %w", n.Name, n.Address, err)
		}
		inv.Addresses[n.Name] = a
	}
	return inv, nil
}

// approveCSRsPhase approves the kubelet-serving CSRs of a set of nodes
// through the verified approver (internal/csr): a request is approved only
// when its requester, names and addresses belong to the node; a wrong one
// is denied with its reasons and fails the phase. It waits until every
// node has an approved serving certificate request.
type approveCSRsPhase struct {
	title      string
	nodes      func([]engine.Host) []engine.Host
	hosts      []engine.Host
	inventory  csr.Inventory
	restConfig func(ctx context.Context) (*rest.Config, error)
	timeout    time.Duration
	poll       time.Duration
	// members were members of the cluster before the run: their pending
	// requests are reviewed, but the phase does not wait for them (an
	// adopted cluster's old requests are long gone).
	members
}

// required are the nodes the phase waits for: those not members before
// the run (joined by it).
func (p *approveCSRsPhase) required() []string {
	var out []string
	for _, n := range p.names() {
		if skip, _ := p.skip(engine.Host{Name: n}); !skip {
			out = append(out, n)
		}
	}
	return out
}

// ShouldRun implements engine.Skipper: the phase runs when a node joined
// by this run needs its request approved, or a node of the phase has a
// request no one decided yet.
func (p *approveCSRsPhase) ShouldRun(ctx context.Context, _ engine.Host) (bool, string, error) {
	if len(p.required()) > 0 {
		return true, "", nil
	}
	client, err := clientFor(ctx, p.restConfig, p.title)
	if errors.Is(err, inventory.ErrNoCluster) {
		return true, "", nil // a cluster not built yet: it will
	}
	if err != nil {
		return false, "", err
	}
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: csr.SignerFieldSelector()})
	if err != nil {
		return false, "", fmt.Errorf("listing kubelet-serving CertificateSigningRequests: %w", err)
	}
	mine := map[string]bool{}
	for _, n := range p.names() {
		mine[n] = true
	}
	for i := range list.Items {
		c := &list.Items[i]
		if node, ok := strings.CutPrefix(c.Spec.Username, "system:node:"); ok && mine[node] && !csr.IsDecided(c) {
			return true, "", nil
		}
	}
	return false, "every node was a member before this run and none has a pending kubelet-serving request", nil
}

func (p *approveCSRsPhase) names() []string {
	var out []string
	for _, h := range p.nodes(p.hosts) {
		out = append(out, h.Name)
	}
	return out
}

func (p *approveCSRsPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	wait := fmt.Sprintf("wait up to %s until %s each have a kubelet-serving CSR", p.timeout, strings.Join(p.required(), ", "))
	if len(p.required()) == 0 {
		wait = "wait for no node: every node of " + strings.Join(p.names(), ", ") + " was a member before this run; review their pending kubelet-serving CSRs, if any"
	}
	return []string{
		wait,
		"review each with hybridctl csr approve's checks (requester, signature, subject, usages, DNS names, IPs against the spec's addresses, Node exists, expiration)",
		"approve the ones that belong to their node; deny the others with the reasons (the phase then fails)",
	}, nil
}

func (p *approveCSRsPhase) Run(ctx context.Context, _ engine.Host) error {
	client, err := clientFor(ctx, p.restConfig, p.title)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range p.names() {
		want[n] = true
	}
	required := map[string]bool{}
	for _, n := range p.required() {
		required[n] = true
	}
	opts := csr.Options{Inventory: p.inventory}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var waiting []string
	for {
		approved, denied, pendingWhy, err := p.round(ctx, client, want, opts)
		if err != nil {
			return err
		}
		if len(denied) > 0 {
			return fmt.Errorf("denied kubelet-serving CSRs that do not belong to their node: %s", strings.Join(denied, "; "))
		}
		waiting = waiting[:0]
		for n := range required {
			if !approved[n] {
				w := n
				if why := pendingWhy[n]; why != "" {
					w += " (" + why + ")"
				}
				waiting = append(waiting, w)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		sort.Strings(waiting)
		select {
		case <-ctx.Done():
			return fmt.Errorf("no approved kubelet-serving CSR after %s for %s", p.timeout, strings.Join(waiting, ", "))
		case <-time.After(p.poll):
		}
	}
}

// round reviews the pending requests of the wanted nodes once. It reports
// which nodes have an approved request (now or before), the requests it
// denied, and why requests were left pending.
func (p *approveCSRsPhase) round(ctx context.Context, client kubeclient.Interface, want map[string]bool, opts csr.Options) (approved map[string]bool, denied []string, pendingWhy map[string]string, err error) {
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: csr.SignerFieldSelector()})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing kubelet-serving CertificateSigningRequests: %w", err)
	}
	approved, pendingWhy = map[string]bool{}, map[string]string{}
	getNode := csr.APINodeGetter(client)
	for i := range list.Items {
		c := &list.Items[i]
		node, ok := strings.CutPrefix(c.Spec.Username, "system:node:")
		if !ok || !want[node] {
			continue // other nodes' requests are not this phase's to decide
		}
		if isApproved(c) {
			approved[node] = true
			continue
		}
		if csr.IsDecided(c) {
			continue
		}
		rv := csr.ReviewCSR(ctx, c, getNode, opts)
		switch rv.Decision {
		case csr.LeavePending:
			pendingWhy[node] = strings.Join(rv.Reasons(), "; ")
			continue
		case csr.Deny:
			denied = append(denied, fmt.Sprintf("%s from %s: %s", c.Name, node, strings.Join(rv.Reasons(), "; ")))
		}
		if _, err := csr.ApplyWithRetry(ctx, client, c, rv, opts); err != nil {
			return nil, nil, nil, err
		}
		if rv.Decision == csr.Approve {
			approved[node] = true
		}
	}
	return approved, denied, pendingWhy, nil
}

func isApproved(c *certv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certv1.CertificateApproved && cond.Status == "True" {
			return true
		}
	}
	return false
}
