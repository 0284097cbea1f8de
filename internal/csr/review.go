// Package csr reviews kubelet-serving CertificateSigningRequests.
//
// With serverTLSBootstrap: true every kubelet asks the cluster CA for a
// serving certificate and nothing in Kubernetes approves it. Approving
// whatever is pending hands anyone who holds one node's credentials a
// CA-signed certificate for another node's names and addresses. This package
// approves only what provably belongs to the requesting node: every named
// check in Checks is evaluated and reported for every request, and Decide
// turns the results into approve, deny or leave pending.
//
// The package is library-first: Review is pure (it is given the Node and the
// optional inventory), Approver talks to the API for one-shot runs and
// Controller runs the same review as a long-running controller.
package csr

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// Fixed names from the Kubernetes API and the kubelet.
const (
	// SignerName is the only signer this package acts on.
	SignerName = certv1.KubeletServingSignerName // "kubernetes.io/kubelet-serving"
	// NodeUserPrefix prefixes the user name of every kubelet.
	NodeUserPrefix = "system:node:"
	// NodesGroup is the group every kubelet belongs to.
	NodesGroup = "system:nodes"

	// ReasonApproved and ReasonDenied are the condition reasons hybridctl
	// writes; kubectl get csr shows them.
	ReasonApproved = "HybridctlApproved"
	ReasonDenied   = "HybridctlDenied"

	// DefaultMaxExpiration caps spec.expirationSeconds: one year.
	DefaultMaxExpiration = 365 * 24 * time.Hour
)

// Inventory is what the cluster spec (cluster.yaml) says about nodes. When
// given, the inventory wins over what a Node reports about itself: a node can
// rewrite its own status addresses, it cannot rewrite the operator's file.
type Inventory interface {
	// NodeAddress is the node's address in the spec; false when the spec
	// has no node of that name.
	NodeAddress(name string) (netip.Addr, bool)
	// DNSSuffix is spec.network.dnsSuffix ("" when unset).
	DNSSuffix() string
}

// StaticInventory is an Inventory held in memory (tests, adapters).
type StaticInventory struct {
	Suffix    string
	Addresses map[string]netip.Addr
}

// NodeAddress implements Inventory.
func (s StaticInventory) NodeAddress(name string) (netip.Addr, bool) {
	a, ok := s.Addresses[name]
	return a, ok
}

// DNSSuffix implements Inventory.
func (s StaticInventory) DNSSuffix() string { return s.Suffix }

// ClusterView is what a Node's own report is compared with when no inventory
// is given. A kubelet may rewrite its own Node's status.addresses, so a name
// or address found there is the node's only when no other node and not the
// API server claims it.
type ClusterView struct {
	// Nodes are the registered Nodes; the requester's own is ignored.
	Nodes []*corev1.Node
	// APIServer are the API server's names and addresses as its clients
	// know them.
	APIServer []Endpoint
	// Warnings say what could not be read (for example a ConfigMap the
	// identity may not get): the comparison is then with less.
	Warnings []string
}

// Endpoint is one name or address of the API server.
type Endpoint struct {
	// Host is a DNS name or an IP address.
	Host string
	// Source says where it was learnt, for the reason of a refusal.
	Source string
	// ControlPlane is true when the API server may be reached at a
	// control-plane node's own name or address (its advertise address, a
	// controlPlaneEndpoint naming the only control-plane node): a Node
	// labelled node-role.kubernetes.io/control-plane, a label no kubelet can
	// set (NodeRestriction), may then carry it. False for the kubernetes
	// Service's ClusterIPs, which are never a node's.
	ControlPlane bool
}

// ClusterGetter returns the ClusterView a review compares with.
type ClusterGetter func(ctx context.Context) (*ClusterView, error)

// Input is everything a check may look at. Review fills the parsed fields.
type Input struct {
	CSR *certv1.CertificateSigningRequest

	// Request is the decoded PKCS#10 request; nil when it did not decode.
	Request *x509.CertificateRequest
	// ParseErr says why Request is nil.
	ParseErr error
	// SignatureErr is the result of Request.CheckSignature.
	SignatureErr error

	// NodeName is NAME from the requester system:node:NAME; "" when the
	// requester is not a node.
	NodeName string
	// Node is the Node object named NodeName; nil when NodeErr is set.
	Node *corev1.Node
	// NodeErr is the error looking the Node up. IsNodeNotFound(NodeErr)
	// means the Node is not registered (yet).
	NodeErr error

	// Inventory is the cluster spec; nil when none was given.
	Inventory Inventory
	// Cluster is what the names and addresses the Node reports about
	// itself are compared with when there is no Inventory; nil with a nil
	// ClusterErr when it was not looked up (those names and addresses are
	// then undecided).
	Cluster *ClusterView
	// ClusterErr is the error reading Cluster.
	ClusterErr error
	// MaxExpiration caps spec.expirationSeconds (0 means DefaultMaxExpiration).
	MaxExpiration time.Duration
}

