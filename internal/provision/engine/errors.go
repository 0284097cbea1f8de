package engine

import (
	"errors"
	"fmt"
)

// ErrUnknownPhase is wrapped by errors about --skip-phases or --only naming
// a phase that is not in the list (a usage error for the CLI).
var ErrUnknownPhase = errors.New("unknown phase")

// ErrUnknownHost is wrapped by errors about Options.Hosts (reset --node)
// naming a host that is not in the inventory: a usage error.
var ErrUnknownHost = errors.New("unknown node")

// PhaseError is the failure of one phase on one host. The engine returns
// all of them joined with errors.Join, so callers can list failures per host
// (errors.As on each) instead of reading one flattened message.
type PhaseError struct {
	Phase string
	Host  string
	Err   error
}

func (e *PhaseError) Error() string {
	return fmt.Sprintf("phase %s on %s: %v", e.Phase, e.Host, e.Err)
}

func (e *PhaseError) Unwrap() error { return e.Err }

// OutputError is implemented by errors that carry the output of a failed
// command (transport.CommandError does). The output is shown only with the
// failure, never on success.
type OutputError interface {
	error
	CommandOutput() string
}

// CommandOutput returns the output kept by the first OutputError in err's
// chain, or "".
func CommandOutput(err error) string {
	var oe OutputError
	if errors.As(err, &oe) {
		return oe.CommandOutput()
	}
	return ""
}

// PhaseErrors returns the PhaseErrors in err (as returned by Engine.Run).
func PhaseErrors(err error) []*PhaseError {
	var out []*PhaseError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if pe, ok := e.(*PhaseError); ok {
			out = append(out, pe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
