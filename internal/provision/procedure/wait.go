package procedure

import (
	"context"
	"time"
)

// waitUntil calls read every poll until it reports done, for up to
// timeout. The deadline is checked between reads, never inside one: every
// call reads at least once (a slow first LIST under load is not "not
// ready"), and cancellation ends the wait at once. It returns nil when
// done, ctx's error when cancelled, and otherwise errWaitTimedOut with the
// last state read (what is still pending, for the caller's message).
func waitUntil(ctx context.Context, timeout, poll time.Duration, read func(ctx context.Context) (done bool, state string)) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		done, state := read(ctx)
		if done {
			return "", nil
		}
		if err := ctx.Err(); err != nil {
			return state, err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return state, errWaitTimedOut
		}
		select {
		case <-ctx.Done():
			return state, ctx.Err()
		case <-time.After(min(poll, wait)):
		}
	}
}

// errWaitTimedOut is waitUntil's timeout; callers say what they waited for.
var errWaitTimedOut = errTimedOut{}

type errTimedOut struct{}

func (errTimedOut) Error() string { return "timed out" }
