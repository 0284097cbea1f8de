package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hybridctl/hybridctl/bench/internal/floor"
	"github.com/hybridctl/hybridctl/bench/internal/gen"
	"github.com/hybridctl/hybridctl/internal/checks"
	"github.com/hybridctl/hybridctl/internal/cli"
	"github.com/hybridctl/hybridctl/internal/report"
	"github.com/hybridctl/hybridctl/internal/snapshot"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The cluster's size: HYBRIDCTL_BENCH_NODES and HYBRIDCTL_BENCH_PODS
// (default 500 nodes, 15,000 pods).
func sizes(b *testing.B) (nodes, pods int) {
	nodes, pods = 500, 15000
	for _, v := range []struct {
		name string
		p    *int
	}{{"HYBRIDCTL_BENCH_NODES", &nodes}, {"HYBRIDCTL_BENCH_PODS", &pods}} {
		if s := os.Getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 10 {
				b.Fatalf("%s=%q: want a number of at least 10", v.name, s)
			}
			*v.p = n
		}
	}
	return nodes, pods
}

// cluster writes the synthetic cluster (bench/gen) into a temporary
// directory and returns it. The directory is removed when the benchmark
// ends, and by the next run when this one was killed (its owner process
// is gone).
func cluster(b *testing.B, nodes, pods int) string {
	removeStaleDirs(os.TempDir())
	tmp, err := os.MkdirTemp("", benchDirPrefix)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := os.RemoveAll(tmp); err != nil {
			b.Error(err)
		}
	})
	if err := os.WriteFile(filepath.Join(tmp, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(tmp, "cluster")
	if err := gen.Write(dir, nodes, pods, 10000); err != nil {
		b.Fatal(err)
	}
	return dir
}

const (
	benchDirPrefix = "hybridctl-bench-"
	ownerFile      = "owner.pid"
)

// removeStaleDirs removes the cluster directories under tmp whose owning
// process is gone (a run killed before its cleanup).
func removeStaleDirs(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, benchDirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 && !processAlive(pid) {
			_ = os.RemoveAll(d)
		}
	}
}

// usage is what the runs of one phase cost: wall time, CPU time and peak
// RSS of each run. Runs of the phases a benchmark compares are
// interleaved (one of each per iteration), and times are reported as
// medians: on a shared machine a slow minute then hits every phase once
// instead of one phase's runs.
type usage struct {
	walls, cpus []time.Duration
	mb          float64 // the largest peak RSS of the process while it ran
	base        float64 // RSS of the process when it started
}

func (u *usage) add(v usage) {
	u.walls = append(u.walls, v.walls...)
	u.cpus = append(u.cpus, v.cpus...)
	u.mb = max(u.mb, v.mb)
	u.base = max(u.base, v.base)
}

// one is the usage of a single run.
func one(wall, cpu time.Duration, mb float64) usage {
	return usage{walls: []time.Duration{wall}, cpus: []time.Duration{cpu}, mb: mb}
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2].Seconds()
	}
	return (s[len(s)/2-1] + s[len(s)/2]).Seconds() / 2
}

func (u usage) s() float64    { return median(u.walls) }
func (u usage) cpuS() float64 { return median(u.cpus) }

// measure runs f in this process and returns its wall time, CPU time and
// the process's peak RSS while it ran (name-MB), which includes what the
// test process held before (the cluster's files read, the client): the
// growth over that (name-grew-MB) is reported too. kube-score runs as its
// own process: its figure is its own peak RSS.
func measure(b *testing.B, f func() error) usage {
	b.Helper()
	if err := resetPeak(); err != nil {
		b.Fatal(err)
	}
	base, err := rssMB()
	if err != nil {
		b.Fatal(err)
	}
	t, c := time.Now(), cpuTime()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	wall, cpu := time.Since(t), cpuTime()-c
	mb, err := peakMB()
	if err != nil {
		b.Fatal(err)
	}
	u := one(wall, cpu, mb)
	u.base = base
	return u
}

