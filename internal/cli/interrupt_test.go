package cli

import (
	"context"
	"os"
	"strings"
	"sync"
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
	ctx, stop := HandleInterrupts(context.Background(), sigs, &out, func(code int) { exited <- code })
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
	ctx, stop := HandleInterrupts(context.Background(), sigs, &lockedBuf{}, func(int) { t.Error("exit called") })
	stop()
	stop() // idempotent
	if ctx.Err() == nil {
		t.Error("stop must release the context")
	}
	sigs <- os.Interrupt
	time.Sleep(20 * time.Millisecond)
}
