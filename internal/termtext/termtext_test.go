package termtext

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hostile is what the tests of every command feed where outside text goes:
// cursor up and erase line, a window title (OSC 0), a clipboard write (OSC
// 52), a bell, a carriage return, C1 CSI (U+009B) and a raw 0x9B byte, a
// right-to-left override.
const Hostile = "evil\x1b[1A\x1b[2K\x1b]0;title\x07\x1b]52;c;ZXZpbA==\x07\a\rfake\u009b2J\x9b\u202eok"

// raw are the sequences none of which may reach a terminal.
var raw = []string{"\x1b", "\a", "\r", "\u009b", "\x9b", "\u202e"}

func assertNoRaw(t *testing.T, what, got string) {
	t.Helper()
	for _, r := range raw {
		if strings.Contains(got, r) {
			t.Errorf("%s: %q holds %q raw", what, got, r)
		}
	}
}

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"k8s-lab-node-1":       "k8s-lab-node-1",
		"ünïcode and spaces":   "ünïcode and spaces",
		`C:\k\join.yaml`:       `C:\k\join.yaml`,
		"a\x1b[2Jb":            `a\x1b[2Jb`,
		"line\nbreak\ttab\rcr": `line\nbreak\ttab\rcr`,
		"c1\u009bcsi":          `c1\u009bcsi`,
		"raw\x9bbyte\xff":      `raw\x9bbyte\xff`,
		"bidi\u202eevil\u2066": `bidi\u202eevil\u2066`,
		"del\x7f nul\x00":      `del\x7f nul\x00`,
		"sep\u2028":            `sep\u2028`,
		"\x01":                 `\x01`,
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
		if IsSafe(in) != (in == want) {
			t.Errorf("IsSafe(%q) = %v", in, IsSafe(in))
		}
	}
	assertNoRaw(t, "Line", Line(Hostile))
}

func TestText(t *testing.T) {
	in := "first line\n\tindented\r\nwindows line\x1b[2K\rover\n"
	want := "first line\n\tindented\nwindows line\\x1b[2K\\rover\n"
	if got := Text(in); got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
	if got := Text("plain\nlines\n"); got != "plain\nlines\n" {
		t.Errorf("Text changed plain lines: %q", got)
	}
	assertNoRaw(t, "Text", Text(Hostile))
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"k8s-lab-node-1":          "k8s-lab-node-1",
		"evil\x1b[2J.example.com": `"evil\x1b[2J.example.com"`,
		"tab\tname":               `"tab\tname"`,
		"":                        "",
		"ünï":                     `"\u00fcn\u00ef"`,
		"two words":               `"two words"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
	assertNoRaw(t, "Name", strings.Join(Names([]string{Hostile, "ok"}), ", "))
}

// TestEncodersAndTheirEscapes: encoding/json and encoding/xml leave DEL, C1
// and bidirectional controls raw; JSON and XML escape them so that the
// documents decode to the same values.
func TestEncodersAndTheirEscapes(t *testing.T) {
	type doc struct {
		Message string `json:"message" xml:"message,attr"`
		Text    string `json:",omitempty" xml:",chardata"`
	}
	in := doc{Message: Hostile, Text: Hostile + "\x7f"}

	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jb.String(), "\u009b") {
		t.Fatalf("encoding/json escaped U+009B itself; this test proves nothing: %q", jb.String())
	}
	j := JSON(jb.Bytes())
	assertNoRaw(t, "JSON", string(j))
	if bytes.ContainsRune(j, 0x7f) {
		t.Errorf("JSON keeps DEL raw: %q", j)
	}
	var back doc
	if err := json.Unmarshal(j, &back); err != nil || back.Message != strings.ToValidUTF8(Hostile, "\ufffd") {
		t.Errorf("JSON does not decode to the same value: %v %q", err, back.Message)
	}
	if !strings.Contains(string(j), "\n  \"message\"") {
		t.Errorf("JSON lost the indentation: %q", j)
	}

	xb, err := xml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	x := XML(xb)
	assertNoRaw(t, "XML", string(x))
	var xback doc
	if err := xml.Unmarshal(x, &xback); err != nil {
		t.Fatalf("XML does not parse: %v\n%s", err, x)
	}
	if !strings.Contains(xback.Message, "\u009b") || !strings.Contains(xback.Message, "\u202e") {
		t.Errorf("XML lost the escaped runes: %q", xback.Message)
	}
	if clean := []byte(`{"a": "b"}`); &JSON(clean)[0] != &clean[0] {
		t.Errorf("JSON copied a clean document")
	}
}

func FuzzLine(f *testing.F) {
	f.Add(Hostile)
	f.Add("plain")
	f.Add("\xff\xfe\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		for name, got := range map[string]string{"Line": Line(s), "Text": Text(s), "Name": Name(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("%s(%q) = %q is not UTF-8", name, s, got)
			}
			for _, r := range got {
				if unsafe(r) && !(name == "Text" && (r == '\n' || r == '\t')) {
					t.Fatalf("%s(%q) = %q keeps %U", name, s, got, r)
				}
			}
		}
		if IsSafe(s) && Line(s) != s {
			t.Fatalf("Line changed the safe %q", s)
		}
	})
}
