//go:build unix

package diagnose

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Run over several nodes: one reached, one whose SSH port is closed; the
// result keeps spec order, names the node not reached and is incomplete.
func TestRunMixed(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, srv.Dir)
	kh := srv.KnownHostsFile(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	pool := transport.NewPool(
		transport.Config{Host: "k8s-lab-master-1", Address: closed, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second},
		transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path}, KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second},
	)
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.API = hostfacts.API{Host: "127.0.0.1", Port: hostfactstest.APIListener(t)}
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-master-1", OS: engine.Linux}, {Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (hostfacts.Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x, Only: map[string]bool{"HC504": true, "HC508": true},
	})
	if len(r.Nodes) != 2 || r.Nodes[0].Error == "" || r.Nodes[1].Error != "" || !r.Incomplete() || r.Ran != 2 || strings.Join(r.Checks, ",") != "HC504,HC508" {
		t.Fatalf("%+v", r.Nodes)
	}
	expectExactly(t, r.Findings)
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "NOT REACHED (1)\n  k8s-lab-master-1: connecting to k8s-lab-master-1") || !strings.Contains(b.String(), "2 checks on 2 nodes, 0 skipped, 1 not reached; overlay from calico") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestCollectRefusesPlantedLink reproduces the attack on --collect: a
// support directory that already holds DIR/<node> -> ../outside (or a link
// deeper down, or at findings.json) after a real gathering over the
// loopback sshd. Collect refuses the link, names it, and the outside
// folder keeps its mode and its files; nothing is created there.
func TestCollectRefusesPlantedLink(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, srv.Dir)
	kh := srv.KnownHostsFile(t)
	pool := transport.NewPool(transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second})
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.API = hostfacts.API{Host: "127.0.0.1", Port: hostfactstest.APIListener(t)}
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (hostfacts.Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x,
	})
	if r.Nodes[0].Facts == nil || len(r.Nodes[0].Facts.Raw) == 0 {
		t.Fatalf("nothing gathered: %+v", r.Nodes)
	}
	// This machine may have no CNI configuration: one is added, so there
	// is a directory below the node's.
	r.Nodes[0].Facts.Raw = append(r.Nodes[0].Facts.Raw, hostfacts.RawFile{Name: "cni/99-test.conflist.txt", Data: []byte("{}\n")})
	for _, tc := range []struct{ link, target string }{
		{"k8s-lab-node-1", "../outside"},
		{"k8s-lab-node-1/cni", "../../outside"},
		{"findings.json", "../outside/routes.txt"},
	} {
		t.Run(tc.link, func(t *testing.T) {
			base := t.TempDir()
			dir, outside := filepath.Join(base, "support"), filepath.Join(base, "outside")
			for _, d := range []string{dir, filepath.Dir(filepath.Join(dir, tc.link)), outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "routes.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			err := Collect(ctxT(t), dir, r)
			want := "refusing to write through " + filepath.Join(dir, tc.link) + ": it is a symbolic link"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Collect: %v\nwant an error containing %q", err, want)
			}
			if st, _ := os.Stat(outside); st.Mode().Perm() != 0o755 {
				t.Errorf("the outside folder's mode changed to %o", st.Mode().Perm())
			}
			ents, _ := os.ReadDir(outside)
			if b, _ := os.ReadFile(filepath.Join(outside, "routes.txt")); len(ents) != 1 || string(b) != "mine\n" {
				t.Errorf("the outside folder changed: %d entries, routes.txt %q", len(ents), b)
			}
			if st, err := os.Lstat(filepath.Join(dir, tc.link)); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the planted link was replaced: %v", err)
			}
		})
	}
	// The same gathering into a clean directory is collected.
	dir := filepath.Join(t.TempDir(), "support")
	if err := Collect(ctxT(t), dir, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k8s-lab-node-1", "routes.txt")); err != nil {
		t.Errorf("no routes.txt: %v", err)
	}
}

