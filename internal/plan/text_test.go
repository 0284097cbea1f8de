package plan

import (
	"bytes"
	"errors"
	"testing"
)

// failAfter accepts limit bytes, then fails every write and counts them.
type failAfter struct {
	limit   int
	written bytes.Buffer
	failed  int
}

var errFull = errors.New("disk full")

func (w *failAfter) Write(b []byte) (int, error) {
	if w.written.Len()+len(b) > w.limit {
		w.failed++
		return 0, errFull
	}
	return w.written.Write(b)
}

// TestWriteTextWriteError: the first write error is returned, and nothing is
// written (or tried) after it, wherever in the text it happens: in the
// heading, in a table, in the warnings.
func TestWriteTextWriteError(t *testing.T) {
	p := deriveFile(t, "../spec/testdata/valid/two-builds.yaml")
	var full bytes.Buffer
	if err := p.WriteText(&full); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, 10, full.Len() / 2, full.Len() - 1} {
		w := &failAfter{limit: limit}
		if err := p.WriteText(w); !errors.Is(err, errFull) {
			t.Errorf("limit %d of %d bytes: WriteText returned %v, want %v", limit, full.Len(), err, errFull)
		}
		if w.failed != 1 {
			t.Errorf("limit %d: %d writes tried after they failed, want 1 (the one that failed)", limit, w.failed)
		}
		if !bytes.HasPrefix(full.Bytes(), w.written.Bytes()) {
			t.Errorf("limit %d: what was written is not the start of the text:\n%s", limit, w.written.Bytes())
		}
	}
	w := &failAfter{limit: full.Len()}
	if err := p.WriteText(w); err != nil || !bytes.Equal(w.written.Bytes(), full.Bytes()) {
		t.Errorf("a writer that takes exactly the text: %v, %d of %d bytes", err, w.written.Len(), full.Len())
	}
}
