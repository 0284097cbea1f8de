package engine

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hybridctl/hybridctl/internal/termtext"
)

// LiveReporter is the terminal view of a run: the plain progress lines of
// TextReporter scroll by as usual, and below them a status block shows
// every step running now, with its elapsed time, redrawn as events arrive
// and once a second. Use it only when the output is a terminal (ANSI
// escapes); logs and pipes get TextReporter's plain lines.
type LiveReporter struct {
	mu      sync.Mutex
	w       io.Writer
	text    *TextReporter
	running map[string]time.Time // "phase\x00host" -> start
	drawn   int                  // status lines on screen now
	now     func() time.Time
	stop    chan struct{}
	stopped bool
}

// NewLiveReporter returns a live view writing to a terminal w. Call Close
// when the run ends (the summary event also ends the view).
func NewLiveReporter(w io.Writer, text *TextReporter) *LiveReporter {
	l := &LiveReporter{w: w, running: map[string]time.Time{}, now: time.Now, stop: make(chan struct{})}
	text.w = &liveWriter{l}
	l.text = text
	go l.tick()
	return l
}

// liveWriter lets the text reporter write through the live view: the
// status block is erased first and drawn again after.
type liveWriter struct{ l *LiveReporter }

func (lw *liveWriter) Write(b []byte) (int, error) {
	l := lw.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
	n, err := l.w.Write(b)
	l.drawLocked()
	return n, err
}

func (l *LiveReporter) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.eraseLocked()
			l.drawLocked()
			l.mu.Unlock()
		}
	}
}

// Report implements Reporter.
func (l *LiveReporter) Report(e Event) {
	key := e.Phase + "\x00" + e.Host
	l.mu.Lock()
	switch e.Type {
	case EventStart:
		l.running[key] = l.now()
	case EventDone, EventFail, EventSkip, EventBlocked:
		delete(l.running, key)
	case EventSummary:
		l.running = map[string]time.Time{}
	}
	l.mu.Unlock()
	// Starts are shown by the status block, not as lines.
	if e.Type != EventStart {
		l.text.Report(e)
	} else {
		l.mu.Lock()
		l.eraseLocked()
		l.drawLocked()
		l.mu.Unlock()
	}
	if e.Type == EventSummary {
		l.Close()
	}
}

// Close stops the redraws and removes the status block.
func (l *LiveReporter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	close(l.stop)
	l.eraseLocked()
}

func (l *LiveReporter) eraseLocked() {
	if l.drawn > 0 {
		// Up to the first status line, then clear to the end of the screen.
		fmt.Fprintf(l.w, "\x1b[%dA\r\x1b[J", l.drawn)
		l.drawn = 0
	}
}

func (l *LiveReporter) drawLocked() {
	if l.stopped || len(l.running) == 0 {
		return
	}
	keys := make([]string, 0, len(l.running))
	for k := range l.running {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		phase, host, _ := strings.Cut(k, "\x00")
		fmt.Fprintf(&b, "  ⋯ %-*s  %-*s  running %s\n", l.text.PhaseWidth, termtext.Line(phase), l.text.HostWidth, termtext.Line(host),
			roundDur(l.now().Sub(l.running[k]).Milliseconds()))
	}
	_, _ = io.WriteString(l.w, b.String())
	l.drawn = len(keys)
}
