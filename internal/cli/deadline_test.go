package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/testutil/silentapi"
)

// TestSilentAPIServer: an API server that accepts TLS connections and never
// answers makes doctor and csr approve give up with exit 3 and a message
// naming the server and the deadline, on either deadline.
func TestSilentAPIServer(t *testing.T) {
	srv := silentapi.Start(t)
	want := "the API server at " + srv.URL + " did not answer within 1 s"
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"doctor request-timeout", []string{"doctor", "--kubeconfig", srv.Kubeconfig, "--request-timeout", "1s"}, want},
		{"doctor overall timeout", []string{"doctor", "--kubeconfig", srv.Kubeconfig, "--request-timeout", "0", "--timeout", "1s"}, "doctor did not finish within 1s (--timeout)"},
		{"csr approve --yes", []string{"csr", "approve", "--yes", "--kubeconfig", srv.Kubeconfig, "--request-timeout", "1s"}, want},
		{"csr approve --dry-run overall", []string{"csr", "approve", "--dry-run", "--kubeconfig", srv.Kubeconfig, "--request-timeout", "1m", "--timeout", "1s"}, "csr approve did not finish within 1s (--timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := runCLI(t, "", tc.args...)
			took := time.Since(start)
			if r.code != ExitIncomplete {
				t.Errorf("exit %d, want 3; stderr %q", r.code, r.err)
			}
			if !strings.Contains(r.err, tc.msg) {
				t.Errorf("stderr %q does not say %q", r.err, tc.msg)
			}
			// Generous under load; without a deadline it would hang for ever.
			if took > 45*time.Second {
				t.Errorf("took %s", took)
			}
			if strings.Contains(r.err+r.out, "silent-secret-token") {
				t.Error("the token was printed")
			}
		})
	}
	if srv.Requests() == 0 {
		t.Error("no request reached the silent server: the test proves nothing")
	}
}

// TestRequestTimeoutDefault: without --request-timeout, requests have the
// 30 s default (kubectl's default, 0, waits for ever).
func TestRequestTimeoutDefault(t *testing.T) {
	cmd := newDoctorCmd(Streams{})
	f := cmd.Flags().Lookup("request-timeout")
	if f == nil || f.DefValue != "30s" {
		t.Fatalf("--request-timeout default %v, want 30s", f)
	}
	if f := cmd.Flags().Lookup("timeout"); f == nil || f.DefValue != "5m0s" {
		t.Fatalf("--timeout default %v, want 5m0s", f)
	}
}

// TestNoKubeconfig: without any kubeconfig the error says so and where it
// looked, instead of trying http://localhost:8080.
func TestNoKubeconfig(t *testing.T) {
	looked := filepath.Join(t.TempDir(), "kube", "config")
	t.Setenv("KUBECONFIG", looked)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	r := runCLI(t, "", "doctor")
	if r.code != ExitIncomplete {
		t.Errorf("exit %d, want 3", r.code)
	}
	if !strings.Contains(r.err, "no kubeconfig found: looked in "+looked) || strings.Contains(r.err, "localhost:8080") {
		t.Errorf("stderr %q", r.err)
	}
	// A kubeconfig in the same place is found: the check is not blind.
	if err := os.MkdirAll(filepath.Dir(looked), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := silentapi.Start(t)
	b, err := os.ReadFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(looked, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "doctor", "--request-timeout", "1s")
	if !strings.Contains(r.err, "did not answer within 1 s") {
		t.Errorf("with $KUBECONFIG: %q", r.err)
	}
}
