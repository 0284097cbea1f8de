package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	notGit := t.TempDir()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	none := env(nil)
	cases := []struct {
		name   string
		args   []string
		getenv func(string) string
		code   int
		want   string
	}{
		{"no -o", []string{"--source", notGit}, none, 2, "-o DIR is required"},
		{"unknown platform", []string{"-o", t.TempDir(), "--platforms", "plan9/amd64"}, none, 2, `"plan9/amd64" is not a release platform`},
		{"unknown flag", []string{"--frobnicate"}, none, 2, "unknown flag"},
		{"argument", []string{"-o", t.TempDir(), "extra"}, none, 2, "unknown command"},
		{"not a checkout, nothing given", []string{"-o", t.TempDir(), "--source", notGit}, none, 2, "outside a git checkout give --version, --commit and SOURCE_DATE_EPOCH"},
		{"not a checkout, a bad version", []string{"-o", t.TempDir(), "--source", notGit, "--version", "1.2", "--commit", strings.Repeat("a", 40)},
			env(map[string]string{"SOURCE_DATE_EPOCH": "1764497472"}), 2, `version "1.2" is not a semantic version`},
		{"a bad SOURCE_DATE_EPOCH", []string{"-o", t.TempDir(), "--source", notGit, "--version", "v1.2.3", "--commit", strings.Repeat("a", 40)},
			env(map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}), 2, `SOURCE_DATE_EPOCH "yesterday"`},
		{"signing key without certificate", []string{"-o", t.TempDir(), "--source", notGit, "--version", "v1.2.3", "--commit", strings.Repeat("a", 40)},
			env(map[string]string{"SOURCE_DATE_EPOCH": "1764497472", "HYBRIDCTL_SIGN_KEY": "/nonexistent"}), 2, "signing needs both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, c.getenv, &out, &errb)
			if code != c.code || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant it to say %q", code, c.code, errb.String(), c.want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, none, &out, &errb); code != 0 || !strings.Contains(out.String(), "HYBRIDCTL_SIGN_KEY") {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
}
