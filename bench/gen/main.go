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
	style := flag.String("style", "flow", "flow: YAML documents with one-line flow collections, as hand-written manifests; block: each file one List in block style, as kubectl get -A -o yaml prints it; json: each file one JSON List, as kubectl get -A -o json prints it")
	asJSON := flag.Bool("json", false, "the same as -style json")
	flag.Parse()
	if *asJSON {
		*style = "json"
	}
	convert := map[string]func(string) error{"flow": nil, "block": gen.ToBlock, "json": gen.ToJSON}
	to, ok := convert[*style]
	if *out == "" || !ok {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required; -style is flow, block or json")
		os.Exit(2)
	}
	if err := gen.Write(*out, *nodes, *pods, *perFile); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if to != nil {
		if err := to(*out); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
