package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKubectlHabits: what a kubectl, kubeadm or Helm user types first gets
// a usage error that says what to type instead (exit 2), or works.
func TestKubectlHabits(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"plan FILE", []string{"plan", lab}, "hybridctl plan reads the spec from -f: hybridctl plan -f " + lab},
		{"render FILE", []string{"render", "cluster.yml"}, "hybridctl render reads the spec from -f: hybridctl render -f cluster.yml"},
		{"plan two files", []string{"plan", "a.yaml", "b.yaml"}, `"hybridctl plan" takes no arguments, got ["a.yaml" "b.yaml"]`},
		{"plan a word", []string{"plan", "lab"}, `"hybridctl plan" takes no arguments, got ["lab"]`},
		{"validate", []string{"validate", "-f", lab}, "Did you mean this?\n\tplan"},
		{"check typo", []string{"check", "conectivity"}, `(did you mean "hybridctl check connectivity"?)`},
		{"-o typo", []string{"plan", "-f", lab, "-o", "jsn"}, `-o/--output "jsn" is not an output format: want table, json, yaml (did you mean "json"?)`},
		{"-o far", []string{"doctor", "-o", "xml"}, `-o/--output "xml" is not an output format: want table, json, sarif, junit`},
		{"lint nothing", []string{"lint"}, "lint needs at least one path (a file, a directory, or - for stdin), as an argument or with -f"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, "", c.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want 2 and %q in:\n%s", r.code, c.want, r.stderr)
			}
			if strings.Contains(c.name, "far") && strings.Contains(r.stderr, "did you mean") {
				t.Errorf("a suggestion for a value nothing like a format:\n%s", r.stderr)
			}
		})
	}
}

// TestTableEverywhere: "table" is the human format of every command with
// -o; "text", the older name of apply, reset, diff, upgrade and version,
// is still accepted and gives the same output.
func TestTableEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"version"},
		{"apply", "-f", lab, "--dry-run", "--offline"},
		{"reset", "-f", lab, "--dry-run", "--offline"},
	} {
		table := run(t, "", append(args, "-o", "table")...)
		text := run(t, "", append(args, "-o", "text")...)
		def := run(t, "", args...)
		if table.code != 0 || text.code != 0 || def.code != 0 {
			t.Fatalf("%v: exit %d (table), %d (text), %d (default): %s%s", args, table.code, text.code, def.code, table.stderr, text.stderr)
		}
		if norm(table.stdout) != norm(text.stdout) || norm(table.stdout) != norm(def.stdout) || table.stdout == "" {
			t.Errorf("%v: -o table, -o text and the default differ", args)
		}
	}
	// Every command's -o help names table, never text.
	for path, values := range outputValues() {
		for _, v := range values {
			if v == "text" {
				t.Errorf("%s completes -o text", path)
			}
		}
	}
}

// norm removes the times of a run from its output.
func norm(s string) string {
	return regexp.MustCompile(`\[ *[0-9.]+s\]| in [0-9.]+(ns|µs|ms|s)`).ReplaceAllString(s, "")
}

// TestLintFilename: lint -f FILE is lint FILE, repeatable, with the
// positional paths.
func TestLintFilename(t *testing.T) {
	fail := filepath.Join("..", "checks", "testdata", "HC208", "fail.yaml")
	bare := filepath.Join("..", "checks", "testdata", "HC208", "fail-bare.yaml")
	pos := run(t, "", "lint", fail, bare, "-o", "json")
	flag := run(t, "", "lint", "-f", fail, "-f", bare, "-o", "json")
	mixed := run(t, "", "lint", fail, "--filename", bare, "-o", "json")
	if pos.code != 1 || !strings.Contains(pos.stdout, `"HC208"`) {
		t.Fatalf("lint PATH: exit %d\n%s%s", pos.code, pos.stdout, pos.stderr)
	}
	if flag.code != pos.code || flag.stdout != pos.stdout || mixed.stdout != pos.stdout {
		t.Errorf("lint -f differs from lint PATH:\n%s\n%s", flag.stdout, pos.stdout)
	}
}

