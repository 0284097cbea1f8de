package csr

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// Options configure a review.
type Options struct {
	// Inventory is the cluster spec; nil when none was given.
	Inventory Inventory
	// MaxExpiration caps spec.expirationSeconds (0: DefaultMaxExpiration).
	MaxExpiration time.Duration
	// Cluster gives what a Node's own report is compared with when there
	// is no Inventory (APIClusterView, or the controller's caches). Unset,
	// names and addresses taken from the Node are left undecided.
	Cluster ClusterGetter
}

// NodeGetter looks a Node up by name. It returns an error for which
// IsNodeNotFound is true when the Node does not exist.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// ReviewCSR decodes csr, looks up its Node and runs every check.
func ReviewCSR(ctx context.Context, csr *certv1.CertificateSigningRequest, getNode NodeGetter, opts Options) *Review {
	in := Prepare(csr)
	in.Inventory = opts.Inventory
	in.MaxExpiration = opts.MaxExpiration
	if in.NodeName != "" && getNode != nil {
		in.Node, in.NodeErr = getNode(ctx, in.NodeName)
		if in.NodeErr != nil {
			in.Node = nil
		}
	}
	if in.Inventory == nil && in.NodeName != "" && opts.Cluster != nil {
		in.Cluster, in.ClusterErr = opts.Cluster(ctx)
		if in.ClusterErr != nil {
			in.Cluster = nil
		}
	}
	return Evaluate(in)
}

// SignerFieldSelector selects kubelet-serving CSRs on the server.
func SignerFieldSelector() string {
	return fields.OneTermEqualSelector("spec.signerName", SignerName).String()
}

// ListPending returns the kubelet-serving CSRs that carry no Approved, Denied
// or Failed condition, oldest first. With names, only those CSRs.
func ListPending(ctx context.Context, client kubeclient.Interface, names []string) ([]certv1.CertificateSigningRequest, error) {
	var out []certv1.CertificateSigningRequest
	opts := metav1.ListOptions{FieldSelector: SignerFieldSelector(), Limit: 500}
	for {
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing kubelet-serving CertificateSigningRequests: %w", err)
		}
		for _, c := range list.Items {
			if IsDecided(&c) || (len(names) > 0 && !slices.Contains(names, c.Name)) {
				continue
			}
			out = append(out, c)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	slices.SortStableFunc(out, func(a, b certv1.CertificateSigningRequest) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// APINodeGetter looks Nodes up through the API, remembering answers for the
// life of the getter (one one-shot run).
func APINodeGetter(client kubeclient.Interface) NodeGetter {
	type answer struct {
		node *corev1.Node
		err  error
	}
	cache := map[string]answer{}
	return func(ctx context.Context, name string) (*corev1.Node, error) {
		if a, ok := cache[name]; ok {
			return a.node, a.err
		}
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			n = nil
		default:
			// not remembered: an API error may pass
			return nil, fmt.Errorf("getting Node %s: %w", name, err)
		}
		cache[name] = answer{n, err}
		return n, err
	}
}

// maxMessage bounds the condition message written to the API.
const maxMessage = 2048

// ConditionFor is the condition hybridctl writes for a decision.
func ConditionFor(rv *Review, now time.Time) certv1.CertificateSigningRequestCondition {
	c := certv1.CertificateSigningRequestCondition{
		Status:         corev1.ConditionTrue,
		LastUpdateTime: metav1.NewTime(now),
	}
	switch rv.Decision {
	case Approve:
		c.Type, c.Reason = certv1.CertificateApproved, ReasonApproved
		c.Message = fmt.Sprintf("hybridctl: requester, names and addresses belong to node %s", rv.Node)
	default:
		c.Type, c.Reason = certv1.CertificateDenied, ReasonDenied
		c.Message = "hybridctl: " + strings.Join(rv.Reasons(), "; ")
	}
	if len(c.Message) > maxMessage {
		c.Message = c.Message[:maxMessage-3] + "..."
	}
	return c
}

// Apply writes rv's decision (Approve or Deny) to csr through the approval
// subresource. A request left pending is not written. It returns the
// updated object. A conflict (someone else changed the CSR) is returned as
// is; callers re-read and re-review.
func Apply(ctx context.Context, client kubeclient.Interface, csr *certv1.CertificateSigningRequest, rv *Review) (*certv1.CertificateSigningRequest, error) {
	if rv.Decision != Approve && rv.Decision != Deny {
		return csr, nil
	}
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, ConditionFor(rv, time.Now()))
	out, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, upd, metav1.UpdateOptions{FieldManager: "hybridctl"})
	if err != nil {
		return nil, fmt.Errorf("writing %s condition to CertificateSigningRequest %s: %w", ConditionFor(rv, time.Time{}).Type, csr.Name, err)
	}
	return out, nil
}

// Outcome is what happened to one request; it is the -o json element
// (design §5).
type Outcome struct {
	Name     string   `json:"name"`
	Node     string   `json:"node"`
	Decision Decision `json:"decision"`
	Reasons  []string `json:"reasons"`
}

// ApplyWithRetry applies rv; when the CSR changed underneath (conflict), it
// re-reads it, skips it if someone else decided it, and otherwise reviews it
// again and retries, a few times. It never writes a decision other than the
// one it was given (a person may have confirmed that one): if the new review
// disagrees, it writes nothing and says so. The re-review reads the Node
// from the API again, so a Node changed meanwhile is seen.
func ApplyWithRetry(ctx context.Context, client kubeclient.Interface, csr *certv1.CertificateSigningRequest, rv *Review, opts Options) (*Review, error) {
	confirmed := rv.Decision
	for attempt := 0; ; attempt++ {
		if rv.Decision != confirmed {
			was := rv.Decision
			rv.Decision = LeavePending
			return rv, fmt.Errorf("CertificateSigningRequest %s changed while it was reviewed; it would now be %s; review it again", csr.Name, was)
		}
		_, err := Apply(ctx, client, csr, rv)
		if err == nil || !apierrors.IsConflict(err) || attempt == 3 {
			return rv, err
		}
		fresh, gerr := client.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if gerr != nil {
			return rv, fmt.Errorf("re-reading CertificateSigningRequest %s after a conflict: %w", csr.Name, gerr)
		}
		if IsDecided(fresh) {
			rv.Decision = LeavePending
			return rv, fmt.Errorf("CertificateSigningRequest %s was decided by someone else meanwhile", csr.Name)
		}
		csr = fresh
		// Re-read the Node too, not through the getter of the first review:
		// that one may hold the Node as it was then (APINodeGetter caches
		// for one run), and what changed meanwhile may be the Node.
		rv = ReviewCSR(ctx, csr, APINodeGetter(client), opts)
	}
}
