package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// DefaultReadTimeout bounds a whole read-only command that talks to the API
// (doctor, csr approve without --watch) unless --timeout says otherwise.
const DefaultReadTimeout = 5 * time.Minute

// addTimeout registers --timeout, the deadline of the whole command.
func addTimeout(cmd *cobra.Command, d *time.Duration) {
	cmd.Flags().DurationVar(d, "timeout", DefaultReadTimeout, "give up when the whole command has not finished by then (0: no limit; each request also has --request-timeout)")
}

// withTimeout bounds ctx by d (0: unbounded).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// apiFailure turns an error from talking to the API into the message users
// need: a request without an answer names the server and the deadline; the
// command's own deadline names --timeout. Both are exit 3.
func apiFailure(ctx context.Context, what string, timeout time.Duration, err error) error {
	var te *kubeclient.TimeoutError
	switch {
	case errors.As(err, &te):
		return Incomplete(fmt.Errorf("%w (--request-timeout)", te))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Incomplete(fmt.Errorf("%s did not finish within %s (--timeout): %w", what, timeout, err))
	}
	return Incomplete(err)
}