// TestGatherFloodBounded: a node whose journal answers the gathering with
// hundreds of MiB (the loopback sshd runs the real script, with a
// journalctl that prints 256 MiB of log lines with a token in each) fails
// with a message saying how much it sent, while the heap stays bounded by
// the parse limit (the whole output was kept twice before); with
// --collect the first MaxCollectedOutput of it is kept, redacted, 0600,
// and named in the message.
func TestGatherFloodBounded(t *testing.T) {
	size := int64(256 << 20)
	if testing.Short() {
		size = 40 << 20
	}
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, srv.Dir)
	flood := func(size int64) {
		srv.Shim("journalctl", fmt.Sprintf("#!/bin/sh\nyes \"Dec 06 10:00:00 node kubelet[42]: token=abcdef.0123456789abcdef $(head -c 4000 /dev/zero | tr '\\0' x)\" | head -c %d\n", size))
	}
	kh := srv.KnownHostsFile(t)
	pool := transport.NewPool(transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "u", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 5 * time.Second})
	defer func() { _ = pool.Close() }()
	x := labExpect()
	x.API = hostfacts.API{Host: "127.0.0.1", Port: hostfactstest.APIListener(t)}
	dir := filepath.Join(t.TempDir(), "support")
	cd, err := OpenCollect(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	// Without --collect a smaller flood (the message is the point), with
	// it the large one (memory, and the kept file).
	for _, collect := range []*atomicfile.Dir{nil, cd} {
		flood(map[bool]int64{true: size, false: 40 << 20}[collect != nil])
		runtime.GC()
		base := liveHeap()
		stop := heapPeak()
		r := Run(ctxT(t), Options{
			Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
			Dial:    func(ctx context.Context, n string) (hostfacts.Conn, error) { return pool.Get(ctx, n) },
			Cluster: calicoLab(t), Expect: x, Collect: collect, NodeTimeout: 4 * time.Minute,
		})
		grew := int64(stop()) - int64(base)
		t.Logf("collect %v: the live heap grew by at most %s", collect != nil, transport.MiB(grew))
		// The parse limit, kept whole, and a margin; keeping the output
		// took twice its size.
		if bound := int64(hostfacts.MaxNodeBytes + 16<<20); grew > bound {
			t.Errorf("collect %v: the heap grew by %s (bound %s)", collect != nil, transport.MiB(grew), transport.MiB(bound))
		}
		msg := r.Nodes[0].Error
		if r.Nodes[0].Facts != nil || !strings.Contains(msg, "k8s-lab-node-1 sent ") || !strings.Contains(msg, "MiB (") ||
			!strings.Contains(msg, "on standard output, more than the 16.0 MiB hybridctl reads of this command's output") {
			t.Fatalf("collect %v: node result %q", collect != nil, msg)
		}
		kept := filepath.Join(dir, "k8s-lab-node-1", "gather-output.txt")
		if collect == nil {
			if strings.Contains(msg, "gather-output") {
				t.Errorf("names a kept file without --collect: %s", msg)
			}
			continue
		}
		// All of it is kept when it is shorter than MaxCollectedOutput
		// (the -short flood), its first MaxCollectedOutput otherwise.
		keptMsg, low := "; the first 64.0 MiB of it, redacted, is in "+kept, int64(MaxCollectedOutput-8192)
		if size < MaxCollectedOutput {
			keptMsg, low = " MiB of it, redacted, is in "+kept, size/2
		}
		if !strings.HasSuffix(msg, keptMsg) {
			t.Errorf("the message does not name the kept output: %s", msg)
		}
		st, err := os.Stat(kept)
		if err != nil || st.Mode().Perm() != 0o600 || st.Size() < low || st.Size() > MaxCollectedOutput+100 {
			t.Fatalf("kept output: %v %v", st, err)
		}
		f, err := os.Open(kept)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 128<<10), 128<<10)
		lines := 0
		for sc.Scan() {
			lines++
			if strings.Contains(sc.Text(), "0123456789abcdef") {
				t.Fatalf("line %d of the kept output holds the token", lines)
			}
		}
		f.Close()
		if lines < 1000 || sc.Err() != nil {
			t.Errorf("kept %d lines: %v", lines, sc.Err())
		}
	}
	// A node within the limit keeps nothing extra.
	srv.Shim("journalctl", "#!/bin/sh\necho 'Dec 06 10:00:00 node kubelet[42]: ok'\n")
	r := Run(ctxT(t), Options{
		Targets: []Target{{Name: "k8s-lab-node-1", OS: engine.Linux}},
		Dial:    func(ctx context.Context, n string) (hostfacts.Conn, error) { return pool.Get(ctx, n) },
		Cluster: calicoLab(t), Expect: x, Collect: cd,
	})
	if r.Nodes[0].Error != "" {
		t.Fatal(r.Nodes[0].Error)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "k8s-lab-node-1"))
	for _, e := range ents {
		if e.Name() != "gather-output.txt" { // the first run's
			t.Errorf("left in the node's directory: %s", e.Name())
		}
	}
}

// liveHeap is the live heap as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak samples the live heap (what the last collection found
// reachable, garbage left out) every few milliseconds until stop is called
// and returns the largest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}
