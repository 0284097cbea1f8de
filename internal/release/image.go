package release

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the in-cluster approver's Deployment runs as 65532
// (docs/csr.md); /etc/passwd names it.
const (
	imageUID    = 65532
	imageBinary = "/hybridctl"
)

// imageInput is one platform's image content.
type imageInput struct {
	Platform Platform
	Binary   []byte // the static linux binary
}

// imageMeta is what the image says about itself (labels and annotations).
type imageMeta struct {
	Repository string // e.g. ghcr.io/hybridctl/hybridctl
	Source     Source
	License    []byte
	Homepage   string
}

func (m imageMeta) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "hybridctl",
		"org.opencontainers.image.description": "hybridctl: the in-cluster kubelet-serving CSR approver (hybridctl csr approve --watch)",
		"org.opencontainers.image.version":     m.Source.Version,
		"org.opencontainers.image.revision":    m.Source.Commit,
		"org.opencontainers.image.created":     m.Source.Date(),
		"org.opencontainers.image.source":      m.Homepage,
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// imageLayer is the image's one layer: /hybridctl, /LICENSE, and an
// /etc/passwd and /etc/group that name the nonroot user; root-owned,
// sorted, every time the source date.
func imageLayer(binary, license []byte, mtime time.Time) (v1.Layer, error) {
	type ent struct {
		name string
		mode int64
		data []byte
		dir  bool
	}
	ents := []ent{
		{name: "LICENSE", mode: 0o644, data: license},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", imageUID))},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", imageUID, imageUID))},
		{name: "hybridctl", mode: 0o755, data: binary},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime.UTC(), Format: tar.FormatUSTAR, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

func ociPlatform(p Platform) v1.Platform {
	v := v1.Platform{OS: p.OS, Architecture: p.Arch}
	if p.Arch == "arm64" {
		v.Variant = "v8"
	}
	return v
}

// platformImage is one platform's image: OCI media types, entrypoint
// /hybridctl, user 65532, created at the source date.
func platformImage(in imageInput, meta imageMeta) (v1.Image, error) {
	t := meta.Source.Time
	l, err := imageLayer(in.Binary, meta.License, t)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: t}, CreatedBy: "hack/release.sh", Comment: "hybridctl " + meta.Source.Version}})
	if err != nil {
		return nil, fmt.Errorf("image for %s: %w", in.Platform, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image for %s: %w", in.Platform, err)
	}
	cf = cf.DeepCopy()
	pl := ociPlatform(in.Platform)
	cf.OS, cf.Architecture, cf.Variant = pl.OS, pl.Architecture, pl.Variant
	cf.Created = v1.Time{Time: t}
	cf.Config.Entrypoint = []string{imageBinary}
	cf.Config.User = fmt.Sprintf("%d:%d", imageUID, imageUID)
	cf.Config.Labels = meta.labels()
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("image for %s: %w", in.Platform, err)
	}
	return img, nil
}

// imageIndex is the multi-platform index of the images, annotated like
// the images' labels.
func imageIndex(ins []imageInput, meta imageMeta) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, in := range ins {
		img, err := platformImage(in, meta)
		if err != nil {
			return nil, err
		}
		pl := ociPlatform(in.Platform)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pl}})
	}
	return mutate.Annotations(idx, meta.labels()).(v1.ImageIndex), nil
}

// ImageRefName is the reference the image is named by in the layout's
// index.json, for ctr import: REPOSITORY:VERSION.
func ImageRefName(repository, version string) string { return repository + ":" + version }

// imageLayoutTar writes the index as an OCI image layout (oci-layout,
// index.json, blobs/sha256/...) in a temporary directory under tmp, and
// returns it as a tar: the layout at the tar's root, entries sorted, owned
// by root, every time the source date. index.json names the index with
// io.containerd.image.name (the full reference, which ctr import uses)
// and org.opencontainers.image.ref.name (the version).
func imageLayoutTar(ctx context.Context, tmp string, ins []imageInput, meta imageMeta) ([]byte, error) {
	if len(ins) == 0 {
		return nil, fmt.Errorf("image: no linux platform to build it for")
	}
	idx, err := imageIndex(ins, meta)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tmp, "oci-layout-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("image layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ImageRefName(meta.Repository, meta.Source.Version),
		"org.opencontainers.image.ref.name": meta.Source.Version,
	})); err != nil {
		return nil, fmt.Errorf("image layout: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return dirTar(dir, meta.Source.Time)
}

// dirTar is a tar of the regular files and directories under dir, relative
// to it, sorted, root-owned, every time mtime.
func dirTar(dir string, mtime time.Time) ([]byte, error) {
	type ent struct {
		rel string
		abs string
		dir bool
	}
	var ents []ent
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			ents = append(ents, ent{rel: filepath.ToSlash(rel) + "/", abs: path, dir: true})
		case d.Type().IsRegular():
			ents = append(ents, ent{rel: filepath.ToSlash(rel), abs: path})
		default:
			return fmt.Errorf("%s: not a regular file or directory", path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b ent) int {
		switch {
		case a.rel < b.rel:
			return -1
		case a.rel > b.rel:
			return 1
		}
		return 0
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.rel, Mode: 0o644, ModTime: mtime.UTC(), Format: tar.FormatUSTAR, Typeflag: tar.TypeReg}
		var data []byte
		if e.dir {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			if data, err = os.ReadFile(e.abs); err != nil {
				return nil, err
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", e.rel, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("%s: %w", e.rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
