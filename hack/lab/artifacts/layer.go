package artifacts

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every file's modification time in the lab's images: the same
// inputs give the same bytes, so the same digests.
var epoch = time.Unix(0, 0).UTC()

// entry is one file, directory or symlink of an image layer.
type entry struct {
	Path string      // absolute path in the image
	Mode os.FileMode // permission bits (and os.ModeDir / os.ModeSymlink)
	Src  string      // a regular file's content: this host file...
	Data []byte      // ...or these bytes
	Link string      // a symlink's target
	UID  int         // owner (and group)
}

func file(p string, mode os.FileMode, src string) entry { return entry{Path: p, Mode: mode, Src: src} }
func data(p string, mode os.FileMode, d string) entry {
	return entry{Path: p, Mode: mode, Data: []byte(d)}
}
func link(p, target string) entry          { return entry{Path: p, Mode: os.ModeSymlink | 0o777, Link: target} }
func dir(p string, mode os.FileMode) entry { return entry{Path: p, Mode: os.ModeDir | mode} }

// tarLayer writes the entries as a tar stream in path order, every parent
// directory first (0755, root), with fixed times and owners.
func tarLayer(entries []entry) ([]byte, error) {
	byPath := map[string]entry{}
	for _, e := range entries {
		p := path.Clean("/" + e.Path)
		if old, ok := byPath[p]; ok && !sameEntry(old, e) {
			return nil, fmt.Errorf("layer: two different entries for %s", p)
		}
		e.Path = p
		byPath[p] = e
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = dir(d, 0o755)
			}
		}
	}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range byPath {
			if !yield(p) {
				return
			}
		}
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := byPath[p]
		if e.Mode&os.ModeDir == 0 && byPath[path.Dir(p)].Mode&os.ModeDir == 0 && path.Dir(p) != "/" {
			return nil, fmt.Errorf("layer: %s is inside %s, which is not a directory", p, path.Dir(p))
		}
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(e.Mode.Perm()), ModTime: epoch,
			Uid: e.UID, Gid: e.UID, Format: tar.FormatPAX}
		if e.Mode&os.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		var content []byte
		switch {
		case e.Mode&os.ModeDir != 0:
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		case e.Mode&os.ModeSymlink != 0:
			h.Typeflag = tar.TypeSymlink
			h.Linkname = e.Link
		default:
			h.Typeflag = tar.TypeReg
			content = e.Data
			if e.Src != "" {
				b, err := os.ReadFile(e.Src)
				if err != nil {
					return nil, fmt.Errorf("layer: %s: %w", p, err)
				}
				content = b
			}
			h.Size = int64(len(content))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", p, err)
		}
		if _, err := tw.Write(content); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sameEntry(a, b entry) bool {
	return a.Mode == b.Mode && a.Src == b.Src && bytes.Equal(a.Data, b.Data) && a.Link == b.Link && a.UID == b.UID
}

// newLayer makes a gzip layer (compressed once, kept in memory) of the entries.
func newLayer(entries []entry) (v1.Layer, error) {
	raw, err := tarLayer(entries)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithCompressedCaching)
}
