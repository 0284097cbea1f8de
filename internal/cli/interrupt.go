package cli

import (
	"context"
	"fmt"
	"io"
	"os"
)

// ExitInterrupted is the exit code after a second interrupt (128 + SIGINT),
// as shells report a process killed by Ctrl-C.
const ExitInterrupted = 130

// HandleInterrupts implements the Ctrl-C contract of long-running commands
// (apply, reset): the first signal on sigs cancels the returned context, so
// running steps stop cleanly and progress is recorded; a second one calls
// exit(130) at once. main wires it as:
//
//	sigs := make(chan os.Signal, 2)
//	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
//	ctx, stop := cli.HandleInterrupts(context.Background(), sigs, os.Stderr, os.Exit)
//	code := cli.Main(ctx, ...)
//	stop()
//	os.Exit(code)
//
// exit is a parameter so that os.Exit stays in main. stop ends the watcher
// (call it before exiting normally).
func HandleInterrupts(parent context.Context, sigs <-chan os.Signal, errOut io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(errOut, "\nInterrupted: stopping cleanly (finished steps are recorded). Press Ctrl-C again to exit immediately.")
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(errOut, "Interrupted twice: exiting now; re-run to resume.")
			exit(ExitInterrupted)
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
