package kubeconfig

import "errors"

// Kind classifies an error so that callers (the CLI) can map it to an exit
// code without parsing messages.
type Kind int

const (
	// KindIO means the operation could not complete: a file could not be
	// read or written, or the lock could not be taken in time.
	KindIO Kind = iota
	// KindConflict means a name in the target is already used by an entry
	// with different content and --overwrite was not given.
	KindConflict
	// KindVerify means --verify could not reach the API server with the new
	// credentials, or the server's certificate is not signed by the imported CA.
	KindVerify
	// KindInvalid means a kubeconfig (the source or the target) is not valid:
	// it does not parse, or the selected entries are incomplete or inconsistent.
	KindInvalid
	// KindUsage means an argument is wrong: a bad --name, an unknown
	// --source-context, a context to remove that does not exist.
	KindUsage
	// KindUnreachable means --verify got no answer from the API server:
	// the connection was refused or reset, the name did not resolve, or
	// nothing answered in time. What the server is cannot be judged.
	KindUnreachable
)

func (k Kind) String() string {
	switch k {
	case KindConflict:
		return "conflict"
	case KindVerify:
		return "verify"
	case KindInvalid:
		return "invalid"
	case KindUsage:
		return "usage"
	case KindUnreachable:
		return "unreachable"
	default:
		return "io"
	}
}

// Error is the error type every exported function of this package returns.
// Its message never contains key material.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	if e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err; errors not from this package are KindIO.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindIO
}

func newErr(k Kind, msg string, err error) *Error { return &Error{Kind: k, Msg: msg, Err: err} }
