package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fitting = `apiVersion: hybridctl.dev/v1alpha1
kind: Cluster
metadata: {name: t1}
spec:
  controlPlaneEndpoint: api.t1.lan:6443
  network: {nodeCIDR: 10.88.0.0/24, gateway: 10.88.0.1, dnsServers: [10.88.0.1], dnsSuffix: t1.lan, podCIDR: 10.244.0.0/16}
  images: {registry: "10.88.0.1:5000"}
  packages: {source: bundle}
  allowCgroupV1: true
  nodes:
  - {name: cp, role: control-plane, address: 10.88.0.10}
`

func runLab(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := 0
	if err != nil {
		code = 3
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

func TestCommandLine(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HYBRIDCTL_LAB_CACHE", "")
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(fitting), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(fitting, "source: bundle", "source: upstream", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	v136 := filepath.Join(dir, "v136.yaml")
	if err := os.WriteFile(v136, []byte(strings.Replace(fitting, "spec:\n", "spec:\n  kubernetesVersion: v1.36.3\n  crictl: {version: 1.37.0}\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	v135 := filepath.Join(dir, "v135.yaml")
	if err := os.WriteFile(v135, []byte(strings.Replace(fitting, "spec:\n", "spec:\n  kubernetesVersion: v1.35.4\n  crictl: {version: 1.37.0}\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args    []string
		code    int
		out, in string
	}{
		{nil, 2, "", "no command"},
		{[]string{"nope"}, 2, "", `unknown command "nope"`},
		{[]string{"flags"}, 2, "", "needs -f SPEC"},
		{[]string{"flags", "-f", good, "extra"}, 2, "", "unexpected argument"},
		{[]string{"flags", "-f", good, "--for", "delete"}, 2, "", "--for takes apply, reset or upgrade"},
		{[]string{"flags", "-f", filepath.Join(dir, "missing.yaml")}, 2, "", "missing.yaml"},
		{[]string{"flags", "-f", bad}, 1, "", "bad.yaml:8: spec.packages.source"},
		{[]string{"up", "-f", bad}, 1, "", "spec.packages.source"},
		{[]string{"flags", "-f", good}, 0, "--identity " + filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hybridctl/lab/clusters/t1/id_ed25519"), ""},
		{[]string{"flags", "-f", good, "--for", "reset"}, 0, "--known-hosts ", ""},
		{[]string{"flags", "-f", good, "--for", "upgrade"}, 0, "--bundle " + filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hybridctl/lab/bundles/v1.37.2") + "\n", ""},
		{[]string{"flags", "-f", good}, 0, "--bundle " + filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hybridctl/lab/bundles/v1.37.2") + " ", ""},
		{[]string{"flags", "-f", v136}, 0, "--bundle " + filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hybridctl/lab/bundles/v1.36.3") + " ", ""},
		{[]string{"flags", "-f", v135}, 1, "", "v135.yaml:5: spec.kubernetesVersion: the lab's bundle and images hold what it builds, Kubernetes v1.37.2 or v1.36.3, not \"v1.35.4\""},
		{[]string{"kubeconfig", "-f", good}, 1, "", "no admin kubeconfig yet"},
	}
	for _, c := range cases {
		out, errs, code := runLab(t, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.in) {
			t.Errorf("lab %v: exit %d, out %q, err %q; want exit %d, out ~%q, err ~%q", c.args, code, out, errs, c.code, c.out, c.in)
		}
	}
	if out, _, _ := runLab(t, "flags", "-f", good, "--for", "reset"); strings.Contains(out, "--bundle") {
		t.Errorf("reset flags carry --bundle: %s", out)
	}
}
