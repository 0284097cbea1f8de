package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseBound is far beyond what Parse takes on any input the fuzzer makes
// (milliseconds): an input that takes longer is a hang, not slowness.
const parseBound = 10 * time.Second

// FuzzParse feeds arbitrary bytes to the loader: it must never panic nor
// hang, and what it returns must be consistent: either a cluster and no
// error, or errors; every diagnostic has a message, the file and a line
// inside the input; a message holds no control character the input did not
// have (a value is quoted, never printed raw), and an error-free cluster
// has versions that are strict release versions and node counts within
// MaxNodes.
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
	f.Add([]byte("apiVersion: v: 1\n kind: Cluster\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		r := Parse("fuzz.yaml", data)
		if d := time.Since(start); d > parseBound {
			t.Fatalf("Parse took %v on %d bytes", d, len(data))
		}
		if r.Err() == nil && r.Cluster == nil {
			t.Fatalf("no errors but no cluster")
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, d := range r.Diagnostics {
			if d.Message == "" {
				t.Fatalf("diagnostic without a message: %+v", d)
			}
			if d.File != "fuzz.yaml" {
				t.Fatalf("diagnostic names file %q", d.File)
			}
			if d.Line < 1 || d.Line > lines {
				t.Fatalf("diagnostic at line %d of a %d-line input: %s", d.Line, lines, d)
			}
			for _, c := range []string{"\x00", "\x1b", "\r", "\x07"} {
				if strings.Contains(d.String(), c) && !bytes.Contains(data, []byte(c)) {
					t.Fatalf("%q invented in %q", c, d.String())
				}
				if strings.Contains(d.Message, c) {
					t.Fatalf("control character %q printed raw in %q", c, d.String())
				}
			}
		}
		if r.Err() != nil {
			return
		}
		s := r.Cluster.Spec
		if len(s.Nodes) > MaxNodes {
			t.Fatalf("a valid spec with %d nodes", len(s.Nodes))
		}
		for _, v := range []string{s.KubernetesVersion, s.Calico.Version, s.Containerd.Version, s.Crictl.Version, s.Runc.Version, s.CNIPlugins.Version} {
			if _, err := ParseVersion(v); err != nil {
				t.Fatalf("a valid spec with version %q: %v", v, err)
			}
		}
	})
}
