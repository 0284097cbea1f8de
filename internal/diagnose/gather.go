package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Target is one node to diagnose.
type Target struct {
	Name string
	OS   engine.OS
}

// Options is one run of node diagnose.
type Options struct {
	Targets []Target
	// Dial returns the connection to a node (apply's transport pool).
	Dial func(ctx context.Context, node string) (hostfacts.Conn, error)
	// Cluster is the API's view; ClusterErr why it is nil.
	Cluster    *Cluster
	ClusterErr error
	Expect     Expect
	// Only selects checks by ID (all when empty).
	Only map[string]bool
	// Concurrency bounds the nodes gathered at once (default 4).
	Concurrency int
	// NodeTimeout bounds one node's gathering (default 2 minutes).
	NodeTimeout time.Duration
	// Collect, when set, is --collect's directory: a node's gathering
	// output too long to parse is kept there, redacted, as
	// NODE/gather-output.txt (at most MaxCollectedOutput of it).
	Collect *atomicfile.Dir
}

// NodeResult is one node's outcome.
type NodeResult struct {
	Name  string          `json:"name"`
	OS    engine.OS       `json:"os"`
	Error string          `json:"error,omitempty"`
	Facts *hostfacts.Node `json:"-"`
}

// Result is a whole run: findings and skipped checks in node order (the
// spec's), then check order.
type Result struct {
	Nodes    []NodeResult
	Findings []Finding
	Skipped  []Skipped
	// Ran is the number of checks selected; Checks their IDs, in list
	// order.
	Ran    int
	Checks []string
	// Source is the cluster's overlay source, "" when unknown.
	Source string
}

// Unreached returns the nodes that could not be gathered.
func (r *Result) Unreached() []NodeResult {
	var out []NodeResult
	for _, n := range r.Nodes {
		if n.Error != "" {
			out = append(out, n)
		}
	}
	return out
}

// Incomplete reports whether something the user asked for could not be
// checked: a node not reached, or a check skipped because a read failed.
func (r *Result) Incomplete() bool {
	if len(r.Unreached()) > 0 {
		return true
	}
	for _, s := range r.Skipped {
		if s.Incomplete {
			return true
		}
	}
	return false
}

// Run gathers every target (concurrently, bounded) and evaluates the
// checks. A node that cannot be reached is recorded, not fatal.
func Run(ctx context.Context, o Options) *Result {
	conc := o.Concurrency
	if conc <= 0 {
		conc = 4
	}
	timeout := o.NodeTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	res := &Result{Nodes: make([]NodeResult, len(o.Targets)), Ran: len(o.Only)}
	if len(o.Only) == 0 {
		res.Ran = len(Checks())
	}
	for _, c := range Checks() {
		if len(o.Only) == 0 || o.Only[c.ID] {
			res.Checks = append(res.Checks, c.ID)
		}
	}
	if o.Cluster != nil {
		res.Source = o.Cluster.Source
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i, t := range o.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			nr := NodeResult{Name: t.Name, OS: t.OS}
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			f, err := gatherOne(nctx, o, t)
			if err != nil {
				if errors.Is(nctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
					err = fmt.Errorf("%w (no answer within %s)", err, timeout)
				}
				nr.Error = err.Error()
			}
			nr.Facts = f
			res.Nodes[i] = nr
		}()
	}
	wg.Wait()
	for _, n := range res.Nodes {
		if n.Facts == nil {
			continue
		}
		fs, sk := Evaluate(n.Facts, o.Cluster, o.ClusterErr, o.Expect, o.Only)
		res.Findings = append(res.Findings, fs...)
		res.Skipped = append(res.Skipped, sk...)
	}
	return res
}

func gatherOne(ctx context.Context, o Options, t Target) (*hostfacts.Node, error) {
	conn, err := o.Dial(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	if o.Collect == nil {
		return hostfacts.GatherNode(ctx, conn, t.Name, o.Expect.API, nil)
	}
	return gatherKept(ctx, conn, t.Name, o)
}

// gatherOutputFile is where --collect keeps a gathering output too long to
// parse, in the node's directory.
const gatherOutputFile = "gather-output.txt"

// MaxCollectedOutput is how much of a gathering output too long to parse
// --collect keeps.
const MaxCollectedOutput = 64 << 20

// gatherKept gathers with the output streamed, redacted, into a temporary
// file in the node's collect directory; the file is kept only when the
// output was too long to parse (the error then names it), and removed
// otherwise (the parsed outputs are collected as usual).
func gatherKept(ctx context.Context, conn hostfacts.Conn, node string, o Options) (*hostfacts.Node, error) {
	nd, err := mkdirPrivate(o.Collect, safeName(node))
	if err != nil {
		return nil, err
	}
	defer nd.Close()
	tmp, err := nd.CreateTemp(gatherOutputFile, 0o600)
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	w := newRedactingWriter(tmp, MaxCollectedOutput)
	f, err := hostfacts.GatherNode(ctx, conn, node, o.Expect.API, w)
	var le *transport.OutputLimitError
	if !errors.As(err, &le) {
		tmp.Abort()
		return f, err
	}
	if cerr := w.Close(); cerr != nil {
		tmp.Abort()
		return nil, fmt.Errorf("%w; keeping it in %s failed: %w", err, nd.Path(gatherOutputFile), cerr)
	}
	if cerr := tmp.Commit(ctx, atomicfile.Options{}); cerr != nil {
		tmp.Abort()
		return nil, fmt.Errorf("%w; keeping it in %s failed: %w", err, nd.Path(gatherOutputFile), cerr)
	}
	return nil, fmt.Errorf("%w; the first %s of it, redacted, is in %s", err, transport.MiB(min(le.Sent, MaxCollectedOutput)), nd.Path(gatherOutputFile))
}
