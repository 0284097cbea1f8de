package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader: it must never panic, and
// what it returns must be consistent (a result without errors has a
// cluster; every diagnostic has a message and a location).
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "testdata/valid/*.yaml", "testdata/invalid/*.yaml", "../../examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("spec: {nodes: [{name: a, os: windows}], network: {blockSize: 99}}"))
	f.Add([]byte("apiVersion: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := Parse("fuzz.yaml", data)
		if r.Err() == nil && r.Cluster == nil {
			t.Fatalf("no errors but no cluster")
		}
		for _, d := range r.Diagnostics {
			if d.Message == "" {
				t.Fatalf("diagnostic without a message: %+v", d)
			}
			if d.File != "fuzz.yaml" {
				t.Fatalf("diagnostic names file %q", d.File)
			}
			if strings.ContainsRune(d.String(), '\x00') && !strings.ContainsRune(string(data), '\x00') {
				t.Fatalf("NUL invented in %q", d.String())
			}
		}
	})
}
