package engine

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The live view shows running steps in a status block that is erased
// before every progress line and redrawn after it; the summary leaves no
// status block behind.
func TestLiveReporter(t *testing.T) {
	var out syncBuffer
	hosts := []Host{{Name: "node-1"}, {Name: "node-2"}}
	text := NewTextReporter(nil, nil, hosts)
	l := NewLiveReporter(&out, text)
	clock := time.Unix(1000, 0)
	l.mu.Lock()
	l.now = func() time.Time { return clock }
	l.mu.Unlock()

	l.Report(Event{Type: EventStart, Phase: "prepare", Host: "node-1"})
	l.Report(Event{Type: EventStart, Phase: "prepare", Host: "node-2"})
	first := out.String()
	if strings.Count(first, "running") < 3 || !strings.Contains(first, "\x1b[1A\r\x1b[J") {
		t.Fatalf("two starts should draw one status line, then erase it and draw two:\n%q", first)
	}
	l.mu.Lock()
	clock = clock.Add(3 * time.Second)
	l.mu.Unlock()
	l.Report(Event{Type: EventDone, Phase: "prepare", Host: "node-1", ElapsedMS: 3000})
	rest := strings.TrimPrefix(out.String(), first)
	// Erase the two status lines, print the done line, redraw node-2 only.
	if !strings.HasPrefix(rest, "\x1b[2A\r\x1b[J") {
		t.Fatalf("the status block was not erased before the progress line:\n%q", rest)
	}
	if !strings.Contains(rest, "node-1") || !strings.Contains(rest, "done in 3s") {
		t.Fatalf("no done line:\n%q", rest)
	}
	if after := rest[strings.Index(rest, "done in 3s"):]; strings.Contains(after, "node-1") || !strings.Contains(after, "node-2") || !strings.Contains(after, "running 3s") {
		t.Fatalf("status after the done line should show only node-2 (3s):\n%q", after)
	}
	l.Report(Event{Type: EventSummary, Summary: &Summary{Done: 2}})
	end := out.String()
	tail := end[strings.LastIndex(end, "applied:"):]
	if strings.Contains(tail, "running") {
		t.Fatalf("a status block was drawn after the summary:\n%q", tail)
	}
	l.Close() // idempotent
}

// With no step running there is no status block: nothing is erased before
// a progress line or on Close (no cursor movement of zero lines, which
// terminals take as one).
func TestLiveReporterNothingRunning(t *testing.T) {
	var out syncBuffer
	hosts := []Host{{Name: "node-1"}}
	l := NewLiveReporter(&out, NewTextReporter(nil, nil, hosts))
	l.Report(Event{Type: EventSkip, Phase: "prepare", Host: "node-1", Reason: "already in place"})
	l.Report(Event{Type: EventSkip, Phase: "join", Host: "node-1", Reason: "already in place"})
	l.Close()
	if got := out.String(); strings.Contains(got, "\x1b[") || strings.Count(got, "skipped: already in place\n") != 2 {
		t.Errorf("two skip lines and no escape sequence expected:\n%q", got)
	}
}
