package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

// RunExitHarness is the exit status of Run when the environment itself fails
// (bad usage, missing binaries, a fixture that does not load), chosen, as by
// docker run, to be distinguishable from the usual statuses of CMD.
const RunExitHarness = 125

// Run implements "hack/testenv/testenv run [--calico] [--load DIR]...
// [--cache DIR] [-v] -- CMD ARGS...": it starts an environment, runs CMD with KUBECONFIG set to
// the admin kubeconfig, HYBRIDCTL_TESTENV_HOST to the server URL and BinDir
// first on PATH (so kubectl is the built v1.37.2 one when present), stops
// the environment and returns CMD's exit status (128+N when a signal N ended
// it). SIGINT and SIGTERM are passed to CMD and end the run the same way;
// the control plane is stopped in every case.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testenv run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	fs.BoolVar(&opts.Calico, "calico", false, "install the Calico CRDs from <shared>/calico/")
	fs.Func("load", "load the fixture `DIR` (repeatable, in order)", func(s string) error {
		opts.Load = append(opts.Load, s)
		return nil
	})
	fs.StringVar(&opts.Cache, "cache", "", "keep the loaded etcd data in `DIR` and start from it next time (what the benchmarks use: ~/.cache/hybridctl/bench-etcd)")
	verbose := fs.Bool("v", false, "print start-up progress")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hack/testenv/testenv run [--calico] [--load DIR]... [--cache DIR] [-v] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return 2
	}
	if *verbose {
		opts.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	}

	// Catch SIGINT/SIGTERM for the whole run: during start-up they cancel
	// it; while CMD runs they are passed on to it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-startCtx.Done():
		}
	}()

	env, err := Start(startCtx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "testenv: %v\n", err)
		return RunExitHarness
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(stderr, "testenv: stop: %v\n", err)
		}
	}()
	if startCtx.Err() != nil {
		fmt.Fprintln(stderr, "testenv: interrupted")
		return 128 + int(syscall.SIGINT)
	}
	cancel() // stop the start-up watcher; sigs now goes to CMD

	// The built binaries (kubectl v1.37.2 among them) come first on PATH.
	name, path := argv[0], os.Getenv("PATH")
	if dir, err := BinDir(); err == nil {
		path = dir + string(os.PathListSeparator) + path
		if lp, err := lookPathIn(argv[0], dir); err == nil {
			name = lp
		}
	}
	cmd := exec.Command(name, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath(), "HYBRIDCTL_TESTENV_HOST="+env.Host(), "PATH="+path)
	prepareCommand(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testenv: %v\n", err)
		return RunExitHarness
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	return exitStatus(cmd.ProcessState, err, stderr)
}

// lookPathIn finds a bare command name in dir first, as the child's PATH
// would (exec.Command resolved it against this process's PATH).
func lookPathIn(name, dir string) (string, error) {
	if filepath.Base(name) != name {
		return "", os.ErrNotExist
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", os.ErrNotExist
	}
	return p, nil
}

func exitStatus(ps *os.ProcessState, err error, stderr io.Writer) int {
	if ps == nil {
		fmt.Fprintf(stderr, "testenv: %v\n", err)
		return RunExitHarness
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
