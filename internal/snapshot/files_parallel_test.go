package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

// badYAML is a document yaml.v3 refuses.
const badYAML = "apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n"

// manyFiles writes files of pods whose names say their file and line, of
// varied sizes: some over the pooled size (maxPooled), one whose JSON is
// over what a worker's converter keeps (manifest.MaxKept), a document yaml.v3
// refuses in file 7 and one with a field of the wrong type in file 4. It
// returns the directory and the two documents' first lines.
func manyFiles(t *testing.T) (dir string, bad, wrongType int) {
	t.Helper()
	dir = t.TempDir()
	for f := range 12 {
		var b strings.Builder
		line := 1
		for i := range 150 {
			b.WriteString("---\n")
			line++
			switch {
			case f == 7 && i == 77:
				bad = line
				b.WriteString(badYAML)
				line += 3
				continue
			case f == 4 && i == 50:
				wrongType = line
				b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\n")
				line += 3
				continue
			}
			pad := strings.Repeat("x", (i%5)*40)
			switch {
			case i == 20:
				pad = strings.Repeat("y", maxPooled+100)
			case f == 3 && i == 30:
				pad = strings.Repeat("z", manifest.MaxKept+100)
			}
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: f%d-l%d-i%d\n  namespace: ns-%d\n  annotations: {pad: %s}\n  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs-%d, controller: true}]\nspec:\n  nodeName: node-%d\nstatus:\n  phase: Running\n",
				f, line, i, i%7, pad, i%3, i%11)
			line += 11
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pods-%02d.yaml", f)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, bad, wrongType
}

// TestLoadParallelManyFiles: decoding on several workers, with storage
// reused between documents, gives what one worker gives, in the same
// order; every pod keeps its own fields; the broken document's error names
// its file and line.
func TestLoadParallelManyFiles(t *testing.T) {
	dir, bad, wrongType := manyFiles(t)
	// Where yaml.v3 puts the error in badYAML on its own, moved to
	// where the document starts in file 7.
	alone := load(t, FileOptions{}, "bad.yaml", badYAML)
	if len(alone.Diagnostics) != 1 {
		t.Fatalf("badYAML alone: %v", alone.Diagnostics)
	}
	badLine := bad + alone.Diagnostics[0].Line - 1
	load := func(workers int) *Snapshot {
		s, err := FileOptions{Workers: workers}.Load(context.Background(), []string{dir}, nil)
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		return s
	}
	one, four := load(1), load(4)
	if !reflect.DeepEqual(one.Pods, four.Pods) || !reflect.DeepEqual(one.Diagnostics, four.Diagnostics) {
		t.Fatal("1 and 4 workers read different snapshots")
	}
	if len(four.Pods) != 12*150-2 {
		t.Fatalf("%d pods, want %d", len(four.Pods), 12*150-2)
	}
	// Every pod once, with its own fields.
	seen := map[string]bool{}
	for _, p := range four.Pods {
		var f, l, i int
		if _, err := fmt.Sscanf(p.Name, "f%d-l%d-i%d", &f, &l, &i); err != nil {
			t.Fatalf("pod %q: %v", p.Name, err)
		}
		if seen[p.Name] || p.Namespace != fmt.Sprintf("ns-%d", i%7) || p.Owner.Name != fmt.Sprintf("rs-%d", i%3) ||
			p.Owner.Kind != "ReplicaSet" || p.Status.Phase != "Running" || p.NodeName != fmt.Sprintf("node-%d", i%11) {
			t.Fatalf("pod %s/%s (seen before: %v): %+v", p.Namespace, p.Name, seen[p.Name], p)
		}
		seen[p.Name] = true
	}
	if len(four.Diagnostics) != 2 {
		t.Fatalf("diagnostics: %v", four.Diagnostics)
	}
	for i, want := range []struct {
		file string
		line int
		msg  string
	}{{"pods-04.yaml", wrongType, "metadata.name must be a string, not"}, {"pods-07.yaml", badLine, "cannot read this YAML document"}} {
		d := four.Diagnostics[i]
		if filepath.Base(d.File) != want.file || d.Line != want.line || d.Severity != finding.Error || !strings.Contains(d.Message, want.msg) {
			t.Errorf("diagnostic %d: %s, want %s:%d: %s", i, d, want.file, want.line, want.msg)
		}
	}
}

