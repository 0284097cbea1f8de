package cli

import (
	"errors"
	"fmt"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// Exit codes shared by every command (design §5).
const (
	ExitOK         = 0 // success and nothing wrong
	ExitProblem    = 1 // the thing checked is wrong
	ExitUsage      = 2 // usage error
	ExitIncomplete = 3 // could not complete (unreachable API, I/O error, ...)
)

// ExitError carries an exit code with an error. Commands return it to say
// which code the process should end with; Main prints the error (unless
// Silent) and maps it to the code.
type ExitError struct {
	Code int
	Err  error
	// Silent means the command already reported the problem on its own
	// output (for example a list of findings); Main prints nothing more.
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Problem wraps err as "the thing checked is wrong" (exit 1).
func Problem(err error) error { return &ExitError{Code: ExitProblem, Err: err} }

// Incomplete wraps err as "could not complete" (exit 3).
func Incomplete(err error) error { return &ExitError{Code: ExitIncomplete, Err: err} }

// Usage wraps err as a usage error (exit 2).
func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Usagef formats a usage error (exit 2).
func Usagef(format string, a ...any) error { return Usage(fmt.Errorf(format, a...)) }

// codeOf maps an error returned by a command to an exit code.
func codeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	// A --context that is not in the kubeconfig is a name the user typed,
	// whichever code the command wrapped it in.
	var uc *kubeclient.UnknownContextError
	if errors.As(err, &uc) {
		return ExitUsage
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitIncomplete
}
