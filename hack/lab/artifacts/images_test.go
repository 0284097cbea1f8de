package artifacts

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// testBuilder builds into the real lab cache (builds are minutes each, and
// shared with hack/lab/lab), logging to the test.
func testBuilder(t *testing.T) *Builder {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the lab's artifacts (minutes); not with -short")
	}
	b, err := NewBuilder(testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// files reads an image's flattened filesystem: path -> header and content.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
}

func TestImagesDeterministicAndComplete(t *testing.T) {
	b := testBuilder(t)
	ctx := context.Background()
	if err := b.Build(ctx, "lab-programs"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pause", "hello", "podnet"} {
		t.Run(name, func(t *testing.T) {
			d, ok := LookupImage(name)
			if !ok {
				t.Fatalf("no image %s", name)
			}
			img1, err := b.BuildImage(ctx, KubernetesVersion, d)
			if err != nil {
				t.Fatal(err)
			}
			img2, err := b.BuildImage(ctx, KubernetesVersion, d)
			if err != nil {
				t.Fatal(err)
			}
			d1, _ := img1.Digest()
			d2, _ := img2.Digest()
			if d1 != d2 {
				t.Fatalf("two builds of the same inputs differ: %s and %s", d1, d2)
			}
			cf, err := img1.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.IsZero() {
				t.Errorf("config: os %s arch %s created %v", cf.OS, cf.Architecture, cf.Created)
			}
			if strings.Join(cf.Config.Entrypoint, " ") != "/"+name || cf.Config.User != d.User {
				t.Errorf("entrypoint %v user %q, want /%s and %q", cf.Config.Entrypoint, cf.Config.User, name, d.User)
			}
			fs := files(t, img1)
			bin := fs["/"+name]
			if bin == nil || bin.Mode != 0o755 || bin.Uid != 0 || bin.Size < 1<<20 {
				t.Fatalf("/%s in the image: %+v", name, bin)
			}
			if h := fs["/tmp"]; h == nil || h.Mode != 0o1777 {
				t.Errorf("/tmp: %+v", h)
			}
			if h := fs["/home/nonroot"]; h == nil || h.Uid != 65532 {
				t.Errorf("/home/nonroot: %+v", h)
			}
			for p, h := range fs {
				if !h.ModTime.Equal(epoch) {
					t.Errorf("%s has time %v, want %v", p, h.ModTime, epoch)
				}
			}
		})
	}
}

func TestImageChangesWithItsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("not with -short")
	}
	// A builder whose cache holds a fake lab-programs artifact: the
	// image digest follows the binary's bytes.
	b := &Builder{Cache: t.TempDir(), Root: t.TempDir(), Log: io.Discard}
	dir := filepath.Join(b.Cache, "bin", "lab-programs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	static, err := os.ReadFile(mustSelf(t))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := LookupImage("pause")
	var digests []v1.Hash
	for _, extra := range []string{"", "x"} {
		if err := os.WriteFile(filepath.Join(dir, "pause"), append(static, extra...), 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := b.BuildImage(context.Background(), KubernetesVersion, d)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := img.Digest()
		digests = append(digests, h)
	}
	if digests[0] == digests[1] {
		t.Fatal("a changed binary gave the same image digest")
	}
}

// mustSelf is this test binary, statically linked when CGO is off; skip
// the static check's own refusal by finding a static ELF: the test binary
// qualifies under CGO_ENABLED=0, else a built lab program.
func mustSelf(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if checkStatic(self) == nil {
		return self
	}
	b := testBuilder(t)
	if err := b.Build(context.Background(), "lab-programs"); err != nil {
		t.Fatal(err)
	}
	p, err := b.Path(context.Background(), "pause")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDynamicBinaryRefused(t *testing.T) {
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		err := checkStatic(p)
		if err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("checkStatic(%s) = %v, want a dynamic-linking error", p, err)
		}
		return
	}
	t.Fatal("no dynamically linked program found to test with")
}

func TestTarLayerRejectsConflicts(t *testing.T) {
	if _, err := tarLayer([]entry{data("/a", 0o644, "x"), data("/a", 0o644, "y")}); err == nil {
		t.Error("two different contents for one path were accepted")
	}
	if _, err := tarLayer([]entry{data("/a", 0o644, "x"), data("/a", 0o644, "x")}); err != nil {
		t.Errorf("the same entry twice: %v", err)
	}
	if _, err := tarLayer([]entry{data("/a", 0o644, "x"), data("/a/b", 0o644, "y")}); err == nil {
		t.Error("a file inside a file was accepted")
	}
	if _, err := tarLayer([]entry{file("/a", 0o644, "/nonexistent/file")}); err == nil {
		t.Error("a missing source file was accepted")
	}
}
