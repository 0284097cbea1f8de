package finding

import "testing"

func TestSeverityRankAndCount(t *testing.T) {
	for s, want := range map[Severity]int{Error: 3, Warning: 2, Info: 1, "": 0, "fatal": 0, "Error": 0} {
		if got := s.Rank(); got != want {
			t.Errorf("%q.Rank() = %d, want %d", s, got, want)
		}
	}
	if got := Severities(); len(got) != 3 || got[0] != Error || got[1] != Warning || got[2] != Info {
		t.Errorf("Severities() = %v, want most severe first", got)
	}
	items := []Severity{Info, Error, Warning, Warning, "", Info, "other", Error, Error}
	e, w, i := Count(items, func(s Severity) Severity { return s })
	if e != 3 || w != 2 || i != 4 {
		t.Errorf("Count = %d errors, %d warnings, %d info; want 3, 2, 4", e, w, i)
	}
	if e, w, i := Count([]Severity(nil), func(s Severity) Severity { return s }); e != 0 || w != 0 || i != 0 {
		t.Errorf("Count(nil) = %d, %d, %d", e, w, i)
	}
}

// TestFailOn: every threshold against every severity, both sides of each
// limit, and the values --fail-on refuses.
func TestFailOn(t *testing.T) {
	want := map[string]map[Severity]bool{
		"error":   {Error: true, Warning: false, Info: false, "": false, "fatal": false},
		"warning": {Error: true, Warning: true, Info: false, "": false, "fatal": false},
		"info":    {Error: true, Warning: true, Info: true, "": false, "fatal": false},
		"none":    {Error: false, Warning: false, Info: false, "": false, "fatal": false},
	}
	if len(want) != len(FailOnValues()) {
		t.Fatalf("FailOnValues() = %v", FailOnValues())
	}
	for _, v := range FailOnValues() {
		f, ok := ParseFailOn(v)
		if !ok {
			t.Fatalf("ParseFailOn(%q) refused", v)
		}
		if f.String() != v {
			t.Errorf("ParseFailOn(%q).String() = %q", v, f.String())
		}
		for s, fails := range want[v] {
			if got := f.Fails(s); got != fails {
				t.Errorf("--fail-on %s: Fails(%q) = %v, want %v", v, s, got, fails)
			}
		}
	}
	for _, v := range []string{"", "Error", "WARNING", "fatal", " error", "all"} {
		if _, ok := ParseFailOn(v); ok {
			t.Errorf("ParseFailOn(%q) accepted", v)
		}
	}
	if (FailOn{}).Fails(Error) || (FailOn{}).String() != FailNone {
		t.Error("the zero FailOn must fail on nothing")
	}
}
