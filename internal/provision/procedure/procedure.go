package procedure

import (
	"errors"
	"fmt"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// def is one phase of a procedure: its static description and how to
// build its implementation from the procedure's dependencies. The
// descriptions alone give --help and the docs; binding checks every
// dependency a phase needs when the list is built, so a missing one is an
// error before anything runs, never a surprise halfway through.
type def[D any] struct {
	engine.Descriptor
	bind func(d D) (engine.Runner, error)
}

// describe returns the descriptions of a procedure's phases, in order.
func describe[D any](defs []def[D]) []engine.Descriptor {
	out := make([]engine.Descriptor, len(defs))
	for i, x := range defs {
		out[i] = x.Descriptor
	}
	return out
}

// bind builds every phase of a procedure; the error names each phase
// whose dependencies are missing.
func bind[D any](defs []def[D], d D) ([]engine.Phase, error) {
	out := make([]engine.Phase, 0, len(defs))
	var errs []error
	for _, x := range defs {
		impl, err := x.bind(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("phase %s: %w", x.Name, err))
			continue
		}
		out = append(out, engine.Bind(x.Descriptor, impl))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMissingDependency, err)
	}
	return out, nil
}

// ErrMissingDependency matches (errors.Is) the error of a phase list built
// without something one of its phases needs (an SSH connection, API
// access, the rendered files). It is a programming error of the caller.
var ErrMissingDependency = errors.New("a phase's dependency is missing")

// needs checks a phase's dependencies: each pair is a dependency's name
// and whether it is there.
func needs(deps ...any) error {
	var missing []error
	for i := 0; i+1 < len(deps); i += 2 {
		if ok, _ := deps[i+1].(bool); !ok {
			missing = append(missing, fmt.Errorf("needs %s", deps[i]))
		}
	}
	return errors.Join(missing...)
}
