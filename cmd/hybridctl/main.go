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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