// TestDestinationFlags: render and init name their destination
// --output-dir and --output-file; -o, their older name, still works for a
// release, with a warning on standard error only.
func TestDestinationFlags(t *testing.T) {
	dir := t.TempDir()
	r := run(t, "", "render", "-f", lab, "--output-dir", filepath.Join(dir, "new"))
	if r.code != 0 || strings.Contains(r.stderr, "deprecated") {
		t.Fatalf("render --output-dir: exit %d: %s", r.code, r.stderr)
	}
	r = run(t, "", "render", "-f", lab, "-o", filepath.Join(dir, "old"))
	if r.code != 0 || !strings.Contains(r.stderr, "Warning: -o/--output of hybridctl render is deprecated and will be removed: use --output-dir") {
		t.Fatalf("render -o: exit %d: %s", r.code, r.stderr)
	}
	for _, sub := range []string{"new", "old"} {
		if _, err := os.Stat(filepath.Join(dir, sub, "runbook.md")); err != nil {
			t.Errorf("render into %s: %v", sub, err)
		}
	}
	r = run(t, "", "init", "--output-file", "-")
	old := run(t, "", "init", "-o", "-")
	if r.code != 0 || old.code != 0 || r.stdout != old.stdout || strings.Contains(old.stdout, "deprecated") || !strings.Contains(old.stderr, "use --output-file") {
		t.Errorf("init -o -: exit %d, stderr %q; the spec alone must be on standard output", old.code, old.stderr)
	}
	if h := run(t, "", "render", "--help"); strings.Contains(h.stdout, "-o, --output") || !strings.Contains(h.stdout, "--output-dir") {
		t.Errorf("render --help shows -o or lacks --output-dir:\n%s", h.stdout)
	}
}

// TestCompletionHelpNamesBashCompletion: as kubectl's and Helm's help do,
// completion says the bash script needs the bash-completion package.
func TestCompletionHelpNamesBashCompletion(t *testing.T) {
	r := run(t, "", "completion", "bash", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "needs the bash-completion package") || !strings.Contains(r.stdout, "apt-get install bash-completion") {
		t.Errorf("completion --help: exit %d\n%s", r.code, r.stdout)
	}
}

// TestHelpShowsConnectionFlagsApart: as kubectl shows its global options
// apart, every command that talks to the API lists its own flags first
// and the Kubernetes connection flags under their own heading, and only
// the commands that take a namespace show -n.
func TestHelpShowsConnectionFlagsApart(t *testing.T) {
	const heading = "\nKubernetes connection flags (as kubectl's):\n"
	for _, tc := range []struct {
		args      []string
		namespace bool
	}{
		{[]string{"doctor"}, true},
		{[]string{"check", "connectivity"}, true},
		{[]string{"csr", "approve"}, false},
		{[]string{"node", "diagnose"}, false},
		{[]string{"init"}, false},
	} {
		r := run(t, "", append(tc.args, "--help")...)
		name := strings.Join(tc.args, " ")
		own, connection, ok := strings.Cut(r.stdout, heading)
		if r.code != 0 || !ok {
			t.Errorf("%s --help: exit %d, no %q heading:\n%s", name, r.code, strings.TrimSpace(heading), r.stdout)
			continue
		}
		_, ownFlags, _ := strings.Cut(own, "\nFlags:\n")
		for _, f := range []string{"--kubeconfig", "--context", "--server", "--as-group", "--request-timeout", "--v"} {
			defines := regexp.MustCompile(`(?m)^ +(-[a-z], )?` + f + ` `)
			if defines.MatchString(ownFlags) || !defines.MatchString(connection) {
				t.Errorf("%s --help: %s is not among the connection flags only", name, f)
			}
		}
		if !strings.Contains(own, "\nFlags:\n") || !strings.Contains(own, "-h, --help") || strings.Contains(connection, "--help") {
			t.Errorf("%s --help: its own flags are not listed first under Flags:\n%s", name, r.stdout)
		}
		if got := strings.Contains(r.stdout, "-n, --namespace"); got != tc.namespace {
			t.Errorf("%s --help shows -n: %v, want %v", name, got, tc.namespace)
		}
	}
	// A command without connection flags has no such heading.
	if r := run(t, "", "plan", "--help"); strings.Contains(r.stdout, strings.TrimSpace(heading)) || !strings.Contains(r.stdout, "\nFlags:\n") {
		t.Errorf("plan --help:\n%s", r.stdout)
	}
	if r := run(t, "", "csr", "approve", "-n", "default"); r.code != 2 || !strings.Contains(r.stderr, "unknown shorthand flag: 'n'") {
		t.Errorf("csr approve -n: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}
