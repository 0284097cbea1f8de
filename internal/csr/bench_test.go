package csr

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// BenchmarkWatchApproval measures, against the real API server, the time
// from a kubelet-serving CSR's creation to its approval by the --watch
// controller, over 200 CSRs per iteration created by 4 nodes with their own
// credentials, one at a time (sequential) or 16 at a time (burst-16), with 2
// and 8 workers. It reports p50, p99 and max in milliseconds, and the p99 of
// the create calls themselves (the API server's share).
//
//	go test ./internal/csr -run '^$' -bench WatchApproval -benchtime 1x
func BenchmarkWatchApproval(b *testing.B) {
	env := testenv.Get(b)
	ctx := b.Context()
	admin := clientFor(b, env.AdminConfig())
	const nodes, perIter = 4, 200
	nodeClients := make([]kubernetes.Interface, nodes)
	for i := range nodes {
		name := fmt.Sprintf("bench-node-%d", i)
		if _, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			registerNode(b, ctx, admin, name, hostname(name), internalIP(fmt.Sprintf("10.20.0.%d", 10+i)))
		}
		cfg, err := env.UserConfig(NodeUserPrefix+name, NodesGroup)
		if err != nil {
			b.Fatal(err)
		}
		// The creators must not wait on client-side throttling: that
		// would count as approval latency.
		cfg.QPS, cfg.Burst = 1000, 1000
		nodeClients[i] = clientFor(b, cfg)
	}
	approverCfg := env.AdminConfig()
	approverCfg.QPS, approverCfg.Burst = 200, 400 // as the CLI sets for --watch

	type mode struct {
		name              string
		workers, creators int
	}
	for _, mode := range []mode{
		{"workers-2/sequential", 2, 1}, {"workers-2/burst-16", 2, 16},
		{"workers-8/sequential", 8, 1}, {"workers-8/burst-16", 8, 16},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var mu sync.Mutex
			created := map[string]time.Time{}
			approved := map[string]time.Time{}
			done := make(chan struct{}, perIter)
			d := startController(b, clientFor(b, approverCfg), ControllerOptions{Workers: mode.workers})
			var lat, createLat []time.Duration
			for iter := 0; iter < b.N; iter++ {
				b.StopTimer()
				type job struct {
					name   string
					node   int
					object *certv1.CertificateSigningRequest
				}
				jobs := make([]job, perIter)
				for j := range jobs {
					n := j % nodes
					name := fmt.Sprintf("bench-w%d-c%d-%d-%d-%d", mode.workers, mode.creators, time.Now().UnixNano()%1e9, iter, j)
					jobs[j] = job{name, n, corpusCase{req: nodeReq(fmt.Sprintf("bench-node-%d", n), fmt.Sprintf("10.20.0.%d", 10+n))}.object(b, name)}
				}
				want := map[string]bool{}
				for _, j := range jobs {
					want[j.name] = true
				}
				// Observe approvals through the controller's own hook.
				d.mu.Lock()
				d.seen = map[string][]Decision{}
				d.mu.Unlock()
				stop := make(chan struct{})
				go func() {
					for {
						select {
						case o := <-d.ch:
							if o.Decision == Approve && want[o.Name] {
								mu.Lock()
								approved[o.Name] = time.Now()
								mu.Unlock()
								done <- struct{}{}
							}
						case <-stop:
							return
						}
					}
				}()
				b.StartTimer()
				var wg sync.WaitGroup
				ch := make(chan job)
				for range mode.creators {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := range ch {
							start := time.Now()
							mu.Lock()
							created[j.name] = start
							mu.Unlock()
							if _, err := nodeClients[j.node].CertificatesV1().CertificateSigningRequests().Create(ctx, j.object, metav1.CreateOptions{}); err != nil {
								b.Errorf("creating %s: %v", j.name, err)
							}
							mu.Lock()
							createLat = append(createLat, time.Since(start))
							mu.Unlock()
						}
					}()
				}
				for _, j := range jobs {
					ch <- j
				}
				close(ch)
				wg.Wait()
				timeout := time.After(2 * time.Minute)
				for range perIter {
					select {
					case <-done:
					case <-timeout:
						b.Fatalf("not all %d CSRs approved within 2 minutes", perIter)
					}
				}
				b.StopTimer()
				close(stop)
				mu.Lock()
				for _, j := range jobs {
					lat = append(lat, approved[j.name].Sub(created[j.name]))
				}
				mu.Unlock()
			}
			slices.Sort(lat)
			slices.Sort(createLat)
			pct := func(l []time.Duration, p float64) float64 {
				return float64(l[int(p*float64(len(l)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(lat, 0.50), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(pct(lat, 1), "max-ms")
			// How long the API server took to accept the CSRs: the part of
			// the latency that is not the approver's.
			b.ReportMetric(pct(createLat, 0.99), "create-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
