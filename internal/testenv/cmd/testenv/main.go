// Command testenv is the "run" part of hack/testenv/testenv: it starts etcd
// and kube-apiserver v1.37.2, runs a command against them and stops them.
//
//	hack/testenv/testenv run [--calico] [--load DIR]... [-v] -- CMD ARGS...
package main

import (
	"context"
	"os"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

func main() {
	os.Exit(testenv.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
