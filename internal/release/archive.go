package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// member is one file of an archive.
type member struct {
	Name string      // a plain file name: archives are flat
	Mode fs.FileMode // permission bits: 0755 for the binary, 0644 otherwise
	Data []byte
}

func sortedMembers(files []member) ([]member, error) {
	out := slices.Clone(files)
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.Name, b.Name) })
	for i, f := range out {
		if f.Name == "" || strings.ContainsAny(f.Name, `/\`) || f.Name == "." || f.Name == ".." {
			return nil, fmt.Errorf("archive member %q: want a plain file name", f.Name)
		}
		if i > 0 && out[i-1].Name == f.Name {
			return nil, fmt.Errorf("archive member %q twice", f.Name)
		}
	}
	return out, nil
}

// tarGz is a gzip-compressed tar of files: entries sorted by name, owned by
// root (uid and gid 0, no names), every time mtime, PAX-free USTAR headers,
// and a gzip header without name or time. The same files and mtime give the
// same bytes.
func tarGz(files []member, mtime time.Time) ([]byte, error) {
	files, err := sortedMembers(files)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.Name, Size: int64(len(f.Data)), Mode: int64(f.Mode.Perm()),
			ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipOf is a zip of files: entries sorted by name, deflated, every time
// mtime (UTC), Unix permission bits in the external attributes. The same
// files and mtime give the same bytes.
func zipOf(files []member, mtime time.Time) ([]byte, error) {
	files, err := sortedMembers(files)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	for _, f := range files {
		h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: mtime.UTC().Truncate(time.Second)}
		h.SetMode(f.Mode.Perm())
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, fmt.Errorf("zip %s: %w", f.Name, err)
		}
		if _, err := w.Write(f.Data); err != nil {
			return nil, fmt.Errorf("zip %s: %w", f.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