// Verdict is the outcome of one check.
type Verdict string

const (
	// Pass: the check holds.
	Pass Verdict = "pass"
	// Fail: the request is wrong; it will not become right by waiting.
	Fail Verdict = "fail"
	// Unknown: the check cannot be decided now (Node not registered yet,
	// API error); the answer could change.
	Unknown Verdict = "unknown"
	// Skip: not evaluated because an earlier fact makes it meaningless
	// (for example the request did not decode); another check fails.
	Skip Verdict = "skip"
)

// Result is one check's outcome for one request.
type Result struct {
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	Message string  `json:"message,omitempty"`
}

// Decision is what happens to a request.
type Decision string

const (
	Approve      Decision = "approved"
	Deny         Decision = "denied"
	LeavePending Decision = "left-pending"
)

// Review is the full review of one request.
type Review struct {
	Name      string
	Node      string // NAME from system:node:NAME, "" when not a node
	Requester string
	Created   time.Time
	DNSNames  []string
	IPs       []string
	Emails    []string
	URIs      []string
	Usages    []string
	Decision  Decision
	Results   []Result
	// APIError is the error that kept the Node from being looked up (not
	// "not found"); the request is left pending and the run is incomplete.
	APIError error
}

// Reasons are the messages that explain the decision: the failed checks for
// a denial, the undecidable ones for a request left pending, and a summary
// for an approval.
func (r *Review) Reasons() []string {
	var want Verdict
	switch r.Decision {
	case Deny:
		want = Fail
	case LeavePending:
		want = Unknown
	default:
		return []string{"all checks passed"}
	}
	var out []string
	for _, res := range r.Results {
		if res.Verdict == want {
			out = append(out, res.Check+": "+res.Message)
		}
	}
	return out
}

// Decide turns check results into a decision: any failure denies; otherwise
// anything undecidable leaves the request pending; otherwise approve.
func Decide(results []Result) Decision {
	d := Approve
	for _, r := range results {
		switch r.Verdict {
		case Fail:
			return Deny
		case Unknown:
			d = LeavePending
		}
	}
	return d
}

// Prepare decodes the request and the requester into in. It does not look up
// the Node; the caller sets Node/NodeErr.
func Prepare(csr *certv1.CertificateSigningRequest) *Input {
	in := &Input{CSR: csr}
	in.NodeName = NodeNameOf(csr)
	in.Request, in.ParseErr = ParseRequest(csr.Spec.Request)
	if in.Request != nil {
		in.SignatureErr = in.Request.CheckSignature()
	}
	return in
}

// NodeNameOf returns NAME when the CSR's requester is system:node:NAME and
// "" otherwise. It does not look at groups; the requester check does.
func NodeNameOf(csr *certv1.CertificateSigningRequest) string {
	name, ok := strings.CutPrefix(csr.Spec.Username, NodeUserPrefix)
	if !ok {
		return ""
	}
	return name
}

// Evaluate runs every check in Checks on in and decides.
func Evaluate(in *Input) *Review {
	r := &Review{
		Name:      in.CSR.Name,
		Node:      in.NodeName,
		Requester: in.CSR.Spec.Username,
		Created:   in.CSR.CreationTimestamp.Time,
	}
	for _, u := range in.CSR.Spec.Usages {
		r.Usages = append(r.Usages, string(u))
	}
	if in.Request != nil {
		r.DNSNames = append(r.DNSNames, in.Request.DNSNames...)
		for _, ip := range in.Request.IPAddresses {
			r.IPs = append(r.IPs, ip.String())
		}
		r.Emails = append(r.Emails, in.Request.EmailAddresses...)
		for _, u := range in.Request.URIs {
			r.URIs = append(r.URIs, u.String())
		}
	}
	for _, c := range Checks() {
		v, msg := c.Fn(in)
		r.Results = append(r.Results, Result{Check: c.Name, Verdict: v, Message: msg})
	}
	r.Decision = Decide(r.Results)
	switch {
	case in.NodeErr != nil && !IsNodeNotFound(in.NodeErr):
		r.APIError = in.NodeErr
	case in.ClusterErr != nil:
		r.APIError = in.ClusterErr
	}
	return r
}

// IsDecided reports whether the CSR already carries an Approved or Denied
// condition (or has failed); such CSRs are never touched again.
func IsDecided(csr *certv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed:
			return true
		}
	}
	return false
}

// InventoryFromSpec is the Inventory of a loaded cluster spec.
func InventoryFromSpec(c *spec.Cluster) (StaticInventory, error) {
	inv := StaticInventory{Suffix: c.Spec.Network.DNSSuffix, Addresses: map[string]netip.Addr{}}
	for i, n := range c.Spec.Nodes {
		a, err := netip.ParseAddr(n.Address)
		if err != nil {
			return StaticInventory{}, fmt.Errorf("spec.nodes[%d] (%s): address %q: %w", i, n.Name, n.Address, err)
		}
		inv.Addresses[n.Name] = a.Unmap()
	}
	return inv, nil
}
