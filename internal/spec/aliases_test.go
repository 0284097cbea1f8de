package spec

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseAliasBombs: a spec never expands an alias, so a "billion
// laughs" in a list field is one error at the alias's line, and forty more
// bombs in later documents are parsed, not expanded: the only other
// diagnostic is the second document's.
func TestParseAliasBombs(t *testing.T) {
	base := mustRead(t, "testdata/base.yaml")
	var bomb strings.Builder
	bomb.WriteString("l0: &l0 [\"" + strings.Repeat("x", 64) + "\"]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&bomb, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	const field = "    dnsServers: [192.168.10.1]\n"
	if !strings.Contains(base, field) {
		t.Fatalf("testdata/base.yaml has no %q", field)
	}
	line := strings.Count(base[:strings.Index(base, field)], "\n") + 1
	src := strings.Replace(base, field, "    dnsServers: [&d 192.168.10.1, *d]\n", 1) +
		strings.Repeat("---\n"+bomb.String(), 40)
	r := Parse("x.yaml", []byte(src))
	var got []string
	for _, d := range r.Diagnostics.Errors() {
		got = append(got, fmt.Sprintf("%d: %s", d.Line, d.Message))
	}
	want := []string{
		fmt.Sprintf("%d: YAML aliases are not supported in a cluster spec", line),
		fmt.Sprintf("%d: the file holds more than one YAML document; a spec is one Cluster document", strings.Count(base, "\n")+1), // the "---" line
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