// metrics puts a phase's figures into the benchmark's line.
func metrics(b *testing.B, name string, u usage) {
	b.ReportMetric(u.s(), name+"-s")
	b.ReportMetric(u.cpuS(), name+"-cpu-s")
	b.ReportMetric(u.mb, name+"-MB")
	if u.base > 0 {
		b.ReportMetric(u.mb-u.base, name+"-grew-MB")
	}
}

// kubeScore is the kube-score v1.20.0 binary: $HYBRIDCTL_KUBE_SCORE, or
// where bench/run.sh installs it.
func kubeScore(b *testing.B) string {
	if p := os.Getenv("HYBRIDCTL_KUBE_SCORE"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(home, ".cache", "hybridctl", "tools", "kube-score")
	if _, err := os.Stat(p); err != nil {
		b.Fatalf("kube-score: %v: bench/run.sh installs it (go install github.com/zegl/kube-score/cmd/kube-score@v1.20.0), or set HYBRIDCTL_KUBE_SCORE", err)
	}
	return p
}

// BenchmarkLint is `hybridctl lint DIR` on the synthetic cluster, in two
// styles of YAML: style=flow (documents with one-line flow collections, as
// hand-written manifests and Helm charts often are) and style=block (each
// file one List in block style, as kubectl get -A -o yaml prints it). Each
// iteration runs, on the same files: lint in this process ("lint"; its
// peak RSS includes this test binary's), the hybridctl binary as its own
// process under GNU time ("lint-bin": its own peak RSS, the memory target)
// and kube-score v1.20.0 (`kube-score score`). It reports each one's
// median time and CPU time and its peak RSS, and x-kube-score, how many
// times faster lint is (the targets: at least 12 at 150,000 pods, in at
// most 4 s and 250 MB).
//
//	HYBRIDCTL_BENCH_NODES=5000 HYBRIDCTL_BENCH_PODS=150000 \
//	  go test -run '^$' -bench Lint -benchtime 3x -timeout 0 ./bench/
func BenchmarkLint(b *testing.B) {
	nodes, pods := sizes(b)
	ks := kubeScore(b)
	bin := hybridctlBinary(b)
	for _, style := range []string{"flow", "block"} {
		b.Run(fmt.Sprintf("style=%s/pods=%d", style, pods), func(b *testing.B) { benchLint(b, ks, bin, style, nodes, pods) })
	}
}

func benchLint(b *testing.B, ks, bin, style string, nodes, pods int) {
	dir := cluster(b, nodes, pods)
	if style == "block" {
		if err := gen.ToBlock(dir); err != nil {
			b.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no YAML files in %s: %v", dir, err)
	}
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	b.Logf("%d files of %s YAML, %.1f MB", len(files), style, float64(size)/1e6)
	ctx := context.Background()
	var lint, binary, peer usage
	for b.Loop() {
		lint.add(measure(b, func() error {
			var out, errOut bytes.Buffer
			if code := cli.Main(ctx, []string{"lint", "--fail-on", "warning", dir}, strings.NewReader(""), &out, &errOut); code != 0 {
				return fmt.Errorf("lint: exit %d (the synthetic cluster is correct): %s\n%.2000s", code, errOut.String(), out.String())
			}
			return nil
		}))
		binary.add(runMeasured(b, ctx, bin, "lint", "--fail-on", "warning", dir))

		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, ks, append([]string{"score", "--output-format", "ci"}, files...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		t := time.Now()
		err := cmd.Run()
		wall := time.Since(t)
		// kube-score exits 1 when it has a finding; it has some on every
		// pod (no resource limits, no network policy): that it scored the
		// pods is checked by their names in its output.
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
			b.Fatalf("kube-score: %v\n%.2000s", err, out.String())
		}
		// Its lines are "[GRADE] name/namespace v1/Pod: message".
		if !bytes.Contains(out.Bytes(), []byte(" v1/Pod")) {
			b.Fatalf("kube-score named no pod:\n%.2000s", out.String())
		}
		cpu, mb := childUsage(cmd.ProcessState)
		peer.add(one(wall, cpu, mb))
	}
	metrics(b, "lint", lint)
	metrics(b, "lint-bin", binary)
	metrics(b, "kube-score", peer)
	b.ReportMetric(float64(size)/1e6, "input-MB")
	b.ReportMetric(peer.s()/lint.s(), "x-kube-score")
	b.ReportMetric(peer.cpuS()/lint.cpuS(), "x-kube-score-cpu")
}

// BenchmarkDoctor is `hybridctl doctor` (checks.Audit, every check) against
// the test API server loaded with the synthetic cluster, beside two floors
// read in the same run, in this process, from the same server:
//
//   - list: one LIST of each core resource type doctor reads, served from
//     the watch cache (resourceVersion=0), every response held;
//   - informer: client-go informers for the same types, started and
//     synced (their caches filled), as a controller would.
//
// The floors read typed objects and skip the Calico kinds (a handful of
// objects). It reports each run's time, CPU time and peak RSS, and
// x-list and x-informer, doctor's time over each floor's (the
// target: at most 1.2 times the cache floor, in at most 120 MB). The
// memory target is read off doctor-bin: the hybridctl binary running
// doctor as its own process (its peak RSS, read by GNU time), since
// doctor-MB includes this test binary's own ~80 MB. One untimed round of
// doctor and the LIST floor comes first (below).
// Loading the objects into the server is not timed (~400 objects/s
// unloaded).
//
//	HYBRIDCTL_BENCH_PODS=15000 go test -run '^$' -bench Doctor -benchtime 1x -timeout 0 ./bench/
func BenchmarkDoctor(b *testing.B) {
	nodes, pods := sizes(b)
	b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) { benchDoctor(b, nodes, pods) })
}

