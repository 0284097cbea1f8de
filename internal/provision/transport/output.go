package transport

import (
	"fmt"
	"io"
	"sync"
)

// DefaultKeep is how many bytes of the start and of the end of each output
// stream (standard output, standard error, and the two interleaved) a
// command's result keeps: the middle of a longer stream is dropped, counted,
// and replaced by a line that says how much. Whatever a host sends, one
// command holds at most about 6 × DefaultKeep of it in memory.
const DefaultKeep = 1 << 20

// Limits bound what one command's result keeps of its output.
type Limits struct {
	// Keep is how many bytes of the start and of the end of each stream are
	// kept (DefaultKeep when zero or negative).
	Keep int
	// Max, when positive, is how much standard output the caller reads
	// whole (it parses it): the first Max bytes are kept, and a command
	// that prints more fails with an *OutputLimitError saying how much the
	// host sent. The rest is still read (and counted, and given to Spill),
	// never kept.
	Max int64
	// Spill, when set, receives all of standard output as it arrives (a
	// file a support collection keeps). A write error fails the command.
	Spill io.Writer
}

// OutputLimitError is a command whose standard output is longer than the
// caller reads (Limits.Max).
type OutputLimitError struct {
	Host string
	// Sent is how many bytes of standard output arrived; Max is the limit.
	Sent, Max int64
	// Unfinished is set when the command was still sending when it was
	// stopped (its context ended): Sent is then a lower bound.
	Unfinished bool
}

func (e *OutputLimitError) Error() string {
	at := ""
	if e.Unfinished {
		at = "at least "
	}
	return fmt.Sprintf("%s sent %s%s (%d bytes) on standard output, more than the %s hybridctl reads of this command's output; nothing of it was used",
		e.Host, at, MiB(e.Sent), e.Sent, MiB(e.Max))
}

// MiB formats a byte count in MiB with one decimal.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// keptOutput keeps the first headMax and the last tailMax bytes written to
// it, and counts everything. The head is kept in chunks of at most
// headChunk, so that it never needs twice its size while it grows; with
// overflowDrops (a limit, not a view) the head is let go as soon as the
// output is longer than headMax, since it will not be used.
type keptOutput struct {
	headMax, tailMax int
	overflowDrops    bool
	head             [][]byte
	headLen          int
	// tail is a ring of tailMax bytes (allocated once needed): its
	// content starts at start and is size long.
	tail        []byte
	start, size int
	total       int64
}

const headChunk = 1 << 20

func newKept(head, tail int) *keptOutput { return &keptOutput{headMax: head, tailMax: tail} }

// newLimited keeps the first max bytes, and nothing once there are more.
func newLimited(max int) *keptOutput { return &keptOutput{headMax: max, overflowDrops: true} }

func (k *keptOutput) Write(p []byte) (int, error) {
	n := len(p)
	k.total += int64(n)
	if k.overflowDrops && k.total > int64(k.headMax) {
		k.head, k.headLen = nil, 0
		return n, nil
	}
	for len(p) > 0 && k.headLen < k.headMax {
		last := len(k.head) - 1
		if last < 0 || len(k.head[last]) == cap(k.head[last]) {
			k.head = append(k.head, make([]byte, 0, min(headChunk, k.headMax-k.headLen)))
			last++
		}
		c := min(cap(k.head[last])-len(k.head[last]), len(p))
		k.head[last] = append(k.head[last], p[:c]...)
		k.headLen += c
		p = p[c:]
	}
	if len(p) == 0 || k.tailMax <= 0 {
		return n, nil
	}
	if k.tail == nil {
		k.tail = make([]byte, k.tailMax)
	}
	if len(p) >= k.tailMax {
		copy(k.tail, p[len(p)-k.tailMax:])
		k.start, k.size = 0, k.tailMax
		return n, nil
	}
	for len(p) > 0 {
		end := (k.start + k.size) % k.tailMax
		if k.size == k.tailMax {
			end = k.start
		}
		c := copy(k.tail[end:min(k.tailMax, end+len(p))], p)
		p = p[c:]
		if over := k.size + c - k.tailMax; over > 0 {
			k.start = (k.start + over) % k.tailMax
			k.size = k.tailMax
		} else {
			k.size += c
		}
	}
	return n, nil
}

// dropped is how many bytes between the head and the tail were not kept.
func (k *keptOutput) dropped() int64 { return k.total - int64(k.headLen) - int64(k.size) }

// Bytes is what was kept: the whole output when nothing was dropped, else
// the head, a line saying how much was dropped, and the tail.
func (k *keptOutput) Bytes() []byte {
	out := make([]byte, 0, k.headLen+k.size+100)
	for _, c := range k.head {
		out = append(out, c...)
	}
	if d := k.dropped(); d > 0 {
		out = fmt.Appendf(out, "\n[hybridctl: %d bytes (%s) dropped here; %d bytes were received, the first %d and the last %d are kept]\n",
			d, MiB(d), k.total, k.headLen, k.size)
	}
	if k.size > 0 {
		first := k.tail[k.start:min(k.tailMax, k.start+k.size)]
		out = append(out, first...)
		out = append(out, k.tail[:k.size-len(first)]...)
	}
	return out
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
