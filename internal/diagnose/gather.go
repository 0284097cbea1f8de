package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Conn is the part of apply's SSH client (transport.Client) gathering uses.
type Conn interface {
	Config() transport.Config
	// RunArgs runs a Linux script the transport's way (sh -c, through
	// sudo -n when the node's connection says so) with positional
	// arguments, the script's $1, $2, ...
	RunArgs(ctx context.Context, script string, args []string, stdin io.Reader, l transport.Limits) (*transport.Result, error)
	// RunLimited runs a script the OS's way (on Windows PowerShell
	// -EncodedCommand, or an upload run with -File when that command line
	// would be longer than cmd.exe accepts, as the gathering script's is).
	RunLimited(ctx context.Context, script string, stdin io.Reader, l transport.Limits) (*transport.Result, error)
}

// MaxGatherBytes is how much a node's gathering may print: its output is
// parsed whole, so a node that prints more (a compromised one answering
// with hundreds of MiB) fails with a message saying how much it sent, and
// the memory diagnose needs stays bounded. A real node prints well under a
// MiB (a 5,000-node cluster's routes, neighbours and FDB entries about 3).
const MaxGatherBytes = 16 << 20

// LinuxArgs are the Linux script's positional arguments: the marker, the
// API host and port, its $1, $2, $3 (data, never shell text).
func LinuxArgs(marker, apiHost string, apiPort int) []string {
	return []string{marker, apiHost, strconv.Itoa(apiPort)}
}

// WindowsInput is the Windows script's standard input.
func WindowsInput(apiHost string, apiPort int) []byte {
	b, _ := json.Marshal(struct {
		APIHost string `json:"apiHost"`
		APIPort int    `json:"apiPort"`
	}{apiHost, apiPort})
	return append(b, '\n')
}

// validArg refuses what no argument can carry (NUL) or what no API host
// holds (a line break): refused here, never sent.
func validArg(what, s string) error {
	if strings.ContainsAny(s, "\x00\n\r") {
		return fmt.Errorf("%s %q contains a NUL or a line break", what, s)
	}
	return nil
}

// Gather runs the node's read-only gathering over conn and parses it. The
// clock is sampled first with a command of its own.
func Gather(ctx context.Context, conn Conn, node string, x Expect) (*Facts, error) {
	return gather(ctx, conn, node, x, nil)
}

// gather is Gather with the gathering's standard output also written to
// spill as it arrives (--collect keeps it when it is too long to parse).
func gather(ctx context.Context, conn Conn, node string, x Expect, spill io.Writer) (*Facts, error) {
	if err := validArg("the API host", x.APIHost); err != nil {
		return nil, err
	}
	cfg := conn.Config()
	clock := hostfacts.SampleClock(ctx, scriptRunner{conn}, cfg.OS)
	var f *Facts
	switch cfg.OS {
	case engine.Windows:
		res, err := conn.RunLimited(ctx, WindowsScript, bytes.NewReader(WindowsInput(x.APIHost, x.APIPort)), transport.Limits{Max: MaxGatherBytes, Spill: spill})
		if err != nil {
			return nil, fmt.Errorf("gathering on %s: %w", node, err)
		}
		if f, err = ParseWindows(node, res.Stdout); err != nil {
			return nil, err
		}
	default:
		marker := hostfacts.NewMarker()
		res, err := conn.RunArgs(ctx, LinuxScript, LinuxArgs(marker, x.APIHost, x.APIPort), nil, transport.Limits{Max: MaxGatherBytes, Spill: spill})
		if err != nil {
			return nil, fmt.Errorf("gathering on %s: %w", node, err)
		}
		if f, err = ParseLinux(node, res.Stdout, marker); err != nil {
			return nil, err
		}
	}
	if clock.Sampled {
		clock.Synced = f.Clock.Synced
		f.Clock = clock
	} else if f.Clock.Sampled {
		// Only the script's own sample: no bracket to measure against.
		f.Clock.Sampled = false
		f.Clock.Detail = clock.Detail
	}
	return f, nil
}

// scriptRunner runs a script through the connection the OS's way.
type scriptRunner struct{ conn Conn }

func (r scriptRunner) Run(ctx context.Context, script string) (*transport.Result, error) {
	return r.conn.RunLimited(ctx, script, nil, transport.Limits{})
}

// Target is one node to diagnose.
type Target struct {
	Name string
	OS   engine.OS
}

// Options is one run of node diagnose.
type Options struct {
	Targets []Target
	// Dial returns the connection to a node (apply's transport pool).
	Dial func(ctx context.Context, node string) (Conn, error)
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
	Name  string    `json:"name"`
	OS    engine.OS `json:"os"`
	Error string    `json:"error,omitempty"`
	Facts *Facts    `json:"-"`
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

func gatherOne(ctx context.Context, o Options, t Target) (*Facts, error) {
	conn, err := o.Dial(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	if o.Collect == nil {
		return Gather(ctx, conn, t.Name, o.Expect)
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
func gatherKept(ctx context.Context, conn Conn, node string, o Options) (*Facts, error) {
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
	f, err := gather(ctx, conn, node, o.Expect, w)
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
