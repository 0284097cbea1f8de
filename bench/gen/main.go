// Command gen writes a synthetic hybrid cluster as manifest files, for the
// lint benchmark (and, loaded into the test API server, for doctor):
// -nodes nodes (10% Windows, half on build 20348, half on 26100) and -pods
// pods owned by ReplicaSets of Deployments and by DaemonSets, plus the
// controllers, RuntimeClasses and the guide's Calico objects. The cluster
// is correct: lint on it reports nothing at warning or above.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hybridctl/hybridctl/bench/internal/gen"
)

func main() {
	out := flag.String("o", "", "output directory (created)")
	nodes := flag.Int("nodes", 5000, "number of nodes")
	pods := flag.Int("pods", 150000, "number of pods")
	perFile := flag.Int("per-file", 10000, "objects per pods file")
	asJSON := flag.Bool("json", false, "write each file as a JSON List (kubectl get -o json style) instead of YAML")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required")
		os.Exit(2)
	}
	if err := gen.Write(*out, *nodes, *pods, *perFile); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *asJSON {
		if err := gen.ToJSON(*out); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
