package inventory

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// BenchmarkDiscover500Nodes measures the API side of diff and apply's
// membership discovery against the test API server holding 500 Nodes, all
// of them in the spec: Discover (the server's version, the Nodes 500 at a
// time, the classification of every spec node) beside its floor, one plain
// LIST of the Nodes with client-go, in the same run and interleaved (one
// of each per iteration). It reports each one's median in milliseconds and
// x-list, Discover's median over the LIST's: 1 is the floor.
//
//	go test -run XXX -bench Discover500Nodes -benchtime 20x ./internal/provision/inventory
func BenchmarkDiscover500Nodes(b *testing.B) {
	env := testenv.StartT(b, testenv.Options{})
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const total = 500
	var hosts []engine.Host
	for i := range total {
		name, ip := fmt.Sprintf("n%03d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
		n := node(name, ip)
		n.Labels = map[string]string{"kubernetes.io/os": "linux"}
		created, err := cs.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		hosts = append(hosts, engine.Host{Name: name, Address: ip, OS: engine.Linux, Role: engine.RoleWorker})
	}
	cfg := func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }
	var discover, list []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		inv, err := Discover(ctx, Options{Hosts: hosts, RESTConfig: cfg})
		discover = append(discover, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		members := 0
		for _, n := range inv.Nodes {
			if n.Status == StatusMember {
				members++
			}
		}
		if members != total {
			b.Fatalf("%d members of %d", members, total)
		}
		start = time.Now()
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		list = append(list, time.Since(start))
		if err != nil || len(l.Items) != total {
			b.Fatalf("list: %v", err)
		}
	}
	b.StopTimer()
	d, l := medianMS(discover), medianMS(list)
	b.ReportMetric(d, "discover-ms")
	b.ReportMetric(l, "list-ms")
	b.ReportMetric(d/l, "x-list")
}

func medianMS(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}
