package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hybridctl/hybridctl/internal/termtext"
)

// EventType says what happened to a step (a phase on a host).
type EventType string

// Event types, in the order a step can go through them.
const (
	EventStart    EventType = "start"    // the step began running
	EventDone     EventType = "done"     // Run returned nil
	EventSkip     EventType = "skip"     // not run: filtered, recorded in the state file, or already in place
	EventFail     EventType = "fail"     // Run (or ShouldRun) returned an error
	EventBlocked  EventType = "blocked"  // not run because a step it depends on did not finish
	EventWarning  EventType = "warning"  // a running step reported something to look at (Warn)
	EventProgress EventType = "progress" // a running step says what it is waiting for (Progress)
	EventDryRun   EventType = "dry-run"  // what the step would do
	EventSummary  EventType = "summary"  // the end of the run
)

// Event is one progress record. With -o json every event is one JSON object
// on its own line, so automation can follow a run as it happens.
type Event struct {
	Time  time.Time `json:"time"`
	Type  EventType `json:"type"`
	Phase string    `json:"phase,omitempty"`
	Host  string    `json:"host,omitempty"`
	// Elapsed is how long the step took (done, fail) in milliseconds.
	ElapsedMS int64 `json:"elapsedMs,omitempty"`
	// SinceStartMS is the time since the run began, in milliseconds.
	SinceStartMS int64 `json:"sinceStartMs"`
	// Reason explains a skip or a block.
	Reason string `json:"reason,omitempty"`
	// Error is the failure, without command output.
	Error string `json:"error,omitempty"`
	// Output is the failed command's output, present only on failure.
	Output string `json:"output,omitempty"`
	// Actions are the commands and files of a dry-run step.
	Actions []string `json:"actions,omitempty"`
	// Summary is set on the summary event.
	Summary *Summary `json:"summary,omitempty"`
}

// Summary counts the steps of a run by outcome. A dry run does nothing:
// the steps it shows count as WouldRun, never as Done.
type Summary struct {
	Done      int   `json:"done"`
	WouldRun  int   `json:"wouldRun"`
	Skipped   int   `json:"skipped"`
	Failed    int   `json:"failed"`
	Blocked   int   `json:"blocked"`
	NotRun    int   `json:"notRun"` // interrupted before they could start
	ElapsedMS int64 `json:"elapsedMs"`
	DryRun    bool  `json:"dryRun,omitempty"`
}

// Reporter receives events. Implementations must be safe for concurrent use:
// steps on different hosts report at the same time.
type Reporter interface {
	Report(Event)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(Event)

// Report implements Reporter.
func (f ReporterFunc) Report(e Event) { f(e) }

// JSONReporter writes one JSON object per event and line.
type JSONReporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewJSONReporter returns a reporter writing JSON lines to w, with the
// control characters encoding/json leaves raw escaped (termtext.JSON).
func NewJSONReporter(w io.Writer) *JSONReporter {
	return &JSONReporter{enc: json.NewEncoder(termtext.JSONLines(w))}
}

// Report implements Reporter.
func (r *JSONReporter) Report(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(e) // a broken pipe on progress output must not fail the apply
}

// TextReporter writes one plain line per step event, for people and logs:
//
//	[  12.3s] kubeadm-init        k8s-lab-master-1   done in 41.2s
//
// A failed step's command output follows its line, indented. Names,
// reasons, errors, actions and output are escaped (termtext.Line, line by
// line): they come from the spec, the nodes and the commands run there.
type TextReporter struct {
	mu sync.Mutex
	w  io.Writer
	// PhaseWidth and HostWidth align the columns; set them from the
	// longest names (NewTextReporter does).
	PhaseWidth, HostWidth int
	// Verb starts the summary line ("applied" by default; "reset").
	Verb string
}

// NewTextReporter returns a text reporter whose columns fit phases and hosts.
func NewTextReporter(w io.Writer, phases []Descriptor, hosts []Host) *TextReporter {
	r := &TextReporter{w: w, PhaseWidth: 12, HostWidth: len(ClusterHostName)}
	for _, d := range phases {
		r.PhaseWidth = max(r.PhaseWidth, len(d.Name))
	}
	for _, h := range hosts {
		r.HostWidth = max(r.HostWidth, len(h.Name))
	}
	return r
}

// Report implements Reporter.
func (r *TextReporter) Report(e Event) {
	var b strings.Builder
	stamp := fmt.Sprintf("[%7.1fs] ", float64(e.SinceStartMS)/1000)
	if e.Type == EventSummary && e.Summary != nil {
		s := e.Summary
		verb := r.Verb
		if verb == "" {
			verb = "applied"
		}
		if s.DryRun {
			// Nothing was done: the steps would run.
			fmt.Fprintf(&b, "%sdry-run: %d would run, %d skipped, %d failed, %d blocked, %d not run in %s; nothing was changed\n",
				stamp, s.WouldRun, s.Skipped, s.Failed, s.Blocked, s.NotRun, roundDur(s.ElapsedMS))
			r.write(b.String())
			return
		}
		fmt.Fprintf(&b, "%s%s: %d done, %d skipped, %d failed, %d blocked, %d not run in %s\n",
			stamp, verb, s.Done, s.Skipped, s.Failed, s.Blocked, s.NotRun, roundDur(s.ElapsedMS))
		r.write(b.String())
		return
	}
	fmt.Fprintf(&b, "%s%-*s  %-*s  ", stamp, r.PhaseWidth, termtext.Line(e.Phase), r.HostWidth, termtext.Line(e.Host))
	switch e.Type {
	case EventStart:
		b.WriteString("started")
	case EventDone:
		fmt.Fprintf(&b, "done in %s", roundDur(e.ElapsedMS))
	case EventSkip:
		fmt.Fprintf(&b, "skipped: %s", termtext.Line(e.Reason))
	case EventFail:
		fmt.Fprintf(&b, "FAILED after %s: %s", roundDur(e.ElapsedMS), termtext.Line(e.Error))
	case EventBlocked:
		fmt.Fprintf(&b, "not run: %s", termtext.Line(e.Reason))
	case EventDryRun:
		b.WriteString("would:")
	case EventWarning:
		fmt.Fprintf(&b, "warning: %s", termtext.Line(e.Reason))
	case EventProgress:
		b.WriteString(termtext.Line(e.Reason))
	default:
		b.WriteString(string(e.Type))
	}
	b.WriteByte('\n')
	indent := strings.Repeat(" ", 10)
	for _, a := range e.Actions {
		for _, l := range outputLines(a) {
			fmt.Fprintf(&b, "%s  %s\n", indent, l)
		}
	}
	if e.Output != "" {
		for _, l := range outputLines(e.Output) {
			fmt.Fprintf(&b, "%s| %s\n", indent, l)
		}
	}
	r.write(b.String())
}

// outputLines are the lines of s (LF or CRLF), each escaped.
func outputLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	for i, l := range lines {
		lines[i] = termtext.Line(strings.TrimSuffix(l, "\r"))
	}
	return lines
}

func (r *TextReporter) write(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = io.WriteString(r.w, s)
}

func roundDur(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
