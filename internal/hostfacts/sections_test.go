package hostfacts

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

const testMarker = "hybridctl-0123456789abcdef01234567"

func TestNewMarker(t *testing.T) {
	a, b := NewMarker(), NewMarker()
	if a == b || !strings.HasPrefix(a, "hybridctl-") || len(a) != len("hybridctl-")+24 {
		t.Errorf("markers %q, %q: want two different hybridctl- and 24 hex digits", a, b)
	}
	if err := ValidMarker(a); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "hybrid7", "hybridctl-0123456789 abcdef", "hybridctl-0123456789'abcdef", "hybridctl-0123456789\nabcdef"} {
		if err := ValidMarker(bad); err == nil {
			t.Errorf("marker %q accepted", bad)
		}
	}
	if err := ValidMarker("hybrid-8"); err != nil {
		t.Errorf("an 8-character marker: %v", err)
	}
	// Each end of each range is a word character; each neighbour is not.
	if err := ValidMarker("azAZ09-azAZ09"); err != nil {
		t.Errorf("the ranges' ends: %v", err)
	}
	for _, r := range "`{@[/:" {
		if err := ValidMarker("hybridctl" + string(r)); err == nil {
			t.Errorf("marker with %q accepted", r)
		}
	}
}

func TestSplit(t *testing.T) {
	b, e := func(n string) string { return BeginLine(testMarker, n) + "\n" }, func(n string, rc string) string {
		return "\n@@" + testMarker + " end " + n + " " + rc + "\n"
	}
	other := "hybridctl-ffffffffffffffffffffffff"
	out := "Welcome to the host\n@@" + other + " begin banner\n" +
		b("hostname") + "node-1" + e("hostname", "0") +
		"between sections\n" +
		b("cni-file /etc/cni/net.d/10-calico.conflist") + "{}\r\n@@" + testMarker + " end other 0\n@@" + testMarker + " end cni-file /etc/cni/net.d/10-calico.conflist x\n" +
		"@@" + other + " end cni-file /etc/cni/net.d/10-calico.conflist 0" + e("cni-file /etc/cni/net.d/10-calico.conflist", "2") +
		b("empty") + e("empty", "0") +
		b("open") + "last line\n"
	secs, err := Split([]byte(out), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	want := []Section{
		{Name: "hostname", Out: "node-1", RC: 0, Closed: true},
		{Name: "cni-file /etc/cni/net.d/10-calico.conflist", Out: "{}\n@@" + testMarker + " end other 0\n@@" + testMarker + " end cni-file /etc/cni/net.d/10-calico.conflist x\n@@" + other + " end cni-file /etc/cni/net.d/10-calico.conflist 0", RC: 2, Closed: true},
		{Name: "empty", Out: "", RC: 0, Closed: true},
		{Name: "open", Out: "last line\n", RC: -1, Closed: false},
	}
	if len(secs) != len(want) {
		t.Fatalf("sections %+v", secs)
	}
	for i := range want {
		if secs[i] != want[i] {
			t.Errorf("section %d: %+v, want %+v", i, secs[i], want[i])
		}
	}
	if m := ByName(secs); m["hostname"].Out != "node-1" || len(m) != 4 {
		t.Errorf("ByName: %+v", m)
	}
}

func TestSplitRefuses(t *testing.T) {
	b := func(n string) string { return BeginLine(testMarker, n) + "\n" }
	for _, tc := range []struct {
		name, out, want string
	}{
		{"no section", "just a banner\n", "no section"},
		{"another run's marker", BeginLine("hybridctl-ffffffffffffffffffffffff", "x") + "\n", "no section"},
		{"a marker without @@", testMarker + " begin x\n", "no section"},
		{"duplicate", b("a") + b("b") + b("a"), `section "a" appears twice`},
		{"duplicate closed", b("a") + "\n" + EndLine(testMarker, "a", 0) + "\n" + b("a"), `section "a" appears twice`},
		{"too many", strings.Repeat("x", 0) + manySections(MaxSections+1), "more than 256 sections"},
		{"section too long", b("big") + strings.Repeat(strings.Repeat("y", 1<<20)+"\n", 5), `section "big" is over`},
	} {
		_, err := Split([]byte(tc.out), testMarker)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Split([]byte("x"), ""); err == nil {
		t.Error("an empty marker accepted")
	}
	if _, err := Split([]byte(manySections(MaxSections)), testMarker); err != nil {
		t.Errorf("exactly %d sections: %v", MaxSections, err)
	}
	if _, err := Split(nil, testMarker); !errors.Is(err, ErrNoSections) {
		t.Errorf("empty output: %v", err)
	}
}

func manySections(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString(BeginLine(testMarker, "s"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i)) + "\n")
	}
	return sb.String()
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

// TestShellFunc runs ShellFunc's s in a real POSIX shell (dash): each
// section closes with the exit status of its last command, content without
// a final newline keeps its end line, the output splits back exactly.
func TestShellFunc(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		sh = "/bin/sh"
	}
	script := "set +e\n" + ShellFunc(testMarker) + `s one; echo hello
s no-newline; printf 'abc'
s failed; false
s empty
s 'two words'; printf 'a\nb\n'
s
echo after the last section
`
	out, err := exec.CommandContext(context.Background(), sh, "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	secs, err := Split(out, testMarker)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []Section{{"one", "hello\n", 0, true}, {"no-newline", "abc", 0, true}, {"failed", "", 1, true},
		{"empty", "", 0, true}, {"two words", "a\nb\n", 0, true}}
	if len(secs) != len(want) {
		t.Fatalf("sections %+v\n%s", secs, out)
	}
	for i := range want {
		if secs[i] != want[i] {
			t.Errorf("section %d: %+v, want %+v", i, secs[i], want[i])
		}
	}
}

