package transport

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// TestKeptOutput: whatever the sizes of the writes, keptOutput keeps
// exactly the first headMax and the last tailMax bytes, counts all, and
// says how much it dropped; an output that fits is kept whole.
func TestKeptOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		head, tail := r.IntN(40), r.IntN(40)
		var all []byte
		k := newKept(head, tail)
		for range r.IntN(12) {
			p := make([]byte, r.IntN(3*(tail+2)))
			for j := range p {
				p[j] = byte('a' + r.IntN(26))
			}
			all = append(all, p...)
			if n, err := k.Write(p); n != len(p) || err != nil {
				t.Fatal(n, err)
			}
		}
		var want []byte
		if len(all) <= head+tail {
			want = all
		} else {
			d := len(all) - head - tail
			want = append(append([]byte{}, all[:head]...), fmt.Sprintf("\n[hybridctl: %d bytes (%s) dropped here; %d bytes were received, the first %d and the last %d are kept]\n", d, MiB(int64(d)), len(all), head, tail)...)
			want = append(want, all[len(all)-tail:]...)
		}
		if got := k.Bytes(); !bytes.Equal(got, want) || k.total != int64(len(all)) {
			t.Fatalf("case %d (head %d, tail %d, %d bytes):\ngot  %q\nwant %q", i, head, tail, len(all), got, want)
		}
	}
}

// heapPeak samples the live heap every few milliseconds until stop is
// called and returns the largest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// TestOutputBoundedOverSSH: a host answering with hundreds of MiB on
// standard output and standard error (the loopback sshd runs head -c)
// leaves a result of DefaultKeep at each end of each stream, with the
// counts, while the process's heap stays under 64 MiB (keeping it all
// took twice the output: 640 MiB here); with Limits.Max the command
// fails saying how much the host sent, and Limits.Spill receives every
// byte.
func TestOutputBoundedOverSSH(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	size := int64(256 << 20)
	if testing.Short() {
		size = 48 << 20
	}
	cmd := fmt.Sprintf("head -c %d /dev/zero; head -c %d /dev/zero >&2", size, size/4)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	stop := heapPeak()
	res, err := c.Exec(ctxT(t), cmd, nil)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// What is kept is 6 × DefaultKeep; the SSH packets are garbage the
	// collector lets grow to about as much again before it runs. Keeping
	// the output took twice its size (stdout, and the interleaved copy).
	const bound = 64 << 20
	t.Logf("%s out, %s err: live heap peak %s over the start (bound %s), %s after GC with the result held",
		MiB(size), MiB(size/4), MiB(int64(peak)-int64(base.HeapAlloc)), MiB(bound), MiB(int64(after.HeapAlloc)-int64(base.HeapAlloc)))
	if int64(peak)-int64(base.HeapAlloc) > bound {
		t.Errorf("the live heap grew by %s while the host sent %s: not bounded", MiB(int64(peak)-int64(base.HeapAlloc)), MiB(size+size/4))
	}
	if res.StdoutBytes != size || res.StderrBytes != size/4 || !res.Truncated() {
		t.Errorf("counted %d and %d bytes, truncated %v", res.StdoutBytes, res.StderrBytes, res.Truncated())
	}
	marker := fmt.Sprintf("\n[hybridctl: %d bytes (%s) dropped here; %d bytes were received, the first %d and the last %d are kept]\n", size-2*DefaultKeep, MiB(size-2*DefaultKeep), size, DefaultKeep, DefaultKeep)
	if len(res.Stdout) != 2*DefaultKeep+len(marker) || !bytes.Contains(res.Stdout, []byte(marker)) || len(res.Stderr) > 2*DefaultKeep+200 {
		t.Errorf("kept %d bytes of stdout, %d of stderr", len(res.Stdout), len(res.Stderr))
	}
	runtime.KeepAlive(res)

	// The same command when the caller parses at most 4 MiB, with every
	// byte spilled.
	h := sha256.New()
	var spilled countingWriter
	_, err = c.ExecLimited(ctxT(t), cmd, nil, Limits{Max: 4 << 20, Spill: io.MultiWriter(h, &spilled)})
	var le *OutputLimitError
	want := fmt.Sprintf("node-1 sent %s (%d bytes) on standard output, more than the 4.0 MiB hybridctl reads of this command's output; nothing of it was used", MiB(size), size)
	if !errors.As(err, &le) || le.Sent != size || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v\nwant it to say %q", err, want)
	}
	if out := engine.CommandOutput(err); len(out) > 2*DefaultKeep+200 {
		t.Errorf("the error keeps %d bytes of output", len(out))
	}
	zero := sha256.New()
	if _, err := io.CopyN(zero, nulBytes{}, size); err != nil {
		t.Fatal(err)
	}
	if spilled.n != size || !bytes.Equal(h.Sum(nil), zero.Sum(nil)) {
		t.Errorf("spilled %d bytes (sha256 match %v), want all %d", spilled.n, bytes.Equal(h.Sum(nil), zero.Sum(nil)), size)
	}

	// Within the limit the output is whole, and not truncated.
	res, err = c.ExecLimited(ctxT(t), "head -c 3000000 /dev/zero", nil, Limits{Max: 4 << 20})
	if err != nil || len(res.Stdout) != 3000000 || res.Truncated() {
		t.Errorf("within the limit: %d bytes, truncated %v, %v", len(res.Stdout), res != nil && res.Truncated(), err)
	}
	// One byte over it fails.
	if _, err := c.ExecLimited(ctxT(t), "head -c 4194305 /dev/zero", nil, Limits{Max: 4 << 20}); !errors.As(err, &le) || le.Sent != 4194305 {
		t.Errorf("one byte over the limit: %v", err)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// nulBytes reads as NUL bytes for ever, like /dev/zero.
type nulBytes struct{}

func (nulBytes) Read(p []byte) (int, error) { clear(p); return len(p), nil }
