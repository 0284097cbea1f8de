package connectivity

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// goldenReport has a test of every outcome (pass, fail with evidence and
// fix, skipped, not run), two actions under one test, a problem, and text
// from outside with escape sequences, C1 controls and a bidirectional
// override in it.
func goldenReport() *Report {
	code := 7
	r := &Report{Namespace: "hybridctl-conn-x",
		Tests: []Outcome{
			{Name: "pod-to-pod-same-node", From: "linux/a", To: "linux/b", Result: Pass},
			{Name: "pod-to-pod-same-node", From: "windows/a\u202e", To: "windows/b", Result: Fail, Reason: "connection refused \x1b[2K",
				Fix: "the node's pod networking", Evidence: &Evidence{Command: "agnhost connect 10.0.0.1:8080", Output: "line one\nline two \x9b\r", ExitCode: &code, Attempts: 3}},
			{Name: "dns-fqdn", From: "linux/a", To: "kubernetes.default", Result: Fail, Reason: "no answer"},
			{Name: "linux-to-windows-pod", From: "linux", To: "windows", Result: Skipped, Reason: "no schedulable Windows node"},
			{Name: "egress", From: "windows/a", To: "example.com:443", Result: Skipped, NotRun: true, Reason: "not run: probe never ready \x07"},
		},
		Problems: []string{"cleanup: namespace still terminating"},
	}
	r.count()
	return r
}

// TestGolden: check connectivity's json, junit and table output, byte for
// byte. The shapes are contracts (docs/design.md §5).
func TestGolden(t *testing.T) {
	for _, format := range Formats() {
		var b bytes.Buffer
		if err := Write(&b, format, goldenReport()); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", "report."+format)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, b.Bytes(), want)
		}
	}
}
