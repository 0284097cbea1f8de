package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/procedure"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

func TestApplyDryRunOffline(t *testing.T) {
	r := run(t, "", "apply", "-f", lab, "--dry-run", "--offline", "--state", filepath.Join(t.TempDir(), "s.json"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	order := []string{"preflight             k8s-lab-master-1", "preflight-cluster", "linux-prepare", "windows-prepare", "post-prepare", "kubeadm-init",
		"calico ", "join-linux            k8s-lab-node-1", "join-windows          k8s-lab-win-1", "doctor", "dry-run: "}
	pos := 0
	for _, want := range order {
		i := strings.Index(r.stdout[pos:], want)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", want, r.stdout)
		}
		pos += i
	}
	j := run(t, "", "apply", "-f", lab, "--dry-run", "--offline", "-o", "json")
	lines := strings.Split(strings.TrimSpace(j.stdout), "\n")
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"type":"summary"`) {
		t.Errorf("last event: %s", lines[len(lines)-1])
	}
}

func TestApplyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"apply", "-f", lab, "--only", "calcio", "--dry-run", "--offline"},
		{"apply", "-f", lab, "-o", "yaml"},
		{"apply", "-f", lab, "--offline"},
		{"apply", "-f", lab, "--concurrency", "0"},
		{"apply"},
		{"reset", "-f", lab},
		{"reset", "-f", lab, "--node", "nope", "--dry-run", "--offline"},
	} {
		if r := run(t, "", args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
}

// --ignore-preflight-errors takes the names of preflight.Checks(): a typo
// is a usage error with the closest name, "all" only alone.
func TestApplyIgnorePreflightErrors(t *testing.T) {
	base := []string{"apply", "-f", lab, "--dry-run", "--offline", "--state", filepath.Join(t.TempDir(), "s.json")}
	for _, tc := range []struct {
		flag string
		code int
		want string
	}{
		{"swapp", ExitUsage, `unknown preflight check "swapp"; did you mean "swap"?`},
		{"swap,time-synk", ExitUsage, `did you mean "time-sync"?`},
		{"all,swap", ExitUsage, `"all" ignores every check`},
		{"all", 0, ""},
		{"swap,Clock-Skew,machine-id-unique", 0, ""},
	} {
		r := run(t, "", append(base, "--ignore-preflight-errors", tc.flag)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("--ignore-preflight-errors %s: exit %d, want %d with %q\n%s", tc.flag, r.code, tc.code, tc.want, r.stderr)
		}
	}
}

func TestResetDryRunOffline(t *testing.T) {
	r := run(t, "", "reset", "-f", lab, "--node", "k8s-lab-win-1", "--dry-run", "--offline")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Get-HnsNetwork | Remove-HnsNetwork", "Restart-Computer"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "k8s-lab-node-1") || strings.Contains(r.stdout, "reset-control-plane") {
		t.Errorf("--node must limit the reset:\n%s", r.stdout)
	}
}

// TestApplyPreflightOverSSH runs `apply --only preflight` for real: every
// node of the lab spec is pointed (ssh.host/port) at one loopback SSH
// server, so the gathering scripts really run and the findings come from
// this machine.
func TestApplyPreflightOverSSH(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	// The Windows node's answer: the repository's powershell stand-in
	// decodes the command; the clock command gets this machine's clock, the
	// facts script one empty section in the run's own marker (a Windows
	// host that could read nothing of what preflight asks).
	real, err := os.ReadFile(filepath.Join(srv.Dir, "bin", "powershell"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Shim("powershell-real", string(real))
	srv.Shim("powershell", `#!/bin/sh
script=$(powershell-real "$@") || exit $?
case "$script" in
*'[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()'*) echo $(($(date +%s%N) / 1000000)); exit 0 ;;
esac
m=$(printf '%s\n' "$script" | sed -n "s/^[$]hfM = '\\([A-Za-z0-9-]*\\)'.*/\\1/p")
printf '\n@@%s begin hostname\n\n@@%s end hostname 0\n' "$m" "$m"
`)
	host, port, _ := strings.Cut(srv.Addr, ":")
	re := regexp.MustCompile(`ssh: \{user: (\w+)\}`)
	spec := re.ReplaceAllString(string(examples.Lab), "ssh: {user: $1, host: "+host+", port: "+port+"}")
	if spec == string(examples.Lab) {
		t.Fatal("could not point the spec's nodes at the test server")
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(dir, "known_hosts")
	args := []string{"apply", "-f", specPath, "--only", "preflight", "-i", key.Path, "--known-hosts", kh}

	// Unknown host key: refused before any change (exit 3), nothing written.
	r := run(t, "", args...)
	if r.code != ExitIncomplete || !strings.Contains(r.stdout+r.stderr, "--accept-new-host-keys") {
		t.Fatalf("unknown key: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if fileExists(kh) {
		t.Error("known_hosts written without --accept-new-host-keys")
	}

	// Accepted: preflight runs on every node. This machine is not a lab
	// node (k8s-lab-api.example.com does not resolve, the Windows stand-in
	// is no Windows), so findings fail the phase: exit 1.
	r = run(t, "", append(args, "--accept-new-host-keys")...)
	if r.code != ExitProblem {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "not in --only") || strings.Contains(r.stderr, "preflight check(s) failed") {
		t.Errorf("filtered steps are not listed, and failures shown in the progress are not repeated:\n%s\n%s", r.stdout, r.stderr)
	}
	// The API name is only a warning before preparation; the build is an
	// error.
	for _, want := range []string{"warning: [api-name-resolves] k8s-lab-win-1", "[windows-build] k8s-lab-win-1", "preflight             k8s-lab-master-1  started"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("missing %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if b, _ := os.ReadFile(kh); !strings.Contains(string(b), srv.KnownHostsLine()) {
		t.Errorf("known_hosts:\n%s", b)
	}
	// The state file lives beside the spec and records nothing that failed.
	if st, err := os.ReadFile(filepath.Join(dir, ".hybridctl", "lab.state.json")); err == nil && strings.Contains(string(st), "k8s-lab-win-1") {
		t.Errorf("failed steps recorded:\n%s", st)
	}
}

// TestResetOverSSH: reset of one worker over a loopback server. This test
// machine has nothing to reset (no kubelet.conf, admin.conf or CNI
// configuration), so the host step is skipped by its check — and the
// kubeadm and rm stand-ins make sure nothing here could be taken apart
// even if it were not. The node's records leave apply's state file.
func TestResetOverSSH(t *testing.T) {
	for _, p := range []string{"/etc/kubernetes/kubelet.conf", "/etc/kubernetes/admin.conf"} {
		if fileExists(p) {
			t.Skipf("%s exists on this machine", p)
		}
	}
	if entries, _ := os.ReadDir("/etc/cni/net.d"); len(entries) > 0 {
		t.Skip("/etc/cni/net.d is not empty on this machine")
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	srv.Shim("kubeadm", "#!/bin/sh\necho \"kubeadm stand-in: $*\"\n")
	srv.Shim("rm", "#!/bin/sh\necho \"rm stand-in: $*\"\n")
	host, port, _ := strings.Cut(srv.Addr, ":")
	spec := regexp.MustCompile(`ssh: \{user: (\w+)\}`).ReplaceAllString(string(examples.Lab), "ssh: {user: $1, host: "+host+", port: "+port+"}")
	dir := t.TempDir()
	specPath := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.json")
	if err := os.WriteFile(state, []byte(`{"apiVersion":"hybridctl.dev/v1alpha1","kind":"ApplyState","cluster":"lab","hosts":{"k8s-lab-node-1":{"preflight":{"finishedAt":"2026-11-29T00:00:00Z"}},"k8s-lab-node-2":{"preflight":{"finishedAt":"2026-11-29T00:00:00Z"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "reset", "-f", specPath, "--node", "k8s-lab-node-1", "--skip-phases", "drain,delete-node", "--yes",
		"-i", key.Path, "--known-hosts", filepath.Join(dir, "known_hosts"), "--accept-new-host-keys", "--state", state)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`reset-workers +k8s-lab-node-1 +skipped: no kubelet.conf`).MatchString(r.stdout) || !strings.Contains(r.stdout, "] reset: ") {
		t.Errorf("output:\n%s", r.stdout)
	}
	st, _ := os.ReadFile(state)
	if strings.Contains(string(st), "k8s-lab-node-1") || !strings.Contains(string(st), "k8s-lab-node-2") {
		t.Errorf("state after resetting node-1:\n%s", st)
	}
}

// TestPhaseHelp: apply --help and reset --help list every phase of the
// phase lists, in order, with where it runs and what it does: the text is
// generated from the lists, and nothing says "not implemented".
func TestPhaseHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd    string
		phases []engine.Descriptor
	}{{"apply", procedure.ApplyProcedure()}, {"reset", procedure.ResetProcedure()}} {
		r := runCLI(t, "", tc.cmd, "--help")
		if r.code != 0 {
			t.Fatalf("%s --help: exit %d", tc.cmd, r.code)
		}
		help := strings.Join(strings.Fields(r.out), " ")
		if strings.Contains(help, "not implemented") || strings.Contains(help, "STATUS") {
			t.Errorf("%s --help still has the stale status text", tc.cmd)
		}
		at := 0
		for i, row := range engine.Table(tc.phases) {
			entry := fmt.Sprintf("%d. %s (%s)", i+1, row.Name, row.RunsOn)
			j := strings.Index(help[at:], entry)
			if j < 0 {
				t.Fatalf("%s --help: %q missing or out of order", tc.cmd, entry)
			}
			at += j
			if !strings.Contains(help[at:], strings.Join(strings.Fields(row.Description), " ")) {
				t.Errorf("%s --help: no description for %s", tc.cmd, row.Name)
			}
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
