package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// bigPlan is the lab plan with n nodes (a tenth of them Windows, on two
// builds), built by hand: the spec's own limits are not under test.
func bigPlan(b testing.TB, n int) *plan.Plan {
	p := labPlan(b)
	var linux, win plan.Node
	for _, nd := range p.Nodes {
		if nd.IsWindows() {
			win = nd
		} else if !nd.IsControlPlane() {
			linux = nd
		}
	}
	nodes := []plan.Node{p.Nodes[0]}
	for i := 1; i < n; i++ {
		nd := linux
		if i%10 == 0 {
			nd = win
		}
		nd.Name = fmt.Sprintf("node-%04d", i)
		nd.FQDN = nd.Name + ".example.com"
		nd.Address = fmt.Sprintf("10.%d.%d.%d", i/65536, (i/256)%256, i%256)
		nodes = append(nodes, nd)
	}
	p.Nodes = nodes
	return p
}

// BenchmarkRender1000Nodes: the target is under 2 s.
func BenchmarkRender1000Nodes(b *testing.B) {
	p := bigPlan(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		files, err := Render(p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(files) < 2000 {
			b.Fatalf("%d files", len(files))
		}
	}
}

// BenchmarkRenderWrite1000Nodes is `hybridctl render` for 1,000 nodes:
// Each into WriteEach (every file written and fsynced as it is rendered,
// every directory fsynced, then one rename). Beside it, in the same run,
// on the same files:
//
//   - sequential: each file created, written and fsynced one after the
//     other, then each directory fsynced (what WriteDir did before);
//   - nosync: the files created and written without any fsync, the floor
//     for making ~2,200 files at all.
//
// It reports render-s (the target: at most 1 s), cpu-s (the
// process's CPU time for it, steadier than wall time on a loaded machine)
// and the ratios
// x-sequential (below 1: faster than writing one by one) and x-nosync
// (the cost of durability). Run:
//
//	go test -run '^$' -bench RenderWrite -benchtime 5x ./internal/render/
func BenchmarkRenderWrite1000Nodes(b *testing.B) {
	p := bigPlan(b, 1000)
	files, err := Render(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	n := 0
	next := func() string { n++; return filepath.Join(root, fmt.Sprint(n)) }
	var ours, seq, nosync, cpu time.Duration
	for b.Loop() {
		t, c := time.Now(), cpuTime()
		if _, err := WriteEach(context.Background(), next(), false, func(emit func(File) error) error { return Each(p, Options{}, emit) }); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t)
		cpu += cpuTime() - c

		t = time.Now()
		if err := writeSequential(next(), files, true); err != nil {
			b.Fatal(err)
		}
		seq += time.Since(t)

		t = time.Now()
		if err := writeSequential(next(), files, false); err != nil {
			b.Fatal(err)
		}
		nosync += time.Since(t)
	}
	b.ReportMetric(ours.Seconds()/float64(b.N), "render-s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(float64(len(files)), "files")
	b.ReportMetric(ours.Seconds()/seq.Seconds(), "x-sequential")
	b.ReportMetric(ours.Seconds()/nosync.Seconds(), "x-nosync")
}

// writeSequential writes files under dir one by one, each fsynced when
// sync, then fsyncs each directory once.
func writeSequential(dir string, files []File, sync bool) error {
	dirs := map[string]bool{dir: true}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := fh.Write(f.Data); err != nil {
			fh.Close()
			return err
		}
		if sync {
			if err := fh.Sync(); err != nil {
				fh.Close()
				return err
			}
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	if sync {
		for d := range dirs {
			if err := syncDir(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkRenderMemory is `hybridctl render` (Each into WriteEach: every
// file to disk as it is rendered) of 1, 1,000 and 5,000 nodes, with the
// peak of the heap above what it held before (the plan already built)
// sampled every millisecond, printed per node against the 1-node render's
// peak measured in the same run; beside it, for 5,000 nodes, the same
// files rendered in memory first (Render, then WriteDir: what render did
// before it streamed), whose peak grows with every node's files. It
// reports peak-MB-N for each size, x1node-N (the N-node peak over the
// 1-node peak: streaming keeps it a small constant, not N), per-node-vs-
// 1node-N (the peak per node over the 1-node peak: about 1 when memory
// holds every node's files, far below when it holds a few), and
// x-in-memory-5000 (the streamed peak over the in-memory peak). Run:
//
//	go test -run '^$' -bench RenderMemory -benchtime 1x ./internal/render/
func BenchmarkRenderMemory(b *testing.B) {
	root := b.TempDir()
	n := 0
	next := func() string { n++; return filepath.Join(root, fmt.Sprint(n)) }
	streamed := func(p *plan.Plan) error {
		_, err := WriteEach(context.Background(), next(), false, func(emit func(File) error) error { return Each(p, Options{}, emit) })
		return err
	}
	inMemory := func(p *plan.Plan) error {
		files, err := Render(p, Options{})
		if err != nil {
			return err
		}
		return WriteDir(context.Background(), next(), files, false)
	}
	sizes := []int{1, 1000, 5000}
	plans := map[int]*plan.Plan{}
	for _, size := range sizes {
		plans[size] = bigPlan(b, size)
	}
	peaks := map[string]float64{}
	for b.Loop() {
		for _, size := range sizes {
			peak, err := peakHeap(func() error { return streamed(plans[size]) })
			if err != nil {
				b.Fatal(err)
			}
			peaks["stream-"+fmt.Sprint(size)] = max(peaks["stream-"+fmt.Sprint(size)], peak)
		}
		peak, err := peakHeap(func() error { return inMemory(plans[5000]) })
		if err != nil {
			b.Fatal(err)
		}
		peaks["memory-5000"] = max(peaks["memory-5000"], peak)
	}
	one := peaks["stream-1"]
	for _, size := range sizes {
		p := peaks["stream-"+fmt.Sprint(size)]
		b.ReportMetric(p/(1<<20), "peak-MB-"+fmt.Sprint(size))
		if size > 1 {
			b.ReportMetric(p/one, "x1node-"+fmt.Sprint(size))
			b.ReportMetric(p/float64(size)/one, "per-node-vs-1node-"+fmt.Sprint(size))
		}
	}
	b.ReportMetric(peaks["memory-5000"]/(1<<20), "in-memory-peak-MB-5000")
	b.ReportMetric(peaks["stream-5000"]/peaks["memory-5000"], "x-in-memory-5000")
}

// peakHeap runs do and returns the peak of the heap's object bytes above
// their level before it (after a GC), sampled every millisecond.
func peakHeap(do func() error) (float64, error) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() float64 {
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64())
	}
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := uint64(max(read()-base, 0)); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err := do()
	close(done)
	<-sampled
	return float64(peak.Load()), err
}
