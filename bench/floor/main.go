// Command floor measures the floors doctor is compared with, against the
// cluster in $KUBECONFIG: a client-go paginated LIST (limit 500) of all
// pods and nodes that drops the items ("paginate"), one LIST of each
// served from the watch cache (resourceVersion=0, "cache"), and the same
// two LISTs at once in protobuf, their bytes read and thrown away ("raw":
// the least any auditor of the cluster must do). It prints the time and
// the object count (bytes for raw); run it under /usr/bin/time for peak
// RSS. BenchmarkDoctor runs -mode raw beside the hybridctl binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hybridctl/hybridctl/bench/internal/floor"
)

func main() {
	mode := flag.String("mode", "paginate", "paginate (limit 500, items dropped), cache (resourceVersion=0, one response held) or raw (resourceVersion=0, protobuf, pods and nodes at once, bytes thrown away)")
	flag.Parse()
	if err := run(context.Background(), *mode); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, mode string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	n := 0
	switch mode {
	case "paginate":
		for _, list := range []func(metav1.ListOptions) (int, string, error){
			func(o metav1.ListOptions) (int, string, error) {
				l, err := cs.CoreV1().Pods("").List(ctx, o)
				if err != nil {
					return 0, "", err
				}
				return len(l.Items), l.Continue, nil
			},
			func(o metav1.ListOptions) (int, string, error) {
				l, err := cs.CoreV1().Nodes().List(ctx, o)
				if err != nil {
					return 0, "", err
				}
				return len(l.Items), l.Continue, nil
			},
		} {
			cont := ""
			for {
				k, c, err := list(metav1.ListOptions{Limit: 500, Continue: cont})
				if err != nil {
					return err
				}
				n += k
				if c == "" {
					break
				}
				cont = c
			}
		}
	case "cache":
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		n = len(pods.Items) + len(nodes.Items)
	case "raw":
		bytes, err := floor.RawLists(ctx, cs.CoreV1().RESTClient())
		if err != nil {
			return err
		}
		fmt.Printf("floor raw: %d bytes in %.2fs\n", bytes, time.Since(start).Seconds())
		return nil
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	fmt.Printf("floor %s: %d objects in %.2fs\n", mode, n, time.Since(start).Seconds())
	return nil
}
