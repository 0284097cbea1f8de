//go:build unix

package render

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestForceRefusesAStrangeMarker: a previous render whose marker is a
// symbolic link (here to a file that never ends), a FIFO or a file larger
// than render writes is not a render: --force refuses it at once, and
// nothing is read through the link.
func TestForceRefusesAStrangeMarker(t *testing.T) {
	ctx := context.Background()
	for name, plant := range map[string]func(string) error{
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"fifo":              func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"huge": func(p string) error {
			return os.WriteFile(p, append([]byte(manifestHeader+"\n"), bytes.Repeat([]byte("x\n"), maxMarkerBytes/2)...), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if err := WriteDir(ctx, out, []File{{Path: "a.yaml", Data: []byte("a")}}, false); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(out, Marker)
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
			if err := plant(marker); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- WriteDir(ctx, out, []File{{Path: "a.yaml", Data: []byte("b")}}, true) }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrForeign) {
					t.Fatalf("err = %v, want ErrForeign", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("--force hangs on the marker")
			}
			if b, _ := os.ReadFile(filepath.Join(out, "a.yaml")); string(b) != "a" {
				t.Errorf("the previous render was replaced: %q", b)
			}
		})
	}
}
