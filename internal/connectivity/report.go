// The report of a run: each action's outcome with its evidence, the
// probes' status and the summary.

package connectivity

// Result is a test action's outcome.
type Result string

// Results (design §5: pass, fail or skipped). An action that could not run
// (its probes never got ready, the run was interrupted) is skipped with
// NotRun set and a reason starting "not run:".
const (
	Pass    Result = "pass"
	Fail    Result = "fail"
	Skipped Result = "skipped"
)

// Evidence is what a probe ran and what it printed.
type Evidence struct {
	Command  string `json:"command"`
	Output   string `json:"output"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Attempts int    `json:"attempts"`
}

// Outcome is one action's result: a row of the report.
type Outcome struct {
	Name     string    `json:"name"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Result   Result    `json:"result"`
	NotRun   bool      `json:"notRun,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Fix      string    `json:"fix,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
}

// ProbeStatus is a probe pod as the run found it.
type ProbeStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Node      string `json:"node"`
	OS        string `json:"os"`
	Image     string `json:"image"`
	Ready     bool   `json:"ready"`
	IP        string `json:"ip,omitempty"`
	// Status says why a probe is not ready.
	Status string `json:"status,omitempty"`
}

// Summary counts the outcomes.
type Summary struct {
	Total   int `json:"total"`
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
	NotRun  int `json:"notRun"`
}

// Report is the whole run (check connectivity -o json).
type Report struct {
	Namespace string        `json:"namespace"`
	Tests     []Outcome     `json:"tests"`
	Probes    []ProbeStatus `json:"probes"`
	Excluded  []Excluded    `json:"excludedNodes"`
	// Problems are what kept the run from completing (setup, readiness,
	// cleanup), in order.
	Problems []string `json:"problems,omitempty"`
	Summary  Summary  `json:"summary"`
}

func (r *Report) count() {
	s := Summary{Total: len(r.Tests)}
	for _, o := range r.Tests {
		switch {
		case o.Result == Pass:
			s.Pass++
		case o.Result == Fail:
			s.Fail++
		case o.NotRun:
			s.NotRun++
		default:
			s.Skipped++
		}
	}
	r.Summary = s
}
