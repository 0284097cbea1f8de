// Command hybridctl builds, verifies and keeps healthy hybrid Kubernetes
// clusters: a kubeadm control plane, Linux workers and Windows Server workers
// on Calico VXLAN.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hybridctl/hybridctl/internal/cli"
)

func main() {
	// Read-only commands end at once on Ctrl-C or SIGTERM (130/143); apply,
	// reset and the other writers stop cleanly on the first and exit on the
	// second.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(cli.Run(os.Args[1:], sigs, os.Exit, os.Stdin, os.Stdout, os.Stderr))
}
