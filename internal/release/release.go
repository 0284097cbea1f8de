// Package release builds hybridctl's release files from a commit: an
// archive per platform (the binary, LICENSE, README.md), an SBOM per
// binary, the krew plugin manifest, the in-cluster CSR approver's image as
// an OCI layout tarball, and SHA256SUMS. The same commit gives the same
// bytes (docs/release.md). hack/release.sh is its command.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// Defaults for the places a release is published.
const (
	Homepage          = "https://github.com/hybridctl/hybridctl"
	DefaultRepository = "ghcr.io/hybridctl/hybridctl"
)

// DefaultDownloadURL is where the archives of version are published (the
// krew manifest's URIs point there).
func DefaultDownloadURL(version string) string {
	return Homepage + "/releases/download/" + version + "/"
}

// Options say what to build.
type Options struct {
	Source    Source
	OutDir    string
	Platforms []Platform
	// DownloadURL is the directory URL the archives are published in
	// (default DefaultDownloadURL).
	DownloadURL string
	// Repository is the image's repository, named in the image layout
	// (default DefaultRepository).
	Repository string
	// Signer signs the Windows executable; nil leaves it unsigned.
	Signer *Signer
	// SBOMTool is the SBOM generator's module@version (default SBOMTool).
	SBOMTool string
	// Progress gets one line per step (nil: nothing).
	Progress io.Writer
}

// File is one release file.
type File struct {
	Name   string // base name in OutDir
	SHA256 string // hex
	Size   int64
}

// Names of the release files.
func ArchiveName(version string, p Platform) string {
	return fmt.Sprintf("hybridctl_%s_%s_%s%s", version, p.OS, p.Arch, p.ArchiveExt())
}

func SBOMName(version string, p Platform) string {
	return fmt.Sprintf("hybridctl_%s_%s_%s.sbom.cdx.json", version, p.OS, p.Arch)
}

func ImageName(version string) string { return fmt.Sprintf("hybridctl_%s_image.oci.tar", version) }

const (
	KrewManifestName = KrewPluginName + ".yaml"
	ChecksumsName    = "SHA256SUMS"
)

// Build builds the release into opts.OutDir, which must not exist or be
// empty, and lists its files by name. Everything is built in a temporary directory beside it and
// renamed into place at the end: OutDir never holds half a release.
func Build(ctx context.Context, opts Options) ([]File, error) {
	src := opts.Source
	if err := src.Check(); err != nil {
		return nil, err
	}
	if len(opts.Platforms) == 0 {
		return nil, fmt.Errorf("no platform to build")
	}
	if opts.DownloadURL == "" {
		opts.DownloadURL = DefaultDownloadURL(src.Version)
	}
	if opts.Repository == "" {
		opts.Repository = DefaultRepository
	}
	if opts.SBOMTool == "" {
		opts.SBOMTool = SBOMTool
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: a release goes into a new or empty directory", out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	files := filepath.Join(stage, "files")
	work := filepath.Join(stage, "work")
	for _, d := range []string{files, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	license, err := os.ReadFile(filepath.Join(src.Dir, "LICENSE"))
	if err != nil {
		return nil, fmt.Errorf("the archives carry LICENSE: %w", err)
	}
	readme, err := os.ReadFile(filepath.Join(src.Dir, "README.md"))
	if err != nil {
		return nil, fmt.Errorf("the archives carry README.md: %w", err)
	}
	write := func(name string, data []byte) error {
		return atomicfile.Write(ctx, filepath.Join(files, name), data, 0o644, atomicfile.Options{})
	}

	progress("release: building the SBOM generator")
	sbomTool, err := installSBOMTool(ctx, opts.SBOMTool, filepath.Join(work, "tools"))
	if err != nil {
		return nil, err
	}
	var krew []krewArchive
	var images []imageInput
	for _, p := range opts.Platforms {
		progress("release: building %s %s", src.Version, p)
		bin := filepath.Join(work, p.OS+"_"+p.Arch, p.Exe())
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return nil, err
		}
		if err := buildBinary(ctx, src, p, bin); err != nil {
			return nil, err
		}
		if p.OS == "windows" && opts.Signer != nil {
			progress("release: signing %s", p.Exe())
			signed := bin + ".signed"
			s := *opts.Signer
			s.Description, s.URL = "hybridctl "+src.Version, Homepage
			if err := s.Sign(ctx, bin, signed); err != nil {
				return nil, err
			}
			if err := os.Rename(signed, bin); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		members := []member{{Name: p.Exe(), Mode: 0o755, Data: data}, {Name: "LICENSE", Mode: 0o644, Data: license}, {Name: "README.md", Mode: 0o644, Data: readme}}
		var archive []byte
		if p.ArchiveExt() == ".zip" {
			archive, err = zipOf(members, src.Time)
		} else {
			archive, err = tarGz(members, src.Time)
		}
		if err != nil {
			return nil, fmt.Errorf("archive for %s: %w", p, err)
		}
		name := ArchiveName(src.Version, p)
		if err := write(name, archive); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(archive)
		krew = append(krew, krewArchive{Platform: p, Name: name, SHA256: hex.EncodeToString(sum[:])})
		progress("release: SBOM of %s", p)
		if err := sbom(ctx, sbomTool, bin, p, src.Version, filepath.Join(files, SBOMName(src.Version, p))); err != nil {
			return nil, err
		}
		if p.OS == "linux" {
			images = append(images, imageInput{Platform: p, Binary: data})
		}
	}

	manifest, err := krewManifest(src.Version, Homepage, opts.DownloadURL, krew)
	if err != nil {
		return nil, err
	}
	if err := write(KrewManifestName, manifest); err != nil {
		return nil, err
	}
	if len(images) > 0 {
		progress("release: image for %s", strings.Join(platformNames(images), ", "))
		tarball, err := imageLayoutTar(ctx, work, images, imageMeta{Repository: opts.Repository, Source: src, License: license, Homepage: Homepage})
		if err != nil {
			return nil, err
		}
		if err := write(ImageName(src.Version), tarball); err != nil {
			return nil, err
		}
	}

	list, err := checksums(files)
	if err != nil {
		return nil, err
	}
	if err := write(ChecksumsName, formatChecksums(list)); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(files, ChecksumsName))
	if err != nil {
		return nil, err
	}
	sum, err := sha256File(filepath.Join(files, ChecksumsName))
	if err != nil {
		return nil, err
	}
	list = append(list, File{Name: ChecksumsName, SHA256: sum, Size: fi.Size()})
	slices.SortFunc(list, func(a, b File) int { return strings.Compare(a.Name, b.Name) })

	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	if err := os.Rename(files, out); err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(out)); err != nil {
		return nil, err
	}
	progress("release: %d files in %s", len(list), out)
	return list, nil
}

func platformNames(ins []imageInput) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Platform.String())
	}
	return out
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checksums lists the files of dir with their sha256, sorted by name.
func checksums(dir string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var list []File
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s in %s: not a regular file", e.Name(), dir)
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		sum, err := sha256File(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		list = append(list, File{Name: e.Name(), SHA256: sum, Size: info.Size()})
	}
	slices.SortFunc(list, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// formatChecksums is sha256sum's format: "HEX  NAME", one file a line, so
// that sha256sum -c SHA256SUMS checks them.
func formatChecksums(list []File) []byte {
	var b strings.Builder
	for _, f := range list {
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Name)
	}
	return []byte(b.String())
}

// syncDir makes a rename in the directory at path durable.
func syncDir(path string) error {
	d, err := atomicfile.OpenDir(path, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