// TestLoadParallelLines: bare pods (kept with their Source) read on four
// workers each carry the line their name gives.
func TestLoadParallelLines(t *testing.T) {
	dir := t.TempDir()
	for f := range 6 {
		var b strings.Builder
		line := 1
		for i := range 200 {
			fmt.Fprintf(&b, "# %d\n---\n", i)
			line += 2
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: f%d-l%d, namespace: default}\nspec:\n  containers: [{name: c, image: \"i:%d\"}]\n", f, line, i)
			line += 5
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.yaml", f)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := FileOptions{Workers: 4}.Load(context.Background(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Workloads) != 6*200 {
		t.Fatalf("%d workloads, %d pods, %v", len(s.Workloads), len(s.Pods), s.Diagnostics[:min(3, len(s.Diagnostics))])
	}
	for _, w := range s.Workloads {
		var f, l int
		if _, err := fmt.Sscanf(w.Meta.Name, "f%d-l%d", &f, &l); err != nil {
			t.Fatal(err)
		}
		if w.Source.Line != l || filepath.Base(w.Source.File) != fmt.Sprintf("p%d.yaml", f) {
			t.Fatalf("%s read at %s:%d", w.Meta.Name, w.Source.File, w.Source.Line)
		}
	}
}

// cancelAfter is a stream of pods that cancels the load's context once n
// bytes have been read, and goes on giving pods.
type cancelAfter struct {
	n, read int
	cancel  func()
	pod     []byte
	off     int
}

func (c *cancelAfter) Read(b []byte) (int, error) {
	if c.read >= c.n {
		c.cancel()
	}
	if c.read > 100*c.n {
		return 0, io.EOF // the load did not stop
	}
	k := 0
	for k < len(b) {
		m := copy(b[k:], c.pod[c.off:])
		k += m
		c.off = (c.off + m) % len(c.pod)
	}
	c.read += k
	return k, nil
}

// TestLoadCancelledMidway: cancelling the context while the workers are
// decoding stops the load with the context's error.
func TestLoadCancelledMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &cancelAfter{n: 1 << 20, cancel: cancel,
		pod: []byte("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, ownerReferences: [{kind: ReplicaSet, name: r}]}\n")}
	_, err := FileOptions{Workers: 2}.Load(ctx, []string{Stdin}, r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if r.read > 100*r.n {
		t.Fatal("the load went on reading after its context was cancelled")
	}
}

// TestLoadPodsDoNotShareFields: a pod without a field after one with it
// (the decoding struct is reused) has it empty.
func TestLoadPodsDoNotShareFields(t *testing.T) {
	full := "apiVersion: v1\nkind: Pod\nmetadata: {name: full-%d, namespace: a, labels: {k8s-app: dns}, ownerReferences: [{kind: ReplicaSet, name: r, controller: true}]}\nspec: {nodeName: n1}\nstatus: {phase: Running, containerStatuses: [{name: c, ready: true}]}\n"
	bare := "apiVersion: v1\nkind: Pod\nmetadata: {name: bare-%d, ownerReferences: [{kind: DaemonSet, name: d}]}\n"
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "---\n"+full+"---\n"+bare, i, i)
	}
	for _, workers := range []int{1, 3} {
		s, err := FileOptions{Workers: workers}.Load(context.Background(), []string{Stdin}, strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Pods) != 100 {
			t.Fatalf("%d pods", len(s.Pods))
		}
		for _, p := range s.Pods {
			if strings.HasPrefix(p.Name, "bare-") {
				if p.Namespace != "" || p.NodeName != "" || p.App != "" || p.Status.Phase != "" || p.Status.ContainerStatuses != nil ||
					p.Owner.Kind != "DaemonSet" || p.Owner.Controller != nil {
					t.Fatalf("%d workers: pod %s has another pod's fields: %+v", workers, p.Name, p)
				}
			} else if p.Namespace != "a" || p.NodeName != "n1" || p.App != "dns" || !p.Status.Ready() || p.Owner.Kind != "ReplicaSet" {
				t.Fatalf("%d workers: pod %s: %+v", workers, p.Name, p)
			}
		}
	}
}
