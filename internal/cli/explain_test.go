package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplain: an ID of each catalogue, a name two catalogues share, the
// list, JSON for scripts, and the usage errors (exit 2) with the nearest ID.
func TestExplain(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"HC101"}, []string{"HC101 daemonset-os-selector (error) · cluster checks (hybridctl doctor, lint)", "\nWhy:\n", "\nFix:\n"}},
		{[]string{"hc000"}, []string{"HC000 input-document (error) · cluster checks (hybridctl lint)"}},
		{[]string{"S402"}, []string{"S402 windows-bgp · spec rules"}},
		{[]string{"HC508"}, []string{"HC508 overlay-cross-check (error) · node checks", "Requires:"}},
		{[]string{"port-free"}, []string{"port-free (error) · preflight checks (hybridctl apply)", "--ignore-preflight-errors=NAME"}},
		{[]string{"self-signature"}, []string{"self-signature · CSR checks (hybridctl csr approve)"}},
		{[]string{"pod-to-external"}, []string{"pod-to-external · connectivity tests (hybridctl check connectivity)"}},
		{[]string{"windows-build"}, []string{"windows-build (error) · preflight checks", "S302 windows-build · spec rules"}},
		{nil, []string{"ID ", "HC101", "S001", "HC501", "product-uuid-unique", "expiration", "pod-to-service"}},
	} {
		r := runCLI(t, "", append([]string{"explain"}, c.args...)...)
		if r.code != ExitOK {
			t.Errorf("explain %v: exit %d\n%s%s", c.args, r.code, r.out, r.err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("explain %v lacks %q:\n%s", c.args, w, r.out)
			}
		}
	}
	r := runCLI(t, "", "explain", "clock-skew", "-o", "json")
	var got []struct{ Catalogue, ID, Name, What string }
	if err := json.Unmarshal([]byte(r.out), &got); r.code != ExitOK || err != nil || len(got) != 2 || got[0].ID != "clock-skew" || got[1].ID != "HC505" {
		t.Errorf("explain clock-skew -o json: exit %d, %v, %+v", r.code, err, got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"HC1O1"}, `unknown ID "HC1O1" (did you mean "HC101"?)`},
		{[]string{"pod-to-servce"}, `did you mean "pod-to-service"?`},
		{[]string{"nothing-like-it"}, `unknown ID "nothing-like-it"; hybridctl explain with no argument lists every ID`},
		{[]string{"HC101", "HC102"}, "takes one ID, got 2 arguments"},
		{[]string{"HC101", "-o", "yaml"}, `-o/--output "yaml" is not an output format: want table, json`},
	} {
		r := runCLI(t, "", append([]string{"explain"}, c.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) || r.out != "" {
			t.Errorf("explain %v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, r.code, r.out, r.err, c.want)
		}
	}
}