func benchDoctor(b *testing.B, nodes, pods int) {
	dir := cluster(b, nodes, pods)
	t := time.Now()
	env := testenv.StartT(b, testenv.Options{Calico: true, Load: []string{dir}, Cache: etcdCache(b)})
	b.Logf("test API server loaded with %d nodes and %d pods in %s", nodes, pods, time.Since(t).Round(time.Second))
	cfg := env.AdminConfig()
	cfg.QPS, cfg.Burst = 50, 100 // doctor's own
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// One untimed round first: right after the server starts, the first
	// read of each custom resource is answered 429 with Retry-After: 1
	// while its watch cache initializes, and whichever ran first would pay
	// that second (the floors read no custom resources at all).
	if _, _, err := checks.Audit(ctx, cfg, checks.Options{}, ""); err != nil {
		b.Fatal(err)
	}
	if _, err := listFloor(ctx, cs); err != nil {
		b.Fatal(err)
	}
	bin := hybridctlBinary(b)
	floorBin := floorBinary(b)
	kubeconfig := env.KubeconfigPath()
	// The binaries read the cluster from $KUBECONFIG.
	b.Setenv("KUBECONFIG", kubeconfig)
	var doctor, binary, list, informer, raw, rawBin, startup usage
	for b.Loop() {
		// The least any auditor must do, first in each round: pods and
		// nodes in protobuf, bytes thrown away, in this process and as
		// a small binary of its own.
		raw.add(measure(b, func() error {
			n, err := floor.RawLists(ctx, cs.CoreV1().RESTClient())
			if err == nil && n == 0 {
				err = errors.New("the raw floor read nothing")
			}
			return err
		}))
		rawBin.add(runMeasured(b, ctx, floorBin, "-mode", "raw"))
		// hybridctl's start-up alone: the binary doing nothing but
		// printing its version (runtime and package initialization,
		// the command tree).
		startup.add(runMeasured(b, ctx, bin, "version"))
		doctor.add(measure(b, func() error {
			res, n, err := checks.Audit(ctx, cfg, checks.Options{}, "")
			if err != nil {
				return err
			}
			if n < nodes+pods {
				return fmt.Errorf("doctor read %d objects, fewer than the %d nodes and pods", n, nodes+pods)
			}
			for _, f := range res.Findings {
				if f.Severity != finding.Info {
					return fmt.Errorf("doctor has a finding on the correct cluster: %s %s: %s", f.Check, f.Object, f.Message)
				}
			}
			return nil
		}))
		// The command itself, as its own process: its peak RSS is
		// doctor's own, without this test binary's.
		binary.add(runMeasured(b, ctx, bin, "doctor", "--kubeconfig", kubeconfig, "-o", "json", "--fail-on", "warning"))

		list.add(measure(b, func() error {
			n, err := listFloor(ctx, cs)
			if err == nil && n < nodes+pods {
				err = fmt.Errorf("list floor read %d objects", n)
			}
			return err
		}))
		informer.add(measure(b, func() error {
			n, err := informerFloor(cs)
			if err == nil && n < nodes+pods {
				err = fmt.Errorf("informer floor read %d objects", n)
			}
			return err
		}))
	}
	metrics(b, "doctor", doctor)
	metrics(b, "doctor-bin", binary)
	metrics(b, "raw", raw)
	metrics(b, "raw-bin", rawBin)
	metrics(b, "startup-bin", startup)
	metrics(b, "list", list)
	metrics(b, "informer", informer)
	b.ReportMetric(doctor.s()/raw.s(), "x-raw")
	b.ReportMetric(binary.s()/rawBin.s(), "x-raw-bin")
	b.ReportMetric(doctor.s()/list.s(), "x-list")
	b.ReportMetric(doctor.s()/informer.s(), "x-informer")
	if dir := os.Getenv("HYBRIDCTL_BENCH_PROFILE"); dir != "" {
		profileDoctor(b, ctx, cfg, filepath.Join(dir, fmt.Sprintf("doctor-%d", pods)))
	}
}

