// Command lab-artifacts runs the lab's artifact commands (build, list,
// path, images, podnet-manifest) on their own; hack/lab/lab offers the same
// commands. See docs/e2e.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hybridctl/hybridctl/hack/lab/artifacts"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := artifacts.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var u artifacts.UsageError
	switch {
	case err == nil:
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(3)
	}
}
