package csr

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestInClusterApproverGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		opts   DeployOptions
	}{
		{"incluster-approver.golden.yaml", DeployOptions{Image: "ghcr.io/hybridctl/hybridctl:v0.1.0"}},
		{"incluster-approver-spec.golden.yaml", DeployOptions{Image: "ghcr.io/hybridctl/hybridctl:v0.1.0", MaxExpiration: "720h",
			ClusterSpec: []byte("apiVersion: hybridctl.dev/v1alpha1\nkind: Cluster\n")}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			o, err := InClusterApprover(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestInClusterApproverGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered approver differs from %s; rerun with -update if intended\n%s", golden, got)
			}
		})
	}
}

func TestInClusterApproverNeedsImage(t *testing.T) {
	if _, err := InClusterApprover(DeployOptions{}); err == nil {
		t.Fatal("no error without an image")
	}
}

func TestCheckImage(t *testing.T) {
	for _, ok := range []string{
		"192.168.10.1:5000/hybridctl-lab/hybridctl:lab",
		"ghcr.io/hybridctl/hybridctl:v0.3.0",
		"hybridctl", // docker.io/library/hybridctl:latest, as a kubelet reads it
		"registry.example.com/hybridctl@sha256:" + strings.Repeat("a", 64),
		"localhost:5000/a/b/c:1.0",
	} {
		if err := CheckImage(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"",
		"{\n  \"prefix\": \"192.168.10.1:5000\"\n}/hybridctl-lab/hybridctl:lab", // a JSON object pasted by a script
		"Registry.Example.com/Hybridctl:v1",                                     // upper case in the repository
		"registry.example.com/hybridctl:",                                       // empty tag
		"registry.example.com/hybridctl@sha256:abc",                             // short digest
		"registry.example.com/hybridctl:v1 --privileged",
		"registry.example.com/hybridctl:v1\nimage: evil",
	} {
		err := CheckImage(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if bad != "" && !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("%q: the error does not quote the value: %v", bad, err)
		}
	}
	if _, err := InClusterApprover(DeployOptions{Image: "a b"}); err == nil || !strings.Contains(err.Error(), "in-cluster CSR approver: \"a b\" is not an image reference") {
		t.Errorf("InClusterApprover: %v", err)
	}
}

// TestApproverRulesLeastPrivilege pins the rules: approve only on the
// kubelet-serving signer, no wildcard anywhere, no write on CSRs themselves.
func TestApproverRulesLeastPrivilege(t *testing.T) {
	rules := ApproverRules()
	for ns, nsRules := range APIServerNameRules() {
		for _, r := range nsRules {
			if !slices.Equal(r.Verbs, []string{"get"}) || len(r.ResourceNames) != 1 {
				t.Errorf("namespace %s: rule %+v grants more than get on one named object", ns, r)
			}
		}
		rules = append(rules, nsRules...)
	}
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
			if slices.Contains(list, "*") {
				t.Errorf("rule %+v has a wildcard", r)
			}
		}
		if slices.Contains(r.Verbs, "approve") && (!slices.Equal(r.Resources, []string{"signers"}) || !slices.Equal(r.ResourceNames, []string{SignerName})) {
			t.Errorf("approve granted beyond signers/%s: %+v", SignerName, r)
		}
		for _, v := range r.Verbs {
			if (v == "create" || v == "delete" || v == "patch" || v == "deletecollection") ||
				(v == "update" && !slices.Equal(r.Resources, []string{"certificatesigningrequests/approval"})) {
				t.Errorf("rule %+v grants %q", r, v)
			}
		}
	}
}
