//go:build unix

package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// localSpec is examples/lab-linux.yaml with every node's SSH pointed at
// port on loopback.
func localSpec(t *testing.T, port int) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(    address: 192\.168\.10\.\d+\n)`)
	s := re.ReplaceAllString(string(b), "${1}    ssh: {user: nobody, host: 127.0.0.1, port: "+strconv.Itoa(port)+"}\n")
	if strings.Count(s, "host: 127.0.0.1") != 3 {
		t.Fatalf("spec edit failed:\n%s", s)
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNodeDiagnoseUsage(t *testing.T) {
	spec := localSpec(t, 1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s-lab-node-3"}, `node "k8s-lab-node-3" is not in the spec (did you mean "k8s-lab-node-1"?)`},
		{[]string{"--checks", "clock-skwe"}, `unknown node check "clock-skwe"`},
		{[]string{"-o", "sarif"}, `-o/--output "sarif" is not an output format: want table, json, junit`},
		{[]string{"--fail-on", "fatal"}, `--fail-on "fatal"`},
	} {
		r := run(t, "", append([]string{"node", "diagnose", "-f", spec}, c.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// A node that cannot be reached (nothing listens) and no API: the report
// names the node and its error, the API-dependent checks are not run, and
// the exit code says the diagnosis is incomplete.
func TestNodeDiagnoseUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	spec := localSpec(t, port)
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	key := sshtest.NewKey(t)
	r := run(t, "", "node", "diagnose", "k8s-lab-node-1", "-f", spec, "-o", "json", "--known-hosts", kh, "-i", key.Path,
		"--kubeconfig", filepath.Join(dir, "missing-kubeconfig"), "--connect-timeout", "5s")
	if r.code != ExitIncomplete {
		t.Fatalf("exit %d, want 3\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Findings []any `json:"findings"`
		Nodes    []struct {
			Name, OS, Error string
		} `json:"nodes"`
		Summary struct {
			Nodes, Unreachable int
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(out.Nodes) != 1 || out.Nodes[0].Name != "k8s-lab-node-1" || !strings.Contains(out.Nodes[0].Error, "connection refused") ||
		out.Summary.Unreachable != 1 || len(out.Findings) != 0 {
		t.Errorf("report: %+v", out)
	}
	// The table says the same, and nothing was written to known_hosts.
	r = run(t, "", "node", "diagnose", "k8s-lab-node-1", "-f", spec, "--known-hosts", kh, "-i", key.Path, "--checks", "HC505", "--connect-timeout", "5s")
	if r.code != ExitIncomplete || !strings.Contains(r.stdout, "NOT REACHED (1)\n  k8s-lab-node-1: connecting to k8s-lab-node-1") || !strings.Contains(r.stderr, "the diagnosis is incomplete: k8s-lab-node-1 not reached") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(kh); err == nil {
		t.Error("known_hosts was written")
	}
}