// TestSectionsCannotBeFaked: a marker inside a line, another run's marker
// and the end line of another section are content; output cut short keeps
// its section, not closed.
func TestSectionsCannotBeFaked(t *testing.T) {
	m := "@@" + testMarker
	out := m + " begin kubelet-log\n" +
		"1796173140.0 n kubelet[1]: " + m + " end kubelet-log 0\n" +
		"@@other-marker end kubelet-log 0\n" +
		m + " end kubelet 0\n" +
		m + " end kubelet-log 0\n" +
		m + " begin api\nconnected\n" + m + " end api 0\n"
	secs, err := Split([]byte(out), testMarker)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 2 || secs[0].Name != "kubelet-log" || strings.Count(secs[0].Out, "\n") != 2 || !secs[1].Closed || secs[1].Out != "connected" {
		t.Fatalf("%+v", secs)
	}
	secs, err = Split([]byte(m+" begin links\n[{\"ifname\""), testMarker)
	if err != nil || len(secs) != 1 || secs[0].Closed || secs[0].RC != -1 {
		t.Fatalf("%+v %v", secs, err)
	}
}

// TestSplitEdges: a section may be named by nothing and still close; a
// section exactly MaxSectionBytes long is read, one byte more is refused.
func TestSplitEdges(t *testing.T) {
	secs, err := Split([]byte(BeginLine(testMarker, "")+"\nx\n"+EndLine(testMarker, "", 7)+"\n"), testMarker)
	if err != nil || len(secs) != 1 || secs[0].Name != "" || secs[0].RC != 7 || !secs[0].Closed || secs[0].Out != "x" {
		t.Errorf("an unnamed section: %+v %v", secs, err)
	}
	half := MaxSectionBytes / 2
	for _, tc := range []struct {
		second int
		ok     bool
	}{{half - 1, true}, {half, false}} {
		// The first line and its line break, then the second line.
		out := BeginLine(testMarker, "a") + "\n" + strings.Repeat("x", half) + "\n" + strings.Repeat("y", tc.second) + "\n" + EndLine(testMarker, "a", 0) + "\n"
		secs, err := Split([]byte(out), testMarker)
		if tc.ok != (err == nil) {
			t.Errorf("a section of %d bytes: %v", half+1+tc.second, err)
		}
		if tc.ok && (len(secs) != 1 || len(secs[0].Out) != half+1+tc.second) {
			t.Errorf("a section of %d bytes read as %d", half+1+tc.second, len(secs[0].Out))
		}
	}
}

// TestExitStatus: 0 to 255 in up to three decimal digits, and nothing else.
func TestExitStatus(t *testing.T) {
	for in, want := range map[string]int{
		"0": 0, "7": 7, "007": 7, "99": 99, "254": 254, "255": 255,
		"256": -1, "999": -1, "0255": -1, "": -1, "-1": -1, "+1": -1, " 1": -1, "1x": -1,
	} {
		if got := exitStatus(in); got != want {
			t.Errorf("exitStatus(%q) = %d, want %d", in, got, want)
		}
	}
}
