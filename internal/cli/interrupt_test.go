package cli

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestHandleInterrupts(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	var out lockedBuf
	ctx, stop := HandleInterrupts(context.Background(), sigs, &out, func(code int) { exited <- code }, func() bool { return true })
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("cancelled before any signal")
	}
	sigs <- os.Interrupt
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("first interrupt did not cancel")
	}
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) on the first interrupt", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- os.Interrupt
	select {
	case code := <-exited:
		if code != ExitInterrupted {
			t.Errorf("exit code %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second interrupt did not exit")
	}
	if !strings.Contains(out.String(), "Press Ctrl-C again") {
		t.Errorf("no message: %q", out.String())
	}
}

func TestHandleInterruptsStop(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, stop := HandleInterrupts(context.Background(), sigs, &lockedBuf{}, func(int) { t.Error("exit called") }, func() bool { return true })
	stop()
	stop() // idempotent
	if ctx.Err() == nil {
		t.Error("stop must release the context")
	}
	sigs <- os.Interrupt
	time.Sleep(20 * time.Millisecond)
}

// TestHandleInterruptsReadOnly: a read-only command ends on the first
// signal, with 128 + its number.
func TestHandleInterruptsReadOnly(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		sigs := make(chan os.Signal, 2)
		exited := make(chan int, 1)
		ctx, stop := HandleInterrupts(context.Background(), sigs, &lockedBuf{}, func(code int) { exited <- code }, func() bool { return false })
		sigs <- tc.sig
		select {
		case code := <-exited:
			if code != tc.want {
				t.Errorf("%v: exit %d, want %d", tc.sig, code, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: a read-only command did not exit on the first signal", tc.sig)
		}
		stop()
		_ = ctx
	}
}

// TestIsGraceful: which commands finish their step on the first signal.
func TestIsGraceful(t *testing.T) {
	root := NewRootCmd(Streams{In: strings.NewReader(""), Out: &lockedBuf{}, Err: &lockedBuf{}})
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"apply"}, true},
		{[]string{"reset"}, true},
		{[]string{"doctor"}, false},
		{[]string{"lint"}, false},
		{[]string{"plan"}, false},
		{[]string{"csr", "approve"}, false},
		{[]string{"csr", "approve", "--watch"}, true},
	} {
		cmd, rest, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatal(err)
		}
		if got := isGraceful(cmd); got != tc.want {
			t.Errorf("%v: graceful %v, want %v", tc.args, got, tc.want)
		}
	}
}
