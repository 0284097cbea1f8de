//go:build unix

package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOsDoNotHang: a FIFO where SHA256SUMS or an artifact belongs is
// reported, not opened (opening one blocks until a writer comes).
func TestFIFOsDoNotHang(t *testing.T) {
	arts := mustArtifacts(t)
	dir := layout(t, arts)
	for _, p := range []string{SumsFile, "linux-amd64/kubectl"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(full, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	var rep *Report
	var err error
	go func() { rep, err = VerifyArtifacts(ctx, dir, arts); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("verify hangs on a FIFO")
	}
	if err != nil {
		t.Fatal(err)
	}
	e := rep.Err()
	if e == nil || !strings.Contains(e.Error(), "SHA256SUMS: refused: ") || !strings.Contains(e.Error(), "not a regular file") ||
		!strings.Contains(e.Error(), "linux-amd64/kubectl: not a regular file") {
		t.Errorf("report: %v", e)
	}
	// download refuses to add to it, without hanging either.
	up := newUpstream(t, arts[:1])
	if _, err := Download(ctx, dir, arts[:1], mirrorOpts(up)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("download: %v", err)
	}
}
