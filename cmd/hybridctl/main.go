// Command hybridctl builds, verifies and keeps healthy hybrid Kubernetes
// clusters: a kubeadm control plane, Linux workers and Windows Server workers
// on Calico VXLAN.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hybridctl/hybridctl/internal/cli"
)

func main() {
	// The first Ctrl-C cancels the context (long commands stop cleanly and
	// record their progress); a second one exits 130 at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := cli.HandleInterrupts(context.Background(), sigs, os.Stderr, os.Exit)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
