package csr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// ControllerOptions configure the --watch controller.
type ControllerOptions struct {
	Options
	// DryRun logs decisions without writing them.
	DryRun bool
	// Server is the URL the client connects to (rest.Config.Host); without
	// an Inventory its host is one of the API server's names that no
	// Node may claim (see DiscoverAPIServer).
	Server string
	// Workers process requests in parallel (default 2).
	Workers int
	// Logger receives one line per decision (default slog.Default()).
	Logger *slog.Logger
	// OnDecision, when set, is called after each decision is written (or
	// would be, in a dry run). Tests and benchmarks observe the controller
	// through it.
	OnDecision func(Outcome)
}

// Controller approves kubelet-serving CSRs as they arrive. It watches CSRs of
// that signer (field selector on the server) and Nodes; a request left
// pending because its Node is not registered is looked at again when the Node
// appears; API errors retry with rate-limited backoff.
type Controller struct {
	client kubeclient.Interface
	opts   ControllerOptions
	log    *slog.Logger

	queue     workqueue.TypedRateLimitingInterface[string]
	csrs      certlisters.CertificateSigningRequestLister
	csrIndex  cache.Indexer
	nodes     corelisters.NodeLister
	informers []cache.SharedIndexInformer
	synced    []cache.InformerSynced

	mu          sync.Mutex
	lastPending map[string]string // CSR name -> reasons last logged, to log a pending request once per reason
}

const byNodeIndex = "node"

// NewController builds a controller; Run starts it.
func NewController(client kubeclient.Interface, opts ControllerOptions) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		client: client,
		opts:   opts,
		log:    log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-serving-csr"}),
		lastPending: map[string]string{},
	}
	// Two informers of their own (client-go's informer factory would bring
	// every API group's informers into the binary): CSRs of the
	// kubelet-serving signer only, indexed by node, and Nodes.
	csrAPI := client.CertificatesV1().CertificateSigningRequests()
	csrInf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = SignerFieldSelector()
			return csrAPI.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = SignerFieldSelector()
			return csrAPI.Watch(ctx, o)
		},
	}, &certv1.CertificateSigningRequest{}, 0, cache.Indexers{})
	if err := csrInf.AddIndexers(cache.Indexers{byNodeIndex: func(obj any) ([]string, error) {
		if csr, ok := obj.(*certv1.CertificateSigningRequest); ok {
			if n := NodeNameOf(csr); n != "" {
				return []string{n}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing CertificateSigningRequests by node: %w", err)
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certv1.CertificateSigningRequest); ok && !IsDecided(csr) {
			c.queue.Add(csr.Name)
		}
	}
	if _, err := csrInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if csr, ok := obj.(*certv1.CertificateSigningRequest); ok {
				c.forgetPending(csr.Name)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching CertificateSigningRequests: %w", err)
	}
	c.csrs = certlisters.NewCertificateSigningRequestLister(csrInf.GetIndexer())
	c.csrIndex = csrInf.GetIndexer()

	nodeAPI := client.CoreV1().Nodes()
	nodeInf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return nodeAPI.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return nodeAPI.Watch(ctx, o)
		},
	}, &corev1.Node{}, 0, cache.Indexers{})
	nodeChanged := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			c.enqueueNode(n.Name)
		}
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nodeChanged,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			// Only address changes can change a decision; skip heartbeats.
			if ok1 && ok2 && !addressesEqual(o.Status.Addresses, n.Status.Addresses) {
				c.enqueueNode(n.Name)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching Nodes: %w", err)
	}
	c.nodes = corelisters.NewNodeLister(nodeInf.GetIndexer())
	c.informers = []cache.SharedIndexInformer{csrInf, nodeInf}
	c.synced = []cache.InformerSynced{csrInf.HasSynced, nodeInf.HasSynced}
	return c, nil
}

func addressesEqual(a, b []corev1.NodeAddress) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// enqueueNode queues the pending requests of node name.
func (c *Controller) enqueueNode(name string) {
	objs, err := c.csrIndex.ByIndex(byNodeIndex, name)
	if err != nil {
		return
	}
	for _, o := range objs {
		if csr, ok := o.(*certv1.CertificateSigningRequest); ok && !IsDecided(csr) {
			c.queue.Add(csr.Name)
		}
	}
}

