package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/suggest"
)

// DidYouMean is `; did you mean "NAME"?` for the name among known closest
// to a misspelled one, or "".
func DidYouMean(name string, known []string) string {
	if s, ok := suggest.Closest(name, known); ok {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// DefaultConcurrency is the number of steps that may run at once when
// Options.Concurrency is not set.
const DefaultConcurrency = 10

// Options control one engine run.
type Options struct {
	// Cluster names the cluster in the state file.
	Cluster string
	// StatePath is the state file; "" keeps no state (every step is run,
	// subject to the phases' own checks).
	StatePath string
	// DryRun reports what every step would do and changes nothing. Phases'
	// Skipper checks still run (they may connect to read state) unless
	// Offline is set too.
	DryRun bool
	// Offline (with DryRun) connects to nothing and ignores the state file:
	// the procedure is shown as for fresh machines.
	Offline bool
	// Skip lists phase titles not to run (--skip-phases).
	Skip []string
	// Only, when set, runs just these phases (--only).
	Only []string
	// Hosts, when set, limits the run to these hosts (by name); the cluster
	// pseudo-host is included only if named.
	Hosts []string
	// Concurrency caps the steps running at once (default 10).
	Concurrency int
	// Reporter receives progress events; nil discards them.
	Reporter Reporter
	// Redactor scrubs the secrets it knows from every event; nil knows
	// none (redact's patterns are applied to host output either way).
	Redactor *Redactor
}

// Engine runs an ordered list of phases over hosts.
type Engine struct {
	phases []Phase
	hosts  []Host
	opts   Options
	steps  []*step
}

type stepStatus int

const (
	statusPending stepStatus = iota
	statusRunning
	statusDone     // run now
	statusSkipped  // filtered out, recorded earlier, or already in place
	statusFailed   // error
	statusBlocked  // a dependency did not finish
	statusCanceled // never started: the run was interrupted
)

type step struct {
	idx    int
	phase  Phase
	host   Host
	deps   []int
	status stepStatus
}

var titleRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// New checks the phase list and hosts and returns an engine. Errors name
// the offending phase, host or option; unknown names in Skip or Only wrap
// ErrUnknownPhase.
func New(phases []Phase, hosts []Host, opts Options) (*Engine, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Reporter == nil {
		opts.Reporter = ReporterFunc(func(Event) {})
	}
	e := &Engine{phases: phases, hosts: hosts, opts: opts}
	var errs []error
	seenHost := map[string]bool{}
	for _, h := range hosts {
		switch {
		case h.Name == "":
			errs = append(errs, errors.New("a host has no name"))
		case h.Name == ClusterHostName:
			errs = append(errs, fmt.Errorf("host name %q is reserved for cluster-wide phases", h.Name))
		case seenHost[h.Name]:
			errs = append(errs, fmt.Errorf("host %q is listed twice", h.Name))
		}
		seenHost[h.Name] = true
	}
	index := map[string]int{}
	for i, p := range phases {
		d := p.Describe()
		t := d.Name
		if !titleRE.MatchString(t) {
			errs = append(errs, fmt.Errorf("phase %d title %q is not kebab-case", i, t))
		}
		if _, dup := index[t]; dup {
			errs = append(errs, fmt.Errorf("phase %q is listed twice", t))
		}
		for _, dep := range d.After {
			if j, ok := index[dep]; !ok || j >= i {
				errs = append(errs, fmt.Errorf("phase %q waits for %q, which is not an earlier phase", t, dep))
			}
		}
		index[t] = i
	}
	for _, list := range []struct {
		flag  string
		names []string
	}{{"--skip-phases", opts.Skip}, {"--only", opts.Only}} {
		for _, n := range list.names {
			if _, ok := index[n]; !ok {
				errs = append(errs, fmt.Errorf("%s: %w %q (phases: %s)%s", list.flag, ErrUnknownPhase, n, strings.Join(e.Titles(), ", "), DidYouMean(n, e.Titles())))
			}
		}
	}
	var hostNames []string
	for _, h := range hosts {
		hostNames = append(hostNames, h.Name)
	}
	for _, n := range opts.Hosts {
		if !seenHost[n] && n != ClusterHostName {
			errs = append(errs, fmt.Errorf("%w %q (the spec's nodes: %s)%s", ErrUnknownHost, n, strings.Join(hostNames, ", "), DidYouMean(n, hostNames)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	e.plan()
	return e, nil
}

// Titles returns the phase titles in order.
func (e *Engine) Titles() []string {
	out := make([]string, len(e.phases))
	for i, p := range e.phases {
		out[i] = p.Describe().Name
	}
	return out
}

// targetsOf is the hosts p runs on: its Descriptor's selector, narrowed
// by its implementation when it is a Narrower.
func targetsOf(p Phase, hosts []Host) []Host {
	out := p.Describe().targets(hosts)
	if n, ok := capability[Narrower](p); ok {
		out = n.Narrow(out)
	}
	return out
}

// name is a phase's title.
func name(p Phase) string { return p.Describe().Name }

// plan builds the steps and their dependencies: the previous step on the
// same host, and every step of each phase named by Waits. Dependencies
// always have lower indices, so index order is a valid execution order.
func (e *Engine) plan() {
	last := map[string]int{}
	byPhase := map[string][]int{}
	for _, p := range e.phases {
		for _, h := range targetsOf(p, e.hosts) {
			if len(e.opts.Hosts) > 0 && !slices.Contains(e.opts.Hosts, h.Name) {
				continue
			}
			s := &step{idx: len(e.steps), phase: p, host: h}
			if j, ok := last[h.Name]; ok {
				s.deps = append(s.deps, j)
			}
			for _, dep := range p.Describe().After {
				s.deps = append(s.deps, byPhase[dep]...)
			}
			last[h.Name] = s.idx
			byPhase[name(p)] = append(byPhase[name(p)], s.idx)
			e.steps = append(e.steps, s)
		}
	}
}

func (e *Engine) filtered(title string) (bool, string) {
	if slices.Contains(e.opts.Skip, title) {
		return true, "--skip-phases"
	}
	if len(e.opts.Only) > 0 && !slices.Contains(e.opts.Only, title) {
		return true, "not in --only"
	}
	return false, ""
}

// Run executes the phases. It returns nil when every step finished or was
// skipped; otherwise the PhaseErrors of the failed steps joined with
// errors.Join, plus the context's error when the run was interrupted.
// Finished steps are recorded in the state file as they finish, so a later
// Run resumes after the last finished step of every host.
func (e *Engine) Run(ctx context.Context) error {
	start := time.Now()
	for _, s := range e.steps {
		s.status = statusPending
	}
	state := NewState(e.opts.Cluster)
	if e.opts.StatePath != "" && !(e.opts.DryRun && e.opts.Offline) {
		var err error
		if state, err = LoadState(e.opts.StatePath, e.opts.Cluster); err != nil {
			return err
		}
	}
	var err error
	if e.opts.DryRun {
		err = e.dryRun(ctx, start, state)
	} else {
		err = e.run(ctx, start, state)
	}
	e.emit(start, Event{Type: EventSummary, Summary: e.summary(start)})
	return err
}

func (e *Engine) summary(start time.Time) *Summary {
	s := &Summary{ElapsedMS: time.Since(start).Milliseconds(), DryRun: e.opts.DryRun}
	for _, st := range e.steps {
		switch st.status {
		case statusDone:
			if e.opts.DryRun {
				s.WouldRun++
			} else {
				s.Done++
			}
		case statusSkipped:
			s.Skipped++
		case statusFailed:
			s.Failed++
		case statusBlocked:
			s.Blocked++
		case statusPending, statusCanceled:
			s.NotRun++
		}
	}
	return s
}

func (e *Engine) emit(start time.Time, ev Event) {
	ev.Time = time.Now()
	ev.SinceStartMS = ev.Time.Sub(start).Milliseconds()
	e.opts.Reporter.Report(e.opts.Redactor.redactEvent(ev))
}

// preSkip decides, without touching hosts, whether a step is skipped.
func (e *Engine) preSkip(s *step, state *State) (bool, string) {
	if skip, why := e.filtered(name(s.phase)); skip {
		return true, why
	}
	if state.Done(s.host.Name, name(s.phase)) {
		return true, "finished in an earlier run (state file)"
	}
	return false, ""
}

func (e *Engine) dryRun(ctx context.Context, start time.Time, state *State) error {
	var errs []error
	for _, s := range e.steps {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, fmt.Errorf("dry-run interrupted: %w", err))...)
		}
		ev := Event{Phase: name(s.phase), Host: s.host.Name}
		if skip, why := e.preSkip(s, state); skip {
			s.status = statusSkipped
			if filtered, _ := e.filtered(name(s.phase)); !filtered {
				ev.Type, ev.Reason = EventSkip, why
				e.emit(start, ev)
			}
			continue
		}
		if sk, ok := capability[Skipper](s.phase); ok && !e.opts.Offline {
			run, why, err := sk.ShouldRun(ctx, s.host)
			if err != nil {
				s.status = statusFailed
				perr := &PhaseError{Phase: name(s.phase), Host: s.host.Name, Err: fmt.Errorf("checking state: %w", err)}
				errs = append(errs, perr)
				ev.Type, ev.Error, ev.Output = EventFail, perr.Error(), CommandOutput(err)
				e.emit(start, ev)
				continue
			}
			if !run {
				s.status = statusSkipped
				ev.Type, ev.Reason = EventSkip, why
				e.emit(start, ev)
				continue
			}
		}
		ev.Type = EventDryRun
		if d, ok := capability[DryRunner](s.phase); ok {
			acts, err := d.DryRun(ctx, s.host)
			if err != nil {
				s.status = statusFailed
				perr := &PhaseError{Phase: name(s.phase), Host: s.host.Name, Err: fmt.Errorf("describing: %w", err)}
				errs = append(errs, perr)
				ev.Type, ev.Error = EventFail, perr.Error()
				e.emit(start, ev)
				continue
			}
			ev.Actions = acts
		} else {
			ev.Actions = []string{"run phase " + name(s.phase)}
		}
		s.status = statusDone
		e.emit(start, ev)
	}
	return errors.Join(errs...)
}

type stepResult struct {
	idx     int
	status  stepStatus
	reason  string
	elapsed time.Duration
	err     error
}

func (e *Engine) run(ctx context.Context, start time.Time, state *State) error {
	var errs []error
	results := make(chan stepResult)
	running := 0
	perPhase := map[string]int{} // running steps of each phase, for Limiters
	stateBroken := false
	for {
		// One pass in index order launches every ready step (dependencies
		// always come first, so blocks propagate in the same pass).
		for _, s := range e.steps {
			if s.status != statusPending {
				continue
			}
			if skip, why := e.preSkip(s, state); skip {
				s.status = statusSkipped
				if filtered, _ := e.filtered(name(s.phase)); !filtered {
					// Steps left out by --only/--skip-phases are counted
					// in the summary, not listed one by one.
					e.emit(start, Event{Type: EventSkip, Phase: name(s.phase), Host: s.host.Name, Reason: why})
				}
				continue
			}
			ready, blocker := e.depsState(s)
			if blocker != nil {
				s.status = statusBlocked
				e.emit(start, Event{Type: EventBlocked, Phase: name(s.phase), Host: s.host.Name,
					Reason: fmt.Sprintf("%s did not finish on %s", name(blocker.phase), blocker.host.Name)})
				continue
			}
			if !ready || running >= e.opts.Concurrency || ctx.Err() != nil || stateBroken {
				continue
			}
			if l, ok := capability[Limiter](s.phase); ok && l.Limit() > 0 && perPhase[name(s.phase)] >= l.Limit() {
				continue
			}
			s.status = statusRunning
			running++
			perPhase[name(s.phase)]++
			go func(s *step) { results <- e.runStep(ctx, start, s) }(s)
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		s := e.steps[r.idx]
		perPhase[name(s.phase)]--
		s.status = r.status
		ev := Event{Phase: name(s.phase), Host: s.host.Name, ElapsedMS: r.elapsed.Milliseconds()}
		switch r.status {
		case statusDone, statusSkipped:
			state.Record(s.host.Name, name(s.phase), PhaseRecord{FinishedAt: time.Now().UTC(), AlreadyInPlace: r.status == statusSkipped})
			if e.opts.StatePath != "" && !stateBroken {
				// Steps that finish while the run is being cancelled are still
				// recorded: that is what makes Ctrl-C resumable.
				if err := state.Save(context.WithoutCancel(ctx), e.opts.StatePath); err != nil {
					stateBroken = true // finish what runs, start nothing more
					errs = append(errs, fmt.Errorf("recording progress: %w", err))
				}
			}
			if r.status == statusDone {
				ev.Type = EventDone
			} else {
				ev.Type, ev.Reason = EventSkip, r.reason
			}
		case statusFailed:
			perr := &PhaseError{Phase: name(s.phase), Host: s.host.Name, Err: r.err}
			errs = append(errs, perr)
			ev.Type, ev.Error, ev.Output = EventFail, perr.Error(), CommandOutput(r.err)
		}
		e.emit(start, ev)
	}
	if err := ctx.Err(); err != nil {
		for _, s := range e.steps {
			if s.status == statusPending {
				s.status = statusCanceled
			}
		}
		errs = append(errs, fmt.Errorf("interrupted: %w", err))
	}
	return errors.Join(errs...)
}

// depsState reports whether every dependency of s finished, or the first
// dependency that never will.
func (e *Engine) depsState(s *step) (ready bool, blocker *step) {
	ready = true
	for _, d := range s.deps {
		switch dep := e.steps[d]; dep.status {
		case statusDone, statusSkipped:
		case statusFailed, statusBlocked, statusCanceled:
			return false, dep
		default:
			ready = false
		}
	}
	return ready, nil
}

// runStep checks and runs one step; it is the only code that runs in
// parallel, and it touches no engine state but the reporter.
func (e *Engine) runStep(ctx context.Context, start time.Time, s *step) stepResult {
	t0 := time.Now()
	res := stepResult{idx: s.idx}
	if sk, ok := capability[Skipper](s.phase); ok {
		run, why, err := sk.ShouldRun(ctx, s.host)
		if err != nil {
			res.status, res.err, res.elapsed = statusFailed, fmt.Errorf("checking state: %w", err), time.Since(t0)
			return res
		}
		if !run {
			if why == "" {
				why = "already in place"
			}
			res.status, res.reason, res.elapsed = statusSkipped, why, time.Since(t0)
			return res
		}
	}
	e.emit(start, Event{Type: EventStart, Phase: name(s.phase), Host: s.host.Name})
	ctx = context.WithValue(ctx, warnKey{}, func(msg string) {
		e.emit(start, Event{Type: EventWarning, Phase: name(s.phase), Host: s.host.Name, Reason: msg})
	})
	ctx = context.WithValue(ctx, progressKey{}, func(msg string) {
		e.emit(start, Event{Type: EventProgress, Phase: name(s.phase), Host: s.host.Name, Reason: msg})
	})
	err := s.phase.Run(ctx, s.host)
	res.elapsed = time.Since(t0)
	if err == nil && ctx.Err() != nil {
		// Run returned nil after cancellation; trust it finished.
		err = nil
	}
	if err != nil {
		res.status, res.err = statusFailed, err
		return res
	}
	res.status = statusDone
	return res
}

type warnKey struct{}

type progressKey struct{}

// Warn reports a warning from a running phase (a preflight check that is
// not fatal, say) as an event of its step. Outside the engine it does
// nothing.
func Warn(ctx context.Context, format string, args ...any) {
	if f, ok := ctx.Value(warnKey{}).(func(string)); ok {
		f(fmt.Sprintf(format, args...))
	}
}

// Progress reports what a running phase is doing or waiting for (a wait
// that may take minutes, say) as an event of its step: not a warning,
// nothing to act on. Outside the engine it does nothing.
func Progress(ctx context.Context, format string, args ...any) {
	if f, ok := ctx.Value(progressKey{}).(func(string)); ok {
		f(fmt.Sprintf(format, args...))
	}
}
