package spec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/finding"
)

// want is one expected diagnostic, read from a fixture's "# want:" lines.
type want struct {
	line     int
	severity finding.Severity
	rule     string
	path     string
}

func (w want) String() string { return fmt.Sprintf("%d %s %s %s", w.line, w.severity, w.rule, w.path) }

func readWants(t *testing.T, data []byte) []want {
	t.Helper()
	var ws []want
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "# want: ")
		if !ok || strings.HasPrefix(rest, "LINE") {
			continue
		}
		var w want
		var sev string
		if _, err := fmt.Sscanf(rest, "%d %s %s %s", &w.line, &sev, &w.rule, &w.path); err != nil {
			t.Fatalf("bad want line %q: %v", rest, err)
		}
		w.severity = finding.Severity(sev)
		ws = append(ws, w)
	}
	return ws
}

func sortedStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	sort.Strings(out)
	return out
}

// TestFixtures runs every spec in testdata/valid and testdata/invalid and
// compares the diagnostics with the file's "# want:" lines exactly: every
// wanted diagnostic at its line, and no other.
func TestFixtures(t *testing.T) {
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
		}
		for _, f := range files {
			t.Run(dir+"/"+filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				wants := readWants(t, data)
				r := Parse(f, data)
				got := make([]want, 0, len(r.Diagnostics))
				for _, d := range r.Diagnostics {
					got = append(got, want{d.Line, d.Severity, d.Rule, d.Path})
					if d.File != f {
						t.Errorf("diagnostic %v names file %q, want %q", d, d.File, f)
					}
					if d.Message == "" {
						t.Errorf("diagnostic %v has no message", d)
					}
				}
				g, w := sortedStrings(got), sortedStrings(wants)
				if strings.Join(g, "\n") != strings.Join(w, "\n") {
					t.Errorf("diagnostics differ\n got:\n  %s\nwant:\n  %s\nmessages:\n%s", strings.Join(g, "\n  "), strings.Join(w, "\n  "), diagText(r.Diagnostics))
				}
				hasErr := len(r.Diagnostics.Errors()) > 0
				if dir == "valid" && hasErr {
					t.Errorf("a valid fixture has errors")
				}
				if dir == "invalid" && !hasErr && !strings.Contains(f, "warning") && !strings.Contains(f, "one-linux") && !strings.Contains(f, "-ip") && !strings.Contains(f, "compat") && !strings.Contains(f, "bundle-warning") {
					t.Errorf("an invalid fixture has no errors")
				}
				if (r.Err() == nil) == hasErr {
					t.Errorf("Err() = %v, but errors present = %v", r.Err(), hasErr)
				}
			})
		}
	}
}

// TestEveryRuleHasAFailingFixture keeps the rule list and the fixtures in
// step: each rule must be shown failing by at least one fixture.
func TestEveryRuleHasAFailingFixture(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range readWants(t, data) {
			seen[w.rule] = true
		}
	}
	ids := map[string]bool{}
	for _, r := range Rules() {
		if ids[r.ID] {
			t.Errorf("rule ID %s used twice", r.ID)
		}
		ids[r.ID] = true
		if r.Doc == "" || r.Name == "" {
			t.Errorf("rule %s lacks a name or doc", r.ID)
		}
		if !seen[r.ID] {
			t.Errorf("rule %s (%s) has no failing fixture in testdata/invalid", r.ID, r.Name)
		}
	}
}

func diagText(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("  " + d.String() + "\n")
	}
	return b.String()
}

func TestDiagnosticFormat(t *testing.T) {
	data := []byte(strings.Replace(mustRead(t, "testdata/base.yaml"), "k8s-lab-win-1", "k8s-lab-windows-01", 1))
	r := Parse("cluster.yaml", data)
	errs := r.Diagnostics.Errors()
	if len(errs) != 1 {
		t.Fatalf("want one error, got:\n%s", diagText(r.Diagnostics))
	}
	want := `cluster.yaml:40: spec.nodes[3].name: "k8s-lab-windows-01" is 18 characters; a Windows computer name is at most 15 [S301 windows-computer-name]`
	if got := errs[0].String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var ie *InvalidError
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Err() = %v, want it to list %q", err, want)
	} else if _, ok := err.(*InvalidError); !ok {
		t.Errorf("Err() is %T, want %T", err, ie)
	}
}

