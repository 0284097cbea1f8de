package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
)

// ExitInterrupted is the exit code after an interrupt (128 + SIGINT), as
// shells report a process killed by Ctrl-C; SIGTERM gives 143.
const ExitInterrupted = 130

// annInterrupt is the annotation that marks a command whose first Ctrl-C
// stops it cleanly instead of at once: "graceful", or "graceful-with:FLAG"
// when only with that boolean flag set.
const annInterrupt = "hybridctl.dev/interrupt"

// graceful marks cmd as stopping cleanly on the first interrupt.
func graceful(cmd *cobra.Command, with string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	v := "graceful"
	if with != "" {
		v += "-with:" + with
	}
	cmd.Annotations[annInterrupt] = v
	return cmd
}

// isGraceful reports whether cmd, with its parsed flags, finishes its step
// on the first interrupt (apply, reset, writers, controllers). Read-only
// commands are not: they end at once.
func isGraceful(cmd *cobra.Command) bool {
	v := cmd.Annotations[annInterrupt]
	if v == "graceful" {
		return true
	}
	if flag, ok := strings.CutPrefix(v, "graceful-with:"); ok {
		on, err := cmd.Flags().GetBool(flag)
		return err == nil && on
	}
	return false
}

// signalCode is the exit code of a process ended by sig: 128 + its number.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return ExitInterrupted
}

// Run is main's entry point: Main with the interrupt contract. Read-only
// commands end at once on the first SIGINT or SIGTERM (exit 130 or 143);
// commands marked graceful (apply, reset, the writers, csr approve
// --watch) stop cleanly on the first and exit at once on the second.
func Run(args []string, sigs <-chan os.Signal, exit func(int), in io.Reader, out, errOut io.Writer) int {
	var gracefulNow atomic.Bool
	ctx, stop := HandleInterrupts(context.Background(), sigs, errOut, exit, gracefulNow.Load)
	defer stop()
	return runMain(ctx, args, Streams{In: in, Out: out, Err: errOut}, func(cmd *cobra.Command) {
		gracefulNow.Store(isGraceful(cmd))
	})
}

// HandleInterrupts implements the Ctrl-C contract. When graceful reports
// false (a read-only command, or before any command started), the first
// signal on sigs calls exit(130 or 143) at once. Otherwise the first signal
// cancels the returned context, so running steps stop cleanly and progress
// is recorded, and a second one calls exit at once. exit is a parameter so
// that os.Exit stays in main. stop ends the watcher (call it before exiting
// normally).
func HandleInterrupts(parent context.Context, sigs <-chan os.Signal, errOut io.Writer, exit func(int), graceful func() bool) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		if graceful == nil || !graceful() {
			fmt.Fprintln(errOut, "\nInterrupted.")
			exit(signalCode(sig))
			return
		}
		fmt.Fprintln(errOut, "\nInterrupted: stopping cleanly (finished steps are recorded). Press Ctrl-C again to exit immediately.")
		cancel()
		select {
		case sig = <-sigs:
			fmt.Fprintln(errOut, "Interrupted twice: exiting now; re-run to resume.")
			exit(signalCode(sig))
		case <-done:
		}
	}()
	var once bool
	return ctx, func() {
		if !once {
			once = true
			close(done)
			cancel()
		}
	}
}
