package engine

import (
	"context"
	"fmt"
)

// Func is a phase built from functions; the unset capabilities are absent.
// It is the simplest way to write a phase and what the tests use.
type Func struct {
	Name  string
	Desc  string
	On    func(hosts []Host) []Host // nil: every node
	After []string
	// ReadOnly is the Descriptor's: diff does not count the phase.
	ReadOnly  bool
	Check     func(ctx context.Context, h Host) (bool, string, error)
	DryRunFn  func(ctx context.Context, h Host) ([]string, error)
	RunOnHost func(ctx context.Context, h Host) error
	// MaxParallel, when positive, is the phase's Limiter.
	MaxParallel int
}

// Describe implements Phase.
func (f *Func) Describe() Descriptor {
	return Descriptor{Name: f.Name, Targets: f.On, After: f.After, Does: f.Desc, ReadOnly: f.ReadOnly}
}

// Run implements Phase.
func (f *Func) Run(ctx context.Context, h Host) error {
	if f.RunOnHost == nil {
		return fmt.Errorf("phase %s has no implementation", f.Name)
	}
	return f.RunOnHost(ctx, h)
}

// ShouldRun implements Skipper; without Check the phase always runs.
func (f *Func) ShouldRun(ctx context.Context, h Host) (bool, string, error) {
	if f.Check == nil {
		return true, "", nil
	}
	return f.Check(ctx, h)
}

// DryRun implements DryRunner; without DryRunFn it says so.
func (f *Func) DryRun(ctx context.Context, h Host) ([]string, error) {
	if f.DryRunFn == nil {
		return []string{"(" + f.Name + ": no dry-run description)"}, nil
	}
	return f.DryRunFn(ctx, h)
}

// Limit implements Limiter (0: no limit of its own).
func (f *Func) Limit() int { return f.MaxParallel }
