package transport

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestUploadStreamLinux: a file larger than any SSH window arrives intact
// with its mode in 0755 directories; a wrong sha256 (what a corrupted or
// truncated transfer looks like to the node) replaces nothing and leaves
// no temporary file.
func TestUploadStreamLinux(t *testing.T) {
	f := newFixture(t)
	c := dial(t, f.config())
	data := bytes.Repeat([]byte("containerd\x00\xff\n"), 300_000) // 3.9 MB
	dst := filepath.Join(f.srv.Dir, "cache", "bundle", "linux-amd64", "kubelet")
	if err := c.UploadStream(ctxT(t), dst, bytes.NewReader(data), sumHex(data), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("content differs (%d bytes, %v)", len(got), err)
	}
	for p, want := range map[string]os.FileMode{dst: 0o644, filepath.Dir(dst): 0o755 | os.ModeDir, filepath.Dir(filepath.Dir(dst)): 0o755 | os.ModeDir} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, want)
		}
	}
	// The node sees other bytes than the sha256 says: the old file stays.
	bad := append(bytes.Clone(data[:1000]), 'x')
	err = c.UploadStream(ctxT(t), dst, bytes.NewReader(bad), sumHex(data[:1000]), 0o644)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 3 || !strings.Contains(string(ce.Output), "nothing was replaced") {
		t.Fatalf("a corrupted transfer: %v", err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Error("a corrupted transfer replaced the file")
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := c.UploadStream(ctxT(t), dst, bytes.NewReader(data), "ABC", 0o644); err == nil {
		t.Error("a malformed sha256 was accepted")
	}
}

// stallingReader yields some bytes, then blocks until closed.
type stallingReader struct {
	first []byte
	done  chan struct{}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.first) > 0 {
		n := copy(p, s.first)
		s.first = s.first[n:]
		return n, nil
	}
	<-s.done
	return 0, io.EOF
}

// TestUploadStreamStalls: a transfer that stops moving fails after the
// idle timeout with an error that says so, and replaces nothing.
func TestUploadStreamStalls(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.StreamIdleTimeout = 1500 * time.Millisecond
	c := dial(t, cfg)
	dst := filepath.Join(f.srv.Dir, "bundle", "kubeadm")
	r := &stallingReader{first: []byte("partial"), done: make(chan struct{})}
	defer close(r.done)
	start := time.Now()
	err := c.UploadStream(ctxT(t), dst, r, sumHex([]byte("partial and more")), 0o644)
	if !errors.Is(err, ErrStreamStalled) || !strings.Contains(err.Error(), "after 7 bytes") {
		t.Fatalf("stalled upload: %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the stall was noticed after %s", d)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a stalled upload left %s: %v", dst, err)
	}
}

// TestUploadStreamWindows: the Windows form sends base64 lines of the
// stream and checks the sha256 with Get-FileHash before Move-Item.
func TestUploadStreamWindows(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.OS = engine.Windows
	c := dial(t, cfg)
	data := bytes.Repeat([]byte("kubelet.exe\x00\xff"), 2000) // several chunks, the last one short
	if err := c.UploadStream(ctxT(t), `C:\k\bundle\windows-amd64\kubelet.exe`, bytes.NewReader(data), sumHex(data), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.ReadFile(filepath.Join(f.srv.Dir, "powershell.stdin"))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	lines := strings.Split(strings.TrimSuffix(string(stdin), "\n"), "\n")
	for _, l := range lines {
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, data) || len(lines) != (len(data)+uploadChunk-1)/uploadChunk {
		t.Errorf("%d lines decode to %d bytes, want %d", len(lines), len(got), len(data))
	}
	script := windowsStreamScript(`C:\k\bundle\windows-amd64\kubelet.exe`, sumHex(data), 0o644)
	for _, want := range []string{`$dst = 'C:\k\bundle\windows-amd64\kubelet.exe'`, "$want = '" + sumHex(data) + "'",
		"Get-FileHash -LiteralPath $tmp -Algorithm SHA256", "Remove-Item -Force -LiteralPath $tmp", "Move-Item -Force -LiteralPath $tmp -Destination $dst",
		"'.hybridctl-part-'"} {
		if !strings.Contains(script, want) {
			t.Errorf("the Windows upload script lacks %q", want)
		}
	}
	if strings.Index(script, "Get-FileHash") > strings.Index(script, "Move-Item") {
		t.Error("the Windows upload script moves the file before checking it")
	}
}
