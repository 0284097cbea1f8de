package hostfacts

import (
	"strings"
	"testing"
)

// FuzzSections: whatever a host prints, Split neither panics nor hangs,
// returns at most MaxSections sections each under MaxSectionBytes with a
// name seen once, and no section whose name came from a line without this
// run's marker. The corpus (testdata/fuzz/FuzzSections) holds near misses:
// another run's marker, a marker without @@, end lines of other sections
// or without an exit status, CR line ends, a duplicate.
func FuzzSections(f *testing.F) {
	other := "hybridctl-ffffffffffffffffffffffff"
	f.Add([]byte(BeginLine(testMarker, "a") + "\nx\n\n" + EndLine(testMarker, "a", 0) + "\n"))
	f.Add([]byte(BeginLine(other, "a") + "\nx\n" + EndLine(other, "a", 0) + "\n"))
	f.Add([]byte("@" + testMarker + " begin a\n" + testMarker + " begin b\n"))
	f.Add([]byte(BeginLine(testMarker, "a") + "\r\n" + EndLine(testMarker, "b", 0) + "\r\n@@" + testMarker + " end a\r\n@@" + testMarker + " end a -1\r\n"))
	f.Add([]byte(BeginLine(testMarker, "a") + "\n" + BeginLine(testMarker, "a") + "\n"))
	f.Add([]byte(BeginLine(testMarker, "") + "\n" + EndLine(testMarker, "", 7) + "\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		secs, err := Split(out, testMarker)
		if err != nil {
			return
		}
		if len(secs) == 0 || len(secs) > MaxSections {
			t.Fatalf("%d sections", len(secs))
		}
		seen := map[string]bool{}
		for _, s := range secs {
			if seen[s.Name] {
				t.Fatalf("section %q twice", s.Name)
			}
			seen[s.Name] = true
			if len(s.Out) > MaxSectionBytes+1 {
				t.Fatalf("section %q of %d bytes", s.Name, len(s.Out))
			}
			if !strings.Contains(string(out), "@@"+testMarker+" begin "+s.Name) {
				t.Fatalf("section %q without its begin line", s.Name)
			}
			if s.Closed != (s.RC >= 0 && s.RC <= 255) || !s.Closed && s.RC != -1 {
				t.Fatalf("section %+v: Closed and RC disagree", s)
			}
		}
	})
}
