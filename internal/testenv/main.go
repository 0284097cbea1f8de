package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// shared is the one environment of a test package. It is package state by
// necessity: TestMain and the tests of a package meet only through package
// variables, and holding it here keeps them out of every test package.
var shared struct {
	mu      sync.Mutex
	main    bool // Main is running
	opts    Options
	started bool
	env     *Env
	err     error
}

// Main runs the tests of a package that share one environment. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{Calico: true}) }
//
// The environment starts on the first Get, so a run that selects no test
// needing it (-run, -short) starts nothing; it is stopped after the last
// test, and also on SIGINT or SIGTERM (then the signal is delivered again
// to end the process as it would have). A start that fails fails every test
// that calls Get, with the reason. Main returns normally; go test then
// exits with the tests' status.
func Main(m *testing.M, opts Options) {
	if !flag.Parsed() {
		flag.Parse()
	}
	shared.mu.Lock()
	shared.main, shared.opts = true, opts
	shared.mu.Unlock()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			stopShared()
			signal.Reset(sig)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(sig)
			}
		case <-done:
		}
	}()

	code := m.Run()

	close(done)
	signal.Stop(sigs)
	if err := stopShared(); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
	}
}

func stopShared() error {
	shared.mu.Lock()
	env := shared.env
	shared.env = nil
	shared.mu.Unlock()
	if env == nil {
		return nil
	}
	return env.Stop()
}

// Get returns the package's shared environment, starting it on first use.
// It skips the test under go test -short, and fails it when the
// environment cannot start (for example: the binaries are not built yet)
// or when the package's TestMain does not call Main. Tests share the
// environment: isolate them with their own namespaces (NewNamespace) or
// object names, and do not stop it.
func Get(t testing.TB) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("testenv: skipped under -short: this test needs a real kube-apiserver and etcd")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatal("testenv.Get: the package's TestMain must call testenv.Main (or use testenv.StartT for a private environment)")
	}
	if !shared.started {
		shared.started = true
		opts := shared.opts
		if opts.Logf == nil {
			opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
		}
		shared.env, shared.err = Start(context.Background(), opts)
	}
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	return shared.env
}

// StartT starts a private environment for one test and stops it when the
// test ends. It skips the test under go test -short. Prefer Get: a start
// costs seconds.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("testenv: skipped under -short: this test needs a real kube-apiserver and etcd")
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	env, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stop: %v", err)
		}
	})
	return env
}

// NewNamespace creates a namespace named prefix + a random suffix with the
// given labels (for example Pod Security Admission labels) and its
// "default" ServiceAccount, and returns its name. Namespaces are not
// deleted: without kube-controller-manager deletion never finishes, and the
// environment goes away at the end of the run.
func (e *Env) NewNamespace(t testing.TB, prefix string, labels map[string]string) string {
	t.Helper()
	name, err := e.CreateNamespace(t.Context(), prefix, labels)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return name
}
