package procedure

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// testBundle writes a bundle of the plan's artifacts (small fake
// contents; kubelet is 3 MB so it crosses many SSH windows) with its
// SHA256SUMS.
func testBundle(t *testing.T, specFile string) (string, []bundle.Artifact) {
	t.Helper()
	p := planFile(t, specFile)
	arts, err := bundle.Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var sums []bundle.Sum
	for _, a := range arts {
		data := []byte("fake " + a.Path + "\n")
		if a.Name == bundle.NameKubelet {
			data = bytes.Repeat([]byte("kubelet\x00"), 400_000)
		}
		full := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(data)
		sums = append(sums, bundle.Sum{SHA256: hex.EncodeToString(s[:]), Path: a.Path})
	}
	if err := bundle.WriteSums(context.Background(), filepath.Join(dir, bundle.SumsFile), sums); err != nil {
		t.Fatal(err)
	}
	return dir, arts
}

// TestBundleFrom: a complete bundle gives each OS its own files (the
// manifests stay on the workstation); a corrupted or missing file is an
// ErrBundleIncomplete naming it.
func TestBundleFrom(t *testing.T) {
	p := planFile(t, "lab.yaml")
	dir, _ := testBundle(t, "lab.yaml")
	ctx := context.Background()
	b, err := BundleFrom(ctx, p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Linux) != 7 || len(b.Windows) == 0 {
		t.Fatalf("linux %d, windows %d files", len(b.Linux), len(b.Windows))
	}
	for _, f := range append(append([]BundleFile{}, b.Linux...), b.Windows...) {
		if strings.HasPrefix(f.Path, bundle.ManifestsDir+"/") || len(f.SHA256) != 64 || f.Size == 0 {
			t.Errorf("node file %+v", f)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64", "kubeadm"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = BundleFrom(ctx, p, dir)
	if !errors.Is(err, ErrBundleIncomplete) || !strings.Contains(err.Error(), "linux-amd64/kubeadm: corrupted") {
		t.Errorf("a corrupted kubeadm: %v", err)
	}
	if _, err := BundleFrom(ctx, p, filepath.Join(dir, "nope")); err == nil || errors.Is(err, ErrBundleIncomplete) {
		t.Errorf("a missing directory: %v", err)
	}
}

// TestBundleUploadOverSSH runs bundle-upload against the SSH test server:
// the node gets its OS's files (0644, directories 0755) and a SHA256SUMS
// of exactly those; a second run sends nothing; a file changed on the node
// and a partial upload left behind are found, and only that file is sent
// again.
func TestBundleUploadOverSSH(t *testing.T) {
	p := planFile(t, "lab-linux.yaml")
	dir, _ := testBundle(t, "lab-linux.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := BundleFrom(ctx, p, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, srv := loopback(t, nil)
	b.LinuxDir = filepath.Join(srv.Dir, "var", "cache", "hybridctl", "bundle")
	phase := &bundleUploadPhase{bundle: b, connect: func(context.Context, string) (bundleConn, error) { return c, nil }}
	h := labHosts()[1]
	if got := phase.Narrow(labHosts()); len(got) != len(engine.Nodes(labHosts())) {
		t.Errorf("targets %v", got)
	}
	if run, _, err := phase.ShouldRun(ctx, h); err != nil || !run {
		t.Fatalf("ShouldRun on an empty node: %v %v", run, err)
	}
	uploads := func() int {
		n := 0
		for _, cmd := range srv.Commands() {
			if strings.Contains(cmd, "hybridctl-part.XXXXXX") {
				n++
			}
		}
		return n
	}
	if err := phase.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if n := uploads(); n != 8 {
		t.Errorf("%d uploads, want 7 files and SHA256SUMS", n)
	}
	for _, f := range b.Linux {
		full := filepath.Join(b.LinuxDir, filepath.FromSlash(f.Path))
		local, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		got, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(got, local) {
			t.Errorf("%s: %d bytes, %v", f.Path, len(got), err)
		}
		if fi, _ := os.Stat(full); fi.Mode() != 0o644 {
			t.Errorf("%s: mode %v", f.Path, fi.Mode())
		}
	}
	if fi, _ := os.Stat(filepath.Join(b.LinuxDir, "linux-amd64")); fi.Mode() != 0o755|os.ModeDir {
		t.Errorf("directory mode %v", fi.Mode())
	}
	sumsFile, err := os.ReadFile(filepath.Join(b.LinuxDir, bundle.SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := bundle.ParseSums(bytes.NewReader(sumsFile), "SHA256SUMS")
	if err != nil || len(parsed) != 7 || strings.Contains(string(sumsFile), "manifests/") || strings.Contains(string(sumsFile), "windows-amd64/") {
		t.Errorf("the node's SHA256SUMS (%v):\n%s", err, sumsFile)
	}
	// Everything there: nothing to do.
	if run, reason, err := phase.ShouldRun(ctx, h); err != nil || run || !strings.Contains(reason, "all 7 bundle files") {
		t.Errorf("ShouldRun after the upload: %v %q %v", run, reason, err)
	}
	// A file changed on the node and a partial upload of an interrupted run.
	kubeadm := filepath.Join(b.LinuxDir, "linux-amd64", "kubeadm")
	if err := os.WriteFile(kubeadm, []byte("not kubeadm"), 0o644); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(b.LinuxDir, "linux-amd64", ".hybridctl-part.abc123")
	if err := os.WriteFile(part, []byte("half a kubelet"), 0o600); err != nil {
		t.Fatal(err)
	}
	if run, _, err := phase.ShouldRun(ctx, h); err != nil || !run {
		t.Errorf("ShouldRun with a changed kubeadm: %v %v", run, err)
	}
	before := uploads()
	if err := phase.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if n := uploads() - before; n != 2 {
		t.Errorf("the resumed run uploaded %d files, want kubeadm and SHA256SUMS", n)
	}
	if got, _ := os.ReadFile(kubeadm); string(got) != "fake linux-amd64/kubeadm\n" {
		t.Errorf("kubeadm on the node: %q", got)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("the partial upload is still there: %v", err)
	}
	// A file with the right content but the wrong mode is sent again.
	if err := os.Chmod(kubeadm, 0o600); err != nil {
		t.Fatal(err)
	}
	if run, _, _ := phase.ShouldRun(ctx, h); !run {
		t.Error("a 0600 file counts as present")
	}
	// The transfer is checked on the node: a bundle file that changed
	// on this machine after the check fails the upload, replacing nothing.
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64", "kubeadm"), []byte("changed since"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(kubeadm); err != nil {
		t.Fatal(err)
	}
	err = phase.Run(ctx, h)
	var ce *transport.CommandError
	if !errors.As(err, &ce) || !strings.Contains(string(ce.Output), "nothing was replaced") {
		t.Errorf("a file that changed after verification: %v", err)
	}
	if _, err := os.Stat(kubeadm); !os.IsNotExist(err) {
		t.Errorf("a bad transfer left kubeadm: %v", err)
	}
}

// labBundlePhase is the bundle upload of the lab's spec, from a test bundle.
func labBundlePhase(t *testing.T) *bundleUploadPhase {
	t.Helper()
	dir, _ := testBundle(t, "lab.yaml")
	b, err := BundleFrom(context.Background(), planFile(t, "lab.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	return &bundleUploadPhase{bundle: b}
}

// TestBundleUploadDryRun: the dry run names each file with its
// destination (Windows paths with backslashes under C:\k\bundle) and
// sha256; without a bundle the phase has no hosts.
func TestBundleUploadDryRun(t *testing.T) {
	phase := labBundlePhase(t)
	var win engine.Host
	for _, h := range labHosts() {
		if h.IsWindows() {
			win = h
		}
	}
	lines, err := phase.DryRun(context.Background(), win)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{`C:\k\bundle\windows-amd64\kubelet.exe unless it is there with sha256 `, `write C:\k\bundle\SHA256SUMS with the `} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "linux-amd64") {
		t.Errorf("a Windows node gets Linux files:\n%s", text)
	}
	if got := (&bundleUploadPhase{}).Narrow(labHosts()); len(got) != 0 {
		t.Errorf("without a bundle: targets %v", got)
	}
}

// planFile derives the plan of examples/NAME.
func planFile(t *testing.T, name string) *plan.Plan {
	t.Helper()
	res, err := spec.LoadFile(context.Background(), filepath.Join("..", "..", "..", "examples", name))
	if err != nil || res.Err() != nil {
		t.Fatalf("%s: %v %v", name, err, res.Err())
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
