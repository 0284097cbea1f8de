package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEachOrderAndContent: Each emits the files Render returns, each once,
// in a fixed order (the cluster's files first, the nodes' in plan order,
// the runbook last), the same on every run.
func TestEachOrderAndContent(t *testing.T) {
	p := labPlan(t)
	want, err := Render(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var orders [2][]string
	for run := range orders {
		got := map[string]File{}
		if err := Each(p, Options{}, func(f File) error {
			if _, dup := got[f.Path]; dup {
				t.Fatalf("%s emitted twice", f.Path)
			}
			got[f.Path] = f
			orders[run] = append(orders[run], f.Path)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("Each emitted %d files, Render returns %d", len(got), len(want))
		}
		for _, f := range want {
			if g, ok := got[f.Path]; !ok || !reflect.DeepEqual(g, f) {
				t.Errorf("%s differs between Each and Render", f.Path)
			}
		}
	}
	if !reflect.DeepEqual(orders[0], orders[1]) {
		t.Errorf("two runs emit in different orders:\n%v\n%v", orders[0], orders[1])
	}
	o := orders[0]
	if o[0] != "cluster/kubeadm-config.yaml" || o[len(o)-1] != "runbook.md" {
		t.Errorf("order starts with %s and ends with %s", o[0], o[len(o)-1])
	}
	last := -1
	for _, n := range p.Nodes {
		for i, path := range o {
			if strings.HasPrefix(path, "nodes/"+n.Name+"/") {
				if i < last {
					t.Errorf("%s's files come before an earlier node's", n.Name)
				}
				last = i
			}
		}
	}
}

// TestEachStopsAtEmitError: the first error of emit ends Each with that
// error; emit is not called again, also with many nodes in flight.
func TestEachStopsAtEmitError(t *testing.T) {
	p := bigPlan(t, 200)
	stop := errors.New("disk full")
	for _, at := range []int{0, 5, 100} {
		calls := 0
		err := Each(p, Options{}, func(File) error {
			calls++
			if calls > at {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != at+1 {
			t.Errorf("error at call %d: %v after %d calls", at+1, err, calls)
		}
	}
	// A refused plan emits nothing.
	q := bigPlan(t, 3)
	q.Nodes[2].SSH.User = "-oProxyCommand=x"
	if err := Each(q, Options{}, func(f File) error { t.Fatalf("emitted %s", f.Path); return nil }); err == nil {
		t.Error("a refused plan rendered")
	}
}

// TestWriteEachAllOrNothing: when gen fails, a write fails or ctx is
// cancelled part-way, after files were written to the temporary
// directory, the output directory is as it was (absent, or the previous
// render) and nothing is left beside it.
func TestWriteEachAllOrNothing(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "out")
	many := func(n int, then error) func(func(File) error) error {
		return func(emit func(File) error) error {
			for i := range n {
				if err := emit(File{Path: "nodes/n" + strconv.Itoa(i) + "/prepare.sh", Data: []byte("x"), Mode: 0o755}); err != nil {
					return err
				}
			}
			return then
		}
	}
	check := func(what string, wantFiles int) {
		t.Helper()
		entries, _ := os.ReadDir(base)
		want := 0
		if wantFiles > 0 {
			want = 1
		}
		if len(entries) != want {
			t.Errorf("%s: left in %s: %v", what, base, entries)
		}
		if wantFiles > 0 {
			if got := readTree(t, out); len(got) != wantFiles {
				t.Errorf("%s: the previous render has %d files, want %d", what, len(got), wantFiles)
			}
		}
	}
	boom := errors.New("template failed")
	if _, err := WriteEach(context.Background(), out, false, many(300, boom)); !errors.Is(err, boom) {
		t.Errorf("gen error: %v", err)
	}
	check("gen error, no previous render", 0)
	dup := func(emit func(File) error) error {
		_ = emit(File{Path: "a", Data: []byte("1")})
		_ = emit(File{Path: "a", Data: []byte("2")})
		return many(50, nil)(emit)
	}
	if _, err := WriteEach(context.Background(), out, false, dup); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a write error: %v", err)
	}
	check("write error", 0)
	n, err := WriteEach(context.Background(), out, false, many(10, nil))
	if err != nil || n != 11 {
		t.Fatalf("a render of 10 files: %d files, %v", n, err)
	}
	if _, err := WriteEach(context.Background(), out, true, many(300, boom)); !errors.Is(err, boom) {
		t.Errorf("gen error over a previous render: %v", err)
	}
	check("gen error over a previous render", 11)
	ctx, cancel := context.WithCancel(context.Background())
	cancelling := func(emit func(File) error) error {
		if err := many(20, nil)(emit); err != nil {
			return err
		}
		cancel()
		return many(20, nil)(emit)
	}
	if _, err := WriteEach(ctx, out, true, cancelling); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	check("cancelled over a previous render", 11)
}
