// Package finding is the vocabulary every check catalogue of hybridctl
// shares: the severities and their order, the --fail-on threshold, counts
// by severity, and the JUnit writer. Doctor and lint's checks, the spec's
// rules, node diagnose, preflight and check connectivity all speak it, so
// "error" means one thing and sorts one way everywhere.
package finding

// Severity of a finding.
type Severity string

// Severities, most severe first.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Severities returns every severity, most severe first: the order tables
// are grouped in and --fail-on compares by.
func Severities() []Severity { return []Severity{Error, Warning, Info} }

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case Error:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Count counts items by severity: errors, warnings, and everything else
// as info (the summaries of doctor, lint and node diagnose).
func Count[T any](items []T, severity func(T) Severity) (errors, warnings, info int) {
	for _, it := range items {
		switch severity(it) {
		case Error:
			errors++
		case Warning:
			warnings++
		default:
			info++
		}
	}
	return errors, warnings, info
}

// FailNone is the --fail-on value that never fails.
const FailNone = "none"

// FailOn is a --fail-on threshold: findings at or above it make a command
// exit 1. The zero value (and FailNone) fails on nothing.
type FailOn struct{ min Severity }

// FailOnValues are the values --fail-on takes, most strict last.
func FailOnValues() []string { return []string{string(Error), string(Warning), string(Info), FailNone} }

// ParseFailOn reads a --fail-on value; ok is false for anything but
// FailOnValues (exactly, lower case).
func ParseFailOn(v string) (f FailOn, ok bool) {
	switch v {
	case FailNone:
		return FailOn{}, true
	case string(Error), string(Warning), string(Info):
		return FailOn{min: Severity(v)}, true
	}
	return FailOn{}, false
}

// Fails reports whether a finding of severity s is at or above the
// threshold. A severity outside the vocabulary never fails.
func (f FailOn) Fails(s Severity) bool {
	return f.min != "" && s.Rank() >= f.min.Rank()
}

// String is the --fail-on value.
func (f FailOn) String() string {
	if f.min == "" {
		return FailNone
	}
	return string(f.min)
}
