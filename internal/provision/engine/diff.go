package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Diff lists what Run would change, reading state only, for hybridctl
// diff: for each step in list order (phases left out by Skip or Only are
// not looked at), a Differ's changes; a phase without a Differ that is not
// ReadOnly counts as one "run" change on each host where its Skipper (if
// any) says it would run. The state file is not read: diff compares with
// what the hosts and the cluster are, not with what an earlier run
// recorded. Steps are checked in parallel under the concurrency cap. With
// Offline nothing is read: every step that is not ReadOnly is a "run"
// change, as for fresh machines.
//
// A step that cannot be checked (a host unreachable, the API refusing)
// gives a PhaseError; the changes of every other step are returned with
// the joined errors.
func (e *Engine) Diff(ctx context.Context) ([]Change, error) {
	type result struct {
		changes []Change
		err     error
	}
	results := make([]result, len(e.steps))
	sem := make(chan struct{}, e.opts.Concurrency)
	var wg sync.WaitGroup
	for i, s := range e.steps {
		if skip, _ := e.filtered(name(s.phase)); skip {
			continue
		}
		d := s.phase.Describe()
		differ, isDiffer := capability[Differ](s.phase)
		if d.ReadOnly && (!isDiffer || e.opts.Offline) {
			continue
		}
		if e.opts.Offline {
			results[i].changes = []Change{{Phase: d.Name, Host: s.host.Name, Action: ActionRun, Summary: d.Does}}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i].err = ctx.Err()
				return
			}
			defer func() { <-sem }()
			var r result
			if isDiffer {
				r.changes, r.err = differ.Diff(ctx, s.host)
			} else {
				r.changes, r.err = e.wouldRun(ctx, s)
			}
			if r.err != nil {
				r.err = &PhaseError{Phase: d.Name, Host: s.host.Name, Err: fmt.Errorf("comparing: %w", r.err)}
			}
			for j := range r.changes {
				r.changes[j].Phase, r.changes[j].Host = d.Name, s.host.Name
			}
			results[i] = r
		}()
	}
	wg.Wait()
	var changes []Change
	var errs []error
	for _, r := range results {
		changes = append(changes, r.changes...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("interrupted: %w", err))
	}
	return changes, errors.Join(errs...)
}

// wouldRun is the change of a phase without a Differ: one "run" change
// when its Skipper says it would run (or it has none).
func (e *Engine) wouldRun(ctx context.Context, s *step) ([]Change, error) {
	if sk, ok := capability[Skipper](s.phase); ok {
		run, _, err := sk.ShouldRun(ctx, s.host)
		if err != nil || !run {
			return nil, err
		}
	}
	return []Change{{Action: ActionRun, Summary: s.phase.Describe().Does}}, nil
}

// The actions of a Change.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionRun    = "run"
	ActionDrift  = "drift"
)