// Run starts the informers and workers and blocks until ctx is cancelled;
// then it stops taking work, lets running workers finish and returns nil.
// It returns an error when the caches cannot sync (API unreachable).
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	// Fail fast, with the API's own error, when the server is unreachable
	// or the identity may not list what the controller needs; informers
	// would retry silently forever.
	if err := c.preflight(ctx); err != nil {
		return err
	}

	// The informers run until Run returns, which waits for them to stop.
	var informers sync.WaitGroup
	defer informers.Wait()
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	for _, inf := range c.informers {
		informers.Add(1)
		go func() {
			defer informers.Done()
			inf.RunWithContext(ictx)
		}()
	}

	c.log.Info("starting kubelet-serving CSR approver", "workers", c.opts.Workers, "dryRun", c.opts.DryRun, "spec", c.opts.Inventory != nil)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("waiting for the CertificateSigningRequest and Node caches to sync")
	}
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.runWorker, time.Second)
		}()
	}
	<-ctx.Done()
	c.log.Info("stopping kubelet-serving CSR approver")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: SignerFieldSelector(), Limit: 1}); err != nil {
		return fmt.Errorf("listing kubelet-serving CertificateSigningRequests: %w", err)
	}
	if _, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	if c.opts.Inventory != nil {
		return nil
	}
	// Without a spec, what a Node reports about itself is compared with
	// every other Node (the informer's cache) and the API server's names,
	// read once here.
	api, warnings, err := DiscoverAPIServer(ctx, c.client, c.opts.Server)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		c.log.Warn(w)
	}
	c.opts.Cluster = func(context.Context) (*ClusterView, error) {
		nodes, err := c.nodes.List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("listing Nodes from the cache: %w", err)
		}
		return &ClusterView{Nodes: nodes, APIServer: api}, nil
	}
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("will retry CertificateSigningRequest", "csr", key, "error", err.Error())
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) nodeGetter() NodeGetter {
	return func(_ context.Context, name string) (*corev1.Node, error) {
		return c.nodes.Get(name)
	}
}

// sync reviews one request and writes the decision. A returned error retries
// the request with backoff.
func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetPending(name)
		return nil
	}
	if err != nil {
		return err
	}
	if IsDecided(csr) || csr.Spec.SignerName != SignerName {
		c.forgetPending(name)
		return nil
	}
	rv := ReviewCSR(ctx, csr, c.nodeGetter(), c.opts.Options)
	if rv.Decision == LeavePending {
		c.logPending(rv)
		return nil
	}
	if !c.opts.DryRun {
		if _, err := Apply(ctx, c.client, csr, rv); err != nil {
			if apierrors.IsConflict(err) {
				// The informer will deliver the newer object; review it then.
				return nil
			}
			return err
		}
	}
	c.forgetPending(name)
	c.logDecision(rv)
	return nil
}

func (c *Controller) logDecision(rv *Review) {
	// Lists are joined into strings: slog quotes a string that holds
	// control characters, not the elements of a slice, and the names in a
	// request are chosen by whoever made it.
	attrs := []any{"csr", rv.Name, "node", rv.Node, "requester", rv.Requester,
		"decision", string(rv.Decision), "dnsNames", strings.Join(rv.DNSNames, ","), "ips", strings.Join(rv.IPs, ","),
		"reasons", strings.Join(rv.Reasons(), "; "), "dryRun", c.opts.DryRun}
	if !rv.Created.IsZero() {
		attrs = append(attrs, "age", time.Since(rv.Created).Round(time.Millisecond).String())
	}
	c.log.Info("kubelet-serving CSR "+string(rv.Decision), attrs...)
	if c.opts.OnDecision != nil {
		c.opts.OnDecision(Outcome{Name: rv.Name, Node: rv.Node, Decision: rv.Decision, Reasons: rv.Reasons()})
	}
}

// logPending logs a request left pending once per distinct set of reasons.
func (c *Controller) logPending(rv *Review) {
	reasons := fmt.Sprint(rv.Reasons())
	c.mu.Lock()
	same := c.lastPending[rv.Name] == reasons
	c.lastPending[rv.Name] = reasons
	c.mu.Unlock()
	if !same {
		c.logDecision(rv)
	}
}

func (c *Controller) forgetPending(name string) {
	c.mu.Lock()
	delete(c.lastPending, name)
	c.mu.Unlock()
}
