package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type cut struct {
	Line, Number int
	Source       string
	Item, Large  bool
	Data         string
}

func split(t *testing.T, s Splitter, in string) []cut {
	t.Helper()
	var out []cut
	err := s.Split(context.Background(), strings.NewReader(in), func(d *Document) error {
		out = append(out, cut{d.Line, d.Number, d.Source, d.Item, d.TooLarge, string(d.Data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSplitDocuments(t *testing.T) {
	in := "# a comment\n\n# Source: chart/templates/a.yaml\na: 1\n---\n--- # nothing\n---\n# only a comment\n...\n--- {b: 2}\nc: 3\n---\r\nd: 4\r\n...\ne: 5\n"
	got := split(t, Splitter{}, in)
	want := []cut{
		{4, 1, "chart/templates/a.yaml", false, false, "a: 1\n"},
		{10, 2, "", false, false, "{b: 2}\nc: 3\n"},
		{13, 3, "", false, false, "d: 4\n"},
		{15, 4, "", false, false, "e: 5\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// The last line without a line break: its document ends as the
	// stream does (a literal block's value has no line break either).
	if got := split(t, Splitter{Items: true}, "a: 1\n---\nb: |\n  x"); len(got) != 2 || got[1].Data != "b: |\n  x" {
		t.Errorf("no final line break: %+v", got)
	}
	if got := split(t, Splitter{Items: true}, "items:\n- a"); len(got) != 2 || got[0].Data != "  a" {
		t.Errorf("no final line break in an item: %+v", got)
	}
	docs := Documents([]byte(in))
	if len(docs) != 4 || string(docs[1].Data) != "{b: 2}\nc: 3\n" || docs[1].Line != 10 || docs[3].Number != 4 {
		t.Errorf("Documents: %+v", docs)
	}
}

// TestSplitItems: a List's items come one by one, each at its line, the
// dash turned into a space; the List's other lines follow as its head,
// whose lines map back to the stream around the items.
func TestSplitItems(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n# first\n- kind: A\n  n: 1\n\n-   kind: B\n    n: 2\nmetadata: {x: 1}\n---\nitems: [inline]\n---\nitems:\nnot: a list\n"
	got := split(t, Splitter{Items: true}, in)
	want := []cut{
		{5, 1, "", true, false, "  kind: A\n  n: 1\n\n"},
		{8, 1, "", true, false, "    kind: B\n    n: 2\n"},
		{1, 1, "", false, false, "apiVersion: v1\nkind: List\nitems:\n# first\nmetadata: {x: 1}\n"},
		{12, 2, "", false, false, "items: [inline]\n"},
		{14, 3, "", false, false, "items:\nnot: a list\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	var head *Document
	_ = Splitter{Items: true}.Split(context.Background(), strings.NewReader(in), func(d *Document) error {
		if !d.Item && head == nil {
			c := *d
			head = &c
		}
		return nil
	})
	for n, line := range map[int]int{1: 1, 4: 4, 5: 10} {
		if got := head.Lines.Line(n); got != line {
			t.Errorf("the head's line %d maps to %d, want %d", n, got, line)
		}
	}
	// Without Items, the List is one document.
	if got := split(t, Splitter{}, in); len(got) != 3 || got[0].Line != 1 || got[0].Item {
		t.Errorf("without Items: %+v", got)
	}
}

// TestSplitTooLarge: both sides of the cap, for a document, an item and a
// line; what is over the cap is skipped and the next document is read.
func TestSplitTooLarge(t *testing.T) {
	doc := "a: " + strings.Repeat("x", 12) + "\n" // 16 bytes
	got := split(t, Splitter{MaxDocument: 16}, doc+"---\n"+doc+"b: 1\n---\nc: 1\n")
	want := []cut{{1, 1, "", false, false, doc}, {3, 2, "", false, true, ""}, {6, 3, "", false, false, "c: 1\n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("documents: got %+v\nwant %+v", got, want)
	}
	item := "- " + strings.Repeat("y", 13) + "\n" // 16 bytes as an item
	got = split(t, Splitter{MaxDocument: 16, Items: true}, "items:\n"+item+item[:len(item)-1]+"z\n"+item)
	want = []cut{{2, 1, "", true, false, "  " + item[2:]}, {3, 1, "", true, true, ""}, {4, 1, "", true, false, "  " + item[2:]}, {1, 1, "", false, false, "items:\n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("items: got %+v\nwant %+v", got, want)
	}
	// A line longer than the cap is never held.
	got = split(t, Splitter{MaxDocument: 16}, "a: "+strings.Repeat("x", 100000)+"\n---\nb: 1\n")
	if len(got) != 2 || !got[0].Large || got[0].Line != 1 || got[1].Data != "b: 1\n" {
		t.Errorf("a long line: %+v", got)
	}
	long := strings.Repeat("x", 100)
	for in, want := range map[string][]cut{
		"items:\n" + long + "\n":                       {{1, 1, "", false, true, ""}},
		"items:\n- a: 1\n  b: " + long + "\n- c: 1\n":  {{2, 1, "", true, true, ""}, {4, 1, "", true, false, "  c: 1\n"}, {1, 1, "", false, false, "items:\n"}},
		"items:\n- a: 1\n" + long + "\n":               {{2, 1, "", true, true, ""}, {1, 1, "", false, false, "items:\n"}},
		"# Source: x\n" + long + "\nb: 1\n---\nc: 1\n": {{2, 1, "x", false, true, ""}, {5, 2, "", false, false, "c: 1\n"}},
	} {
		if got := split(t, Splitter{MaxDocument: 16, Items: true}, in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\ngot  %+v\nwant %+v", in, got, want)
		}
	}
}

// TestSplitStops: emit's error and a read error end the split; a
// cancelled context stops it before the next document.
func TestSplitStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Splitter{}.Split(context.Background(), strings.NewReader("a: 1\n---\nb: 2\n"), func(*Document) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("emit's error: %v after %d documents", err, n)
	}
	broken := io.MultiReader(strings.NewReader("a: 1\n---\nb: "), iotestErr{})
	if err := (Splitter{}).Split(context.Background(), broken, func(*Document) error { return nil }); !errors.Is(err, errRead) {
		t.Errorf("read error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Splitter{}).Split(ctx, strings.NewReader("a: 1\n"), func(*Document) error { t.Error("emitted after cancel"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

var errRead = errors.New("read failed")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errRead }

// checkSplit: on a stream yaml.v3 reads whole, the documents the splitter
// cuts are yaml.v3's documents, and with Items each item of a List is
// its own document, in order. yaml.v3's decoder of the whole stream is
// the oracle.
func checkSplit(t *testing.T, in []byte) {
	t.Helper()
	if bytes.Contains(in, []byte("\n%")) || bytes.HasPrefix(in, []byte("%")) || bytes.IndexByte(in, '\r') >= 0 {
		return // directives and bare CRs: the splitter's limits, documented
	}
	var want []any
	dec := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return // not YAML: nothing to compare
		}
		if v != nil {
			want = append(want, v)
		}
	}
	var got []any
	for _, d := range Documents(in) {
		var v any
		if err := yaml.Unmarshal(d.Data, &v); err != nil {
			t.Fatalf("document %d (line %d) of a stream yaml.v3 reads: %v\n%q\nstream %q", d.Number, d.Line, err, d.Data, in)
		}
		if v != nil {
			got = append(got, v)
		}
	}
	if !reflect.DeepEqual(fmt.Sprint(got), fmt.Sprint(want)) {
		t.Fatalf("stream %q:\nsplit   %v\nyaml.v3 %v", in, got, want)
	}
}

func TestSplitOracle(t *testing.T) {
	for _, in := range splitSeeds {
		checkSplit(t, []byte(in))
	}
}

var splitSeeds = []string{
	"a: 1\n---\nb: 2\n...\n---\nc: [3]\n",
	"--- {a: 1}\n--- |\n  text\n---\n- x\n",
	"# c\n---\n# only\n---\nk: v\n",
	"a: |\n  ---x\n  y\nb: 1\n",
	"apiVersion: v1\nkind: List\nitems:\n- a: 1\n- b: [2]\n",
}

// FuzzSplit: the splitter against yaml.v3's own reading of the stream.
func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkSplit(t, []byte(in))
	})
}
