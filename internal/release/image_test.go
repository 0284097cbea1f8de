package release

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// untar extracts a tar of regular files and directories into dir.
func untar(t *testing.T, data []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("tar entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("tar entry %q: type %c", h.Name, h.Typeflag)
		}
	}
}

// filesOf returns the regular files of an image's flattened filesystem.
func filesOf(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

// checkImageLayout checks an image layout tarball as crane (an OCI layout
// directory) and ctr import (index.json's name annotation) read it, and
// returns the index; binaries are the expected /hybridctl per platform.
func checkImageLayout(t *testing.T, tarball []byte, src Source, repository string, binaries map[string][]byte) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	untar(t, tarball, dir)
	for _, f := range []string{"oci-layout", "index.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("the layout lacks %s: %v", f, err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("index.json: %+v; want one image index", m.Manifests)
	}
	ann := m.Manifests[0].Annotations
	if ann["io.containerd.image.name"] != repository+":"+src.Version || ann["org.opencontainers.image.ref.name"] != src.Version {
		t.Errorf("index.json annotations %v: want the name ctr import uses", ann)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("go-containerregistry's validation: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != "application/vnd.oci.image.index.v1+json" || im.Annotations["org.opencontainers.image.revision"] != src.Commit {
		t.Errorf("index: media type %s, annotations %v", im.MediaType, im.Annotations)
	}
	if len(im.Manifests) != len(binaries) {
		t.Fatalf("index has %d images, want %d", len(im.Manifests), len(binaries))
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s without a platform", d.Digest)
		}
		plat := d.Platform.OS + "/" + d.Platform.Architecture
		want, ok := binaries[plat]
		if !ok {
			t.Errorf("unexpected platform %s", plat)
			continue
		}
		if d.Platform.Architecture == "arm64" && d.Platform.Variant != "v8" {
			t.Errorf("%s: variant %q, want v8", plat, d.Platform.Variant)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture || strings.Join(cf.Config.Entrypoint, " ") != "/hybridctl" ||
			cf.Config.User != "65532:65532" || !cf.Created.Time.Equal(src.Time) || cf.Config.Labels["org.opencontainers.image.version"] != src.Version {
			t.Errorf("%s config: os %s arch %s entrypoint %v user %q created %v labels %v", plat, cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.User, cf.Created, cf.Config.Labels)
		}
		files := filesOf(t, img)
		h := files["hybridctl"]
		if h == nil || h.Mode != 0o755 || h.Uid != 0 {
			t.Errorf("%s: /hybridctl %+v; want an executable owned by root", plat, h)
		}
		if files["etc/passwd"] == nil || files["LICENSE"] == nil {
			t.Errorf("%s: /etc/passwd or /LICENSE missing: %v", plat, files)
		}
		// The binary in the layer is the platform's.
		rc := mutate.Extract(img)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				t.Fatalf("%s: /hybridctl not found: %v", plat, err)
			}
			if h.Name == "hybridctl" {
				got, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: /hybridctl is not the platform's binary", plat)
				}
				break
			}
		}
		rc.Close()
	}
	return idx
}

// pushAndPull pushes idx to a registry on loopback (go-containerregistry's
// own, as crane push does) and pulls each platform back by platform.
func pushAndPull(t *testing.T, idx v1.ImageIndex, platforms []v1.Platform) {
	t.Helper()
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/hybridctl/hybridctl:v1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push: %v", err)
	}
	want, _ := idx.Digest()
	got, err := remote.Index(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("pulled index %s, pushed %s", d, want)
	}
	for _, p := range platforms {
		img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithPlatform(p))
		if err != nil {
			t.Fatalf("pull %s: %v", p, err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != p.Architecture {
			t.Errorf("pull %s: config %+v, %v", p, cf, err)
		}
	}
}

func TestImageLayout(t *testing.T) {
	src := Source{Version: "v1.2.3", Commit: strings.Repeat("c", 40), Time: testTime}
	bins := map[string][]byte{"linux/amd64": []byte("amd64 binary"), "linux/arm64": []byte("arm64 binary")}
	ins := []imageInput{{Platform{"linux", "amd64"}, bins["linux/amd64"]}, {Platform{"linux", "arm64"}, bins["linux/arm64"]}}
	meta := imageMeta{Repository: "registry.example.com/hybridctl", Source: src, License: []byte("licence\n"), Homepage: Homepage}
	a, err := imageLayoutTar(context.Background(), t.TempDir(), ins, meta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := imageLayoutTar(context.Background(), t.TempDir(), ins, meta)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same binaries gave two different image tarballs")
	}
	idx := checkImageLayout(t, a, src, meta.Repository, bins)
	pushAndPull(t, idx, []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}})

	other := []imageInput{{Platform{"linux", "amd64"}, []byte("another binary")}}
	c, err := imageLayoutTar(context.Background(), t.TempDir(), other, meta)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Error("other binaries gave the same tarball")
	}
	if _, err := imageLayoutTar(context.Background(), t.TempDir(), nil, meta); err == nil {
		t.Error("an image without any platform")
	}
	_ = fmt.Sprint()
}