// profileDoctor runs doctor's stages once more, one after the other, each
// under a CPU profile, with a heap profile after it, into dir: read (the
// live loader: every LIST, decoded), checks, report (JSON). Their wall
// times go into the benchmark's line as stage-NAME-s.
func profileDoctor(b *testing.B, ctx context.Context, cfg *rest.Config, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	stage := func(name string, f func() error) {
		cpu, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer cpu.Close()
		runtime.GC()
		if err := pprof.StartCPUProfile(cpu); err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		err = f()
		d := time.Since(t)
		pprof.StopCPUProfile()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(d.Seconds(), "stage-"+name+"-s")
		heap, err := os.Create(filepath.Join(dir, name+".heap.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer heap.Close()
		if err := pprof.Lookup("heap").WriteTo(heap, 0); err != nil {
			b.Fatal(err)
		}
	}
	cs, _, err := checks.Selected(checks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var snap *snapshot.Snapshot
	stage("read", func() (err error) {
		snap, err = snapshot.LoadLive(ctx, cfg, snapshot.LiveOptions{Kinds: checks.Needs(cs)})
		return err
	})
	var res *checks.Result
	stage("checks", func() (err error) {
		res, err = checks.Run(snap, checks.Options{})
		return err
	})
	stage("report", func() error {
		return report.Write(io.Discard, "json", "doctor", res, snap.Len())
	})
	b.Logf("profiles of doctor's stages in %s", dir)
}

// floorBinary builds bench/floor into a temporary directory.
func floorBinary(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "floor")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hybridctl/hybridctl/bench/floor")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build bench/floor: %v\n%s", err, out)
	}
	return bin
}