func TestBrokenDocuments(t *testing.T) {
	cases := []struct {
		name, src, wantMsg string
		wantLine           int
	}{
		{"empty", "", "the file is empty", 1},
		{"comment only", "# nothing\n", "the file is empty", 1},
		{"syntax", "apiVersion: x\n  kind: : :\n", "invalid YAML", 2},
		{"scalar root", "hello\n", "want a mapping", 1},
		{"list root", "- a\n- b\n", "want a mapping", 1},
		{"two documents", mustRead(t, "testdata/base.yaml") + "---\nkind: Cluster\n", "more than one YAML document", 45},
		{"alias", "apiVersion: &a hybridctl.dev/v1alpha1\nkind: *a\n", "aliases are not supported", 2},
		{"tab indentation", "spec:\n\tnodes: []\n", "invalid YAML", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse("x.yaml", []byte(c.src))
			if r.Err() == nil {
				t.Fatal("want an error")
			}
			found := false
			for _, d := range r.Diagnostics {
				if strings.Contains(d.Message, c.wantMsg) && d.Line == c.wantLine {
					found = true
				}
			}
			if !found {
				t.Errorf("want %q on line %d, got:\n%s", c.wantMsg, c.wantLine, diagText(r.Diagnostics))
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	r := Parse("minimal.yaml", []byte(mustRead(t, "testdata/valid/minimal.yaml")))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	s := r.Cluster.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"kubernetesVersion", s.KubernetesVersion, "v1.37.2"},
		{"blockSize", s.Network.BlockSize, 26},
		{"serviceCIDR", s.Network.ServiceCIDR, "10.96.0.0/12"},
		{"dnsDomain", s.Network.DNSDomain, "cluster.local"},
		{"mtu", s.Network.MTU, 1500},
		{"containerd", s.Containerd.Version, "2.2.2"},
		{"crictl follows the minor", s.Crictl.Version, "1.37.0"},
		{"calico", s.Calico.Version, "v3.33.0"},
		{"linuxDataplane", s.Calico.LinuxDataplane, "Nftables"},
		{"encapsulation", s.Calico.Encapsulation, "VXLAN"},
		{"bgp", s.Calico.BGP, "Disabled"},
		{"natOutgoing", *s.Calico.NATOutgoing, true},
		{"kubeProxy", s.KubeProxy.Mode, "nftables"},
		{"role", s.Nodes[1].Role, RoleWorker},
		{"os", s.Nodes[1].OS, OSLinux},
		{"ssh port", s.Nodes[0].SSH.Port, 22},
		{"linux ssh user", s.Nodes[0].SSH.User, "root"},
		{"windows ssh user", s.Nodes[3].SSH.User, "Administrator"},
		{"windows build", s.Nodes[3].Windows.Build, "10.0.26100"},
		{"runc", s.Runc.Version, "1.5.3"},
		{"cni plugins", s.CNIPlugins.Version, "1.10.0"},
		{"packages.source", s.Packages.Source, SourceUpstream},
		{"network.configure", s.Network.Configure, NetworkCheck},
		{"allowCgroupV1", s.AllowCgroupV1, false},
		{"images.registry", s.Images.Registry, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Idempotent.
	before := fmt.Sprintf("%+v", *r.Cluster)
	SetDefaults(r.Cluster)
	if after := fmt.Sprintf("%+v", *r.Cluster); after != before {
		t.Errorf("SetDefaults is not idempotent")
	}
}

func TestSuggestion(t *testing.T) {
	r := Parse("x.yaml", []byte(strings.Replace(mustRead(t, "testdata/base.yaml"), "podCIDR:", "podCidr:", 1)))
	for _, d := range r.Diagnostics {
		if d.Path == "spec.network.podCidr" {
			if !strings.Contains(d.Message, `did you mean "podCIDR"?`) {
				t.Errorf("message %q lacks the suggestion", d.Message)
			}
			return
		}
	}
	t.Errorf("no diagnostic for podCidr:\n%s", diagText(r.Diagnostics))
}

// TestFieldUnderWrongParent: a block indented under the wrong parent says
// where it belongs; a field known nowhere keeps the plain message and its
// suggestion.
func TestFieldUnderWrongParent(t *testing.T) {
	base := mustRead(t, "testdata/base.yaml")
	for _, c := range []struct {
		name, old, new, path, want string
	}{
		{"block under calico", "    natOutgoing: true\n", "    natOutgoing: true\n    checkWorkloads:\n      image: registry.example.com/agnhost:2.57\n",
			"spec.calico.checkWorkloads", "field checkWorkloads is not known under spec.calico; it belongs under spec"},
		{"node field at spec", "  kubeProxy: {mode: nftables}\n", "  kubeProxy: {mode: nftables}\n  role: worker\n",
			"spec.role", "field role is not known under spec; it belongs under spec.nodes[]"},
		{"spec field at the top", "kind: Cluster\n", "kind: Cluster\nnodes: []\n",
			"nodes", "field nodes is not known under the top level; it belongs under spec"},
		{"known nowhere", "    natOutgoing: true\n", "    natOutgoing: true\n    natOutgoin: true\n",
			"spec.calico.natOutgoin", `unknown field "natOutgoin"; did you mean "natOutgoing"?`},
	} {
		if !strings.Contains(base, c.old) {
			t.Fatalf("%s: base.yaml has no %q", c.name, c.old)
		}
		r := Parse("x.yaml", []byte(strings.Replace(base, c.old, c.new, 1)))
		found := false
		for _, d := range r.Diagnostics {
			if d.Path == c.path {
				found = true
				if d.Message != c.want {
					t.Errorf("%s: %q, want %q", c.name, d.Message, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no diagnostic at %s:\n%s", c.name, c.path, diagText(r.Diagnostics))
		}
	}
	if got := fieldHomes(reflect.TypeOf(Cluster{}), "name", 2); len(got) != 2 || got[0] != "metadata" {
		t.Errorf("homes of name: %q, want metadata first and at most 2", got)
	}
	if got := fieldHomes(reflect.TypeOf(Cluster{}), "nothere", 3); len(got) != 0 {
		t.Errorf("homes of a field known nowhere: %q", got)
	}
}

func TestParseSemver(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want semver
	}{
		{"v1.37.2", true, semver{1, 37, 2, "", true}},
		{"2.2.2", true, semver{2, 2, 2, "", false}},
		{"v1.38.0-rc.1", true, semver{1, 38, 0, "rc.1", true}},
		{"v1.37", false, semver{}},
		{"1.037.2", false, semver{}},
		{"v1.x.2", false, semver{}},
		{"", false, semver{}},
		{"vv1.2.3", false, semver{}},
	}
	for _, c := range cases {
		got, ok := parseSemver(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseSemver(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsListEveryRule keeps docs/spec.md's rule table equal to Rules().
func TestDocsListEveryRule(t *testing.T) {
	doc := mustRead(t, "../../docs/spec.md")
	for _, r := range Rules() {
		row := fmt.Sprintf("| %s | %s | %s |", r.ID, r.Name, r.Doc)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/spec.md lacks the row:\n%s", row)
		}
	}
}

// A field that cannot be read is reported once: the rules about what it
// should have held say nothing more.
func TestBrokenFieldIsReportedOnce(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/base.yaml"), "  network:\n", "  network: flat\n  x-network:\n", 1)
	r := Parse("x.yaml", []byte(src))
	var got []string
	for _, d := range r.Diagnostics {
		got = append(got, d.Rule+" "+d.Path)
	}
	want := []string{"S001 spec.network", "S001 spec.x-network"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant exactly:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), diagText(r.Diagnostics))
	}
}

// TestTabIsNamed: a tab in the indentation is reported as a tab, with its
// line and column, not as yaml's "found character that cannot start any
// token".
func TestTabIsNamed(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/base.yaml"), "    gateway:", "  \tgateway:", 1)
	lines := strings.Split(src, "\n")
	want := 0
	for i, l := range lines {
		if strings.Contains(l, "\tgateway") {
			want = i + 1
		}
	}
	r := Parse("x.yaml", []byte(src))
	if len(r.Diagnostics) != 1 {
		t.Fatalf("diagnostics:\n%s", diagText(r.Diagnostics))
	}
	d := r.Diagnostics[0]
	if d.Line != want || !strings.Contains(d.Message, fmt.Sprintf("a tab character at line %d, column 3", want)) || strings.Contains(d.Message, "cannot start any token") {
		t.Errorf("want the tab at line %d column 3, got %s", want, d)
	}
}

// TestMisIndentedKeyLine: a key indented wrongly is reported at its own
// line; yaml.v3 alone reports the start of the enclosing mapping (line 17
// for the lab's line 55). Deeper, shallower and between two levels, in a
// mapping and in a list item, after quoted values.
func TestMisIndentedKeyLine(t *testing.T) {
	lab := mustRead(t, "../../examples/lab.yaml")
	lines := strings.Split(lab, "\n")
	find := func(s string) int {
		for i, l := range lines {
			if l == s {
				return i
			}
		}
		t.Fatalf("examples/lab.yaml has no line %q", s)
		return 0
	}
	for _, c := range []struct{ line, bad, msg string }{
		{"    encapsulation: VXLAN", "      encapsulation: VXLAN", "this line is indented 6 spaces, which matches no enclosing level (the line before it is at 4 and opens no block)"},
		{"    encapsulation: VXLAN", "   encapsulation: VXLAN", "this line is indented 3 spaces, which matches no enclosing level (enclosing levels are at 0, 2 spaces)"},
		{"    encapsulation: VXLAN", "     encapsulation: VXLAN", "this line is indented 5 spaces, which matches no enclosing level (the line before it is at 4 and opens no block)"},
		{"    address: 192.168.10.26", "      address: 192.168.10.26", "this line is indented 6 spaces, which matches no enclosing level (the line before it is at 4 and opens no block)"},
		{"    address: 192.168.10.25", "       address: 192.168.10.25", "this line is indented 7 spaces, which matches no enclosing level (the line before it is at 4 and opens no block)"},
		// A comment after a key and a quoted value with " #" in it are
		// not read as structure.
		{"    encapsulation: VXLAN", "    encapsulation: VXLAN # \"quoted\" comment\n      bgp: Disabled", "this line is indented 6 spaces"},
	} {
		i := find(c.line)
		src := append(append(append([]string{}, lines[:i]...), c.bad), lines[i+1:]...)
		r := Parse("lab.yaml", []byte(strings.Join(src, "\n")))
		want := i + 1 + strings.Count(c.bad, "\n")
		if len(r.Diagnostics) != 1 || r.Diagnostics[0].Line != want || !strings.Contains(r.Diagnostics[0].Message, c.msg) {
			t.Errorf("%q on line %d: got\n%s\nwant %q", c.bad, want, diagText(r.Diagnostics), c.msg)
		}
	}
}
