package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"swap", "time-sync", "clock-skew", "port-free", "all"}
	for _, tc := range []struct {
		word, want string
		ok         bool
	}{
		{"swapp", "swap", true},
		{"SWAP", "swap", true},
		{"time-synk", "time-sync", true},
		{"portfree", "port-free", true},
		{"clock", "", false},   // 5 edits away
		{"sw", "", false},      // 2 edits, but half the word
		{"al", "all", true},    // 1 edit of 2 letters
		{"xyz", "", false},     // nothing near
		{"swab", "swap", true}, // 1 of 4
		{"sxab", "swap", true}, // 2 of 4
		{"sxxb", "", false},    // 3 edits
		{"sawp", "swap", true}, // a swap of neighbours is 1 edit
		{"wspa", "swap", true}, // two swaps: 2 of 4
		{"lal", "all", true},   // 1 substitution of 3
		{"", "", false},        // empty word
	} {
		got, ok := Closest(tc.word, names)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.word, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Closest("x", nil); ok {
		t.Error("no candidates")
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"größe", "grösse", 2}, {"abc", "abc", 0}} {
		if got := Distance(tc.a, tc.b); got != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