// runMeasured runs a command that must exit 0 under GNU time (Debian's
// time package) and returns its wall time, CPU time and peak RSS. The
// child's own getrusage is no use for a small child: Go starts children
// with vfork, and Linux carries the parent's peak RSS (this test binary's,
// ~100 MB) into the child's ru_maxrss at exec; GNU time forks its child
// from its own small process.
func runMeasured(b *testing.B, ctx context.Context, name string, args ...string) usage {
	b.Helper()
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		b.Fatalf("%s (Debian's time package: apt-get install time) measures the binary's peak RSS: %v", gnuTime, err)
	}
	report := filepath.Join(b.TempDir(), "time")
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, gnuTime, append([]string{"-f", "%M %U %S", "-o", report, name}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	t := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v\n%.2000s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	wall := time.Since(t)
	raw, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	var kb, user, sys float64
	if _, err := fmt.Sscanf(string(raw), "%f %f %f", &kb, &user, &sys); err != nil {
		b.Fatalf("GNU time's report %q: %v", raw, err)
	}
	return one(wall, time.Duration((user+sys)*float64(time.Second)), kb/1000)
}

// hybridctlBinary builds hybridctl (./cmd/hybridctl, as go install would)
// into a temporary directory.
func hybridctlBinary(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "hybridctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hybridctl/hybridctl/cmd/hybridctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hybridctl: %v\n%s", err, out)
	}
	return bin
}

// etcdCache is where the loaded test API server's etcd data is kept
// between runs (testenv.Options.Cache; the newest two sizes):
// $HYBRIDCTL_BENCH_ETCD_CACHE, else ~/.cache/hybridctl/bench-etcd; "off"
// loads every time.
func etcdCache(b *testing.B) string {
	switch d := os.Getenv("HYBRIDCTL_BENCH_ETCD_CACHE"); d {
	case "off":
		return ""
	case "":
	default:
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(home, ".cache", "hybridctl", "bench-etcd")
}

// listFloor LISTs each core type doctor reads from the watch cache and
// holds every response until the end; it returns the number of objects.
func listFloor(ctx context.Context, cs kubernetes.Interface) (int, error) {
	o := metav1.ListOptions{ResourceVersion: "0"}
	var held []any
	n := 0
	add := func(obj any, items int, err error) error {
		held = append(held, obj)
		n += items
		return err
	}
	lists := []func() error{
		func() error { l, err := cs.CoreV1().Nodes().List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.CoreV1().Namespaces().List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.CoreV1().Pods("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.CoreV1().Services("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.CoreV1().ConfigMaps("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.AppsV1().DaemonSets("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.AppsV1().Deployments("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.AppsV1().StatefulSets("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.AppsV1().ReplicaSets("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.BatchV1().Jobs("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.BatchV1().CronJobs("").List(ctx, o); return add(l, len(l.Items), err) },
		func() error { l, err := cs.NodeV1().RuntimeClasses().List(ctx, o); return add(l, len(l.Items), err) },
		func() error {
			l, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, o)
			return add(l, len(l.Items), err)
		},
	}
	for _, l := range lists {
		if err := l(); err != nil {
			return 0, err
		}
	}
	_ = held
	return n, nil
}

// informerFloor starts informers for the same types, waits until their
// caches are filled and returns the number of objects they hold.
func informerFloor(cs kubernetes.Interface) (int, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	infs := []cache.SharedIndexInformer{
		f.Core().V1().Nodes().Informer(), f.Core().V1().Namespaces().Informer(), f.Core().V1().Pods().Informer(),
		f.Core().V1().Services().Informer(), f.Core().V1().ConfigMaps().Informer(),
		f.Apps().V1().DaemonSets().Informer(), f.Apps().V1().Deployments().Informer(),
		f.Apps().V1().StatefulSets().Informer(), f.Apps().V1().ReplicaSets().Informer(),
		f.Batch().V1().Jobs().Informer(), f.Batch().V1().CronJobs().Informer(),
		f.Node().V1().RuntimeClasses().Informer(), f.Certificates().V1().CertificateSigningRequests().Informer(),
	}
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	for typ, ok := range f.WaitForCacheSync(stop) {
		if !ok {
			return 0, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	n := 0
	for _, inf := range infs {
		n += len(inf.GetStore().ListKeys())
	}
	return n, nil
}
