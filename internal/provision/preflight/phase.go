package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Default bounds of the post-prepare phase's wait for the clock and the
// API name (Expect.PostPrepareWait, PostPreparePoll).
const (
	DefaultPostPrepareWait = 3 * time.Minute
	DefaultPostPreparePoll = 10 * time.Second
)

// The preflight phases' descriptions. "preflight" gathers and checks each
// node, "preflight-cluster" (a gate after it) checks across nodes; they
// share the gathered facts, and after a resume the cluster phase gathers
// what it is missing itself. "post-prepare" goes after the preparation
// phases: it checks again, as errors, what preflight only warned about
// because the preparation sets it up (time-sync, clock-skew,
// api-name-resolves). All three change nothing. HostDescriptor describes
// "preflight".
func HostDescriptor() engine.Descriptor {
	return engine.Descriptor{Name: "preflight", ReadOnly: true,
		Does: "connect to every node; check OS and build, swap, time, the API name, free ports"}
}

// ClusterDescriptor describes "preflight-cluster".
func ClusterDescriptor() engine.Descriptor {
	return engine.Descriptor{Name: "preflight-cluster", Targets: engine.ClusterWide, After: []string{"preflight"}, ReadOnly: true,
		Does: "check that product_uuid and machine id are unique across the nodes"}
}

// PostPrepareDescriptor describes "post-prepare".
func PostPrepareDescriptor() engine.Descriptor {
	return engine.Descriptor{Name: "post-prepare", ReadOnly: true,
		Does: "after the preparation, check the clock and the API name again, as errors"}
}

// Phases are the implementations of the three preflight phases, sharing
// the facts they gather: host of HostDescriptor, cluster of
// ClusterDescriptor, postPrepare of PostPrepareDescriptor.
func Phases(runner func(ctx context.Context, host string) (hostfacts.Runner, error), hosts []engine.Host, x Expect, ignore []string) (host, cluster, postPrepare engine.Runner) {
	st := &store{runner: runner, hosts: hosts, expect: x, ignore: ignore, facts: map[string]*hostfacts.Host{}}
	return &hostPhase{st}, &clusterPhase{st}, &postPreparePhase{st}
}

type store struct {
	runner func(ctx context.Context, host string) (hostfacts.Runner, error)
	hosts  []engine.Host
	expect Expect
	ignore []string

	mu    sync.Mutex
	facts map[string]*hostfacts.Host
}

func (s *store) gather(ctx context.Context, h engine.Host) (*hostfacts.Host, error) {
	r, err := s.runner(ctx, h.Name)
	if err != nil {
		return nil, err
	}
	f, err := hostfacts.GatherHost(ctx, r, h, s.expect.APIName)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.facts[h.Name] = f
	s.mu.Unlock()
	return f, nil
}

// FindingsError is a failed preflight: the error findings, one per line.
type FindingsError struct{ Findings []Finding }

func (e *FindingsError) Error() string {
	lines := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		lines[i] = f.String()
	}
	return fmt.Sprintf("%d preflight check(s) failed (ignore one with --ignore-preflight-errors=NAME):\n  %s", len(e.Findings), strings.Join(lines, "\n  "))
}

func (s *store) outcome(ctx context.Context, findings []Finding) error {
	errs, warnings := Apply(findings, s.ignore)
	for _, w := range warnings {
		engine.Warn(ctx, "%s", w)
	}
	if len(errs) > 0 {
		return &FindingsError{Findings: errs}
	}
	return nil
}

type hostPhase struct{ *store }

func (p *hostPhase) Run(ctx context.Context, h engine.Host) error {
	f, err := p.gather(ctx, h)
	if err != nil {
		return err
	}
	return p.outcome(ctx, CheckHost(f, h, p.expect))
}

func (p *hostPhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	checks := NodeChecks(h, ScopeNode, ScopePrepared)
	var ports []string
	for _, pt := range RequiredPorts(h) {
		ports = append(ports, fmt.Sprint(pt.Number))
	}
	return []string{
		"connect over SSH and read facts (read-only): OS, product_uuid, machine id, swap, time sync, clock, " +
			p.expect.APIName + " resolution, listening ports",
		"check " + strings.Join(checks, ", ") + " (ports " + strings.Join(ports, ", ") + " must be free; " +
			strings.Join(NodeChecks(h, ScopePrepared), ", ") + " only warn: the preparation sets them up)",
	}, nil
}

type clusterPhase struct{ *store }

func (p *clusterPhase) Run(ctx context.Context, _ engine.Host) error {
	var all []*hostfacts.Host
	var errs []error
	for _, h := range engine.Nodes(p.hosts) {
		p.mu.Lock()
		f := p.facts[h.Name]
		p.mu.Unlock()
		if f == nil { // preflight finished in an earlier run
			var err error
			if f, err = p.gather(ctx, h); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", h.Name, err))
				continue
			}
		}
		all = append(all, f)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return p.outcome(ctx, CheckCluster(all))
}

func (p *clusterPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	return []string{"compare product_uuid and machine id across all nodes (must be unique)"}, nil
}

// postPreparePhase checks again, after prepare.sh or prepare.ps1 pointed
// the node at the spec's NTP and DNS servers, what preflight only warned
// about. A clock takes a while to synchronise, so it retries until
// Expect.PostPrepareWait has passed.
type postPreparePhase struct{ *store }

func (p *postPreparePhase) wait() (time.Duration, time.Duration) {
	w, poll := p.expect.PostPrepareWait, p.expect.PostPreparePoll
	if w <= 0 {
		w = DefaultPostPrepareWait
	}
	if poll <= 0 {
		poll = DefaultPostPreparePoll
	}
	return w, poll
}

func (p *postPreparePhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	w, poll := p.wait()
	return []string{
		"read the facts again (read-only) and check " + strings.Join(NodeChecks(h, ScopePrepared), ", ") +
			fmt.Sprintf(" as errors, every %s for up to %s while the clock synchronises", poll, w),
	}, nil
}

func (p *postPreparePhase) Run(ctx context.Context, h engine.Host) error {
	w, poll := p.wait()
	deadline := time.Now().Add(w)
	for {
		f, err := p.gather(ctx, h)
		if err != nil {
			return err
		}
		findings := CheckPrepared(f, h, p.expect)
		errs, _ := Apply(findings, p.ignore)
		if len(errs) == 0 || !time.Now().Add(poll).Before(deadline) {
			return p.outcome(ctx, findings)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
