package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/testutil/silentapi"
)

// TestMain lets the tests run this binary's main as hybridctl.
func TestMain(m *testing.M) {
	if os.Getenv("HYBRIDCTL_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSignalEndsReadOnlyCommand: doctor stuck on a silent API server (with
// no deadline of its own) ends at once on the first SIGINT or SIGTERM, with
// 130 or 143.
func TestSignalEndsReadOnlyCommand(t *testing.T) {
	srv := silentapi.Start(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		before := srv.Requests()
		cmd := exec.Command(os.Args[0], "doctor", "--kubeconfig", srv.Kubeconfig, "--request-timeout", "10m", "--timeout", "0")
		cmd.Env = append(os.Environ(), "HYBRIDCTL_TEST_MAIN=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until doctor is waiting for the server.
		deadline := time.Now().Add(60 * time.Second)
		for srv.Requests() == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if srv.Requests() == before {
			_ = cmd.Process.Kill()
			t.Fatalf("doctor never reached the server: %s", stderr.String())
		}
		sent := time.Now()
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: doctor still running 30 s after the signal", tc.sig)
		}
		if got := cmd.ProcessState.ExitCode(); got != tc.want {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.sig, got, tc.want, stderr.String())
		}
		t.Logf("%v: ended %s after the signal", tc.sig, time.Since(sent).Round(time.Millisecond))
	}
}
