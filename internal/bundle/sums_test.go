package bundle

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParseSumsAccepts(t *testing.T) {
	src := hexB + "  linux-amd64/kubelet\n" + hexA + " *windows-amd64/kubelet.exe\n" + hexA + "  manifests/tigera-operator.yaml"
	sums, err := ParseSums(strings.NewReader(src), "SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	want := []Sum{{hexB, "linux-amd64/kubelet"}, {hexA, "windows-amd64/kubelet.exe"}, {hexA, "manifests/tigera-operator.yaml"}}
	if len(sums) != len(want) {
		t.Fatalf("got %+v", sums)
	}
	for i := range want {
		if sums[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i+1, sums[i], want[i])
		}
	}
	// FormatSums sorts and uses text mode; the result parses back the same.
	out := FormatSums(sums)
	wantOut := hexB + "  linux-amd64/kubelet\n" + hexA + "  manifests/tigera-operator.yaml\n" + hexA + "  windows-amd64/kubelet.exe\n"
	if string(out) != wantOut {
		t.Errorf("FormatSums:\n%s\nwant\n%s", out, wantOut)
	}
	if again, err := ParseSums(bytes.NewReader(out), "x"); err != nil || len(again) != 3 {
		t.Errorf("round trip: %v %+v", err, again)
	}
	if empty, err := ParseSums(strings.NewReader(""), "x"); err != nil || len(empty) != 0 {
		t.Errorf("empty file: %v %+v", err, empty)
	}
}

// TestParseSumsRefusesHostile: every line a hostile or broken bundle could
// carry is refused with the file, the line number and the reason.
func TestParseSumsRefusesHostile(t *testing.T) {
	good := hexA + "  linux-amd64/kubelet\n"
	for _, c := range []struct{ name, src, want string }{
		{"parent", good + hexA + "  ../etc/passwd\n", `SHA256SUMS:2: "../etc/passwd" has a ".." element`},
		{"parent inside", hexA + "  linux-amd64/../../x\n", `:1: "linux-amd64/../../x" has a ".." element`},
		{"absolute", hexA + "  /etc/passwd\n", ":1: \"/etc/passwd\" is an absolute path"},
		{"windows absolute", hexA + "  C:/Windows/x\n", ":1: \"C:/Windows/x\" has a backslash or colon"},
		{"backslash", hexA + "  linux-amd64\\..\\x\n", ":1: "},
		{"duplicate", good + hexB + "  manifests/a.yaml\n" + hexB + "  linux-amd64/kubelet\n", ":3: linux-amd64/kubelet is listed again (first on line 1)"},
		{"dot", hexA + "  ./linux-amd64/kubelet\n", `has a "." element`},
		{"empty element", hexA + "  linux-amd64//kubelet\n", "empty path element"},
		{"trailing slash", hexA + "  linux-amd64/\n", "empty path element"},
		{"itself", hexA + "  SHA256SUMS\n", "cannot list itself"},
		{"crlf", hexA + "  linux-amd64/kubelet\r\n", ":1: ends in a carriage return"},
		{"empty line", good + "\n" + good, ":2: empty line"},
		{"escaped", "\\" + hexA + "  a\\nb\n", ":1: an escaped file name"},
		{"upper hex", strings.ToUpper(hexA) + "  x\n", "is not 64 lowercase hex digits"},
		{"short hex", hexA[:63] + "  x\n", ":1: "},
		{"one space", hexA + " x/y\n", "want two spaces"},
		{"tab", hexA + "\tx\n", "want two spaces"},
		{"no path", hexA + "  \n", ":1: "},
		{"space in path", hexA + "  a b\n", "printable ASCII"},
		{"non-ascii", hexA + "  a\u00e9\n", "printable ASCII"},
		{"nul", hexA + "  a\x00b\n", "printable ASCII"},
		{"md5", "d41d8cd98f00b204e9800998ecf8427e  x\n", ":1: "},
	} {
		_, err := ParseSums(strings.NewReader(c.src), "SHA256SUMS")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "SHA256SUMS:") {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
		var se *SumsError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: not a *SumsError: %T", c.name, err)
		}
	}
	big := strings.Repeat(good, MaxSumsBytes/len(good)+1)
	if _, err := ParseSums(strings.NewReader(big), "S"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized: %v", err)
	}
	// Just under the cap is read (distinct paths so no duplicate).
	var b strings.Builder
	for i := 0; b.Len()+100 < MaxSumsBytes; i++ {
		b.WriteString(hexA + "  f/" + strings.Repeat("x", 20) + string(rune('a'+i%26)) + "/" + itoa(i) + "\n")
	}
	if sums, err := ParseSums(strings.NewReader(b.String()), "S"); err != nil || len(sums) < 1000 {
		t.Errorf("just under the cap: %v (%d lines)", err, len(sums))
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestWriteSumsAtomicAndChecked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, SumsFile)
	if err := WriteSums(ctx, file, []Sum{{hexB, "b"}, {hexA, "a/x"}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != hexA+"  a/x\n"+hexB+"  b\n" {
		t.Errorf("written:\n%s", got)
	}
	st, _ := os.Stat(file)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	for _, bad := range [][]Sum{{{hexA, "../x"}}, {{hexA, "a"}, {hexB, "a"}}, {{"xyz", "a"}}} {
		if err := WriteSums(ctx, file, bad); err == nil {
			t.Errorf("WriteSums(%+v) succeeded", bad)
		}
	}
	if again, _ := os.ReadFile(file); !bytes.Equal(again, got) {
		t.Error("a refused write changed the file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left files: %v", entries)
	}
	if sums, err := ReadSums(ctx, file); err != nil || len(sums) != 2 {
		t.Errorf("ReadSums: %v %+v", err, sums)
	}
}

// FuzzParseSums: no panic; what parses has only safe paths, formats, and
// parses back to the same set.
func FuzzParseSums(f *testing.F) {
	f.Add([]byte(hexA + "  linux-amd64/kubelet\n"))
	f.Add([]byte(hexA + " *a\n" + hexB + "  b/c\n"))
	f.Add([]byte(hexA + "  ../x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := ParseSums(bytes.NewReader(data), "S")
		if err != nil {
			return
		}
		for _, s := range sums {
			if CheckPath(s.Path) != nil || strings.Contains(s.Path, "..") && strings.Contains("/"+s.Path+"/", "/../") {
				t.Fatalf("unsafe path accepted: %q", s.Path)
			}
			if filepath.IsAbs(s.Path) || strings.HasPrefix(s.Path, "/") {
				t.Fatalf("absolute path accepted: %q", s.Path)
			}
		}
		again, err := ParseSums(bytes.NewReader(FormatSums(sums)), "S")
		if err != nil || len(again) != len(sums) {
			t.Fatalf("formatted sums do not parse back: %v", err)
		}
	})
}
