package artifacts

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BundleVersions are the versions a spec pins for what its bundle holds
// (plan's "versions"). The lab builds one version of each; LayoutBundle
// refuses any other and names the field.
type BundleVersions struct {
	Kubernetes, Containerd, Runc, CNIPlugins, Crictl string
}

// bundleMember is one file of a bundle tarball: its name in the archive and
// the built binary it comes from.
type bundleMember struct {
	name string // "bin/containerd", "./bridge", "crictl"
	file string // the artifact file (Builder.Path)
}

// bundleFile is one file of the bundle: a tarball packed from built
// binaries, or (no members) one binary copied as it is.
type bundleFile struct {
	path    string // relative to the bundle, in the upstream release's name
	members []bundleMember
	file    string // a single binary
}

// bundleFiles is the Linux part of the bundle layout (docs/bundle.md, the
// upstream release file names), for the versions v.
func bundleFiles(v BundleVersions) []bundleFile {
	const d = "linux-amd64/"
	var cni []bundleMember
	a, _ := Lookup("cni-plugins")
	for _, f := range a.Files {
		cni = append(cni, bundleMember{"./" + f, f})
	}
	return []bundleFile{
		{path: d + "containerd-" + v.Containerd + "-linux-amd64.tar.gz", members: []bundleMember{
			{"bin/containerd", "containerd"}, {"bin/containerd-shim-runc-v2", "containerd-shim-runc-v2"}, {"bin/ctr", "ctr"}}},
		{path: d + "runc.amd64", file: "runc"},
		{path: d + "cni-plugins-linux-amd64-v" + v.CNIPlugins + ".tgz", members: cni},
		{path: d + "crictl-v" + v.Crictl + "-linux-amd64.tar.gz", members: []bundleMember{{"crictl", "crictl"}}},
		{path: d + "kubeadm", file: "kubeadm"},
		{path: d + "kubectl", file: "kubectl"},
		{path: d + "kubelet", file: "kubelet"},
	}
}

// path is Path, or the test's stand-in.
func (b *Builder) path(ctx context.Context, file string) (string, error) {
	if b.pathOf != nil {
		return b.pathOf(ctx, file)
	}
	return b.Path(ctx, file)
}

// CheckBundleVersions says which pinned version the lab does not build.
func CheckBundleVersions(v BundleVersions) error {
	var bad []string
	for _, c := range []struct{ field, got, want string }{
		{"spec.kubernetesVersion", v.Kubernetes, KubernetesVersion},
		{"spec.containerd.version", v.Containerd, ContainerdVersion},
		{"spec.runc.version", v.Runc, RuncVersion},
		{"spec.cniPlugins.version", v.CNIPlugins, CNIPluginsVersion},
		{"spec.crictl.version", v.Crictl, CrictlVersion},
	} {
		if c.got != c.want {
			bad = append(bad, fmt.Sprintf("%s is %q; the lab builds %s", c.field, c.got, c.want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the lab cannot make this bundle: %s", strings.Join(bad, "; "))
	}
	return nil
}

// LayoutBundle lays the built binaries out as a bundle in dir, in the
// layout `hybridctl apply --bundle` reads: upstream-shaped tarballs and
// binaries under linux-amd64/ and a SHA256SUMS of every file, sorted by
// path. The tarballs are deterministic (sorted, fixed times and owners), so
// the same binaries give the same sums. A bundle whose inputs did not change
// (the .lab-stamp: each input's path, size and time) is kept as it is. The
// new bundle is made beside dir and renamed into place.
func (b *Builder) LayoutBundle(ctx context.Context, dir string, v BundleVersions) error {
	if err := CheckBundleVersions(v); err != nil {
		return err
	}
	files := bundleFiles(v)
	paths := map[string]string{} // artifact file -> built path
	var stamp strings.Builder
	for _, f := range files {
		fmt.Fprintf(&stamp, "%s\n", f.path)
		inputs := []string{f.file}
		if f.members != nil {
			inputs = nil
			for _, m := range f.members {
				inputs = append(inputs, m.file)
			}
		}
		for _, in := range inputs {
			p, err := b.path(ctx, in)
			if err != nil {
				return fmt.Errorf("bundle %s: %w", f.path, err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("bundle %s: %w", f.path, err)
			}
			paths[in] = p
			fmt.Fprintf(&stamp, "  %s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	// The stamp sits beside the bundle: the bundle holds only what
	// SHA256SUMS lists.
	stampPath := filepath.Clean(dir) + ".lab-stamp"
	if got, err := os.ReadFile(stampPath); err == nil && string(got) == stamp.String() {
		if err := CheckSums(dir); err == nil {
			fmt.Fprintf(b.Log, "lab: bundle in %s is up to date\n", dir)
			return nil
		}
	}
	if err := os.Remove(stampPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	began := time.Now()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after the rename
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	var sums []string
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		out := filepath.Join(tmp, f.path)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		var sum string
		if f.members != nil {
			sum, err = writeTarball(out, f.members, paths)
		} else {
			sum, err = copyFile(out, paths[f.file], 0o755)
		}
		if err != nil {
			return fmt.Errorf("bundle %s: %w", f.path, err)
		}
		sums = append(sums, sum+"  "+f.path)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i][66:] < sums[j][66:] })
	if err := os.WriteFile(filepath.Join(tmp, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := replaceDir(tmp, dir); err != nil {
		return err
	}
	if err := os.WriteFile(stampPath, []byte(stamp.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(b.Log, "lab: bundle laid out in %s in %s\n", dir, time.Since(began).Round(time.Second))
	return nil
}

func create(path string, mode os.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
}

func copyFile(dst, src string, mode os.FileMode) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := create(dst, mode)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeTarball packs members (sorted by name) into a gzipped tar at dst, the
// way the upstream release tarballs are laid out: a directory entry for each
// parent, files 0755 owned by root, every time the Unix epoch.
func writeTarball(dst string, members []bundleMember, paths map[string]string) (string, error) {
	out, err := create(dst, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Close()
	h := sha256.New()
	zw, err := gzip.NewWriterLevel(io.MultiWriter(out, h), gzip.BestSpeed)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	ms := append([]bundleMember(nil), members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	for _, m := range ms {
		if d := filepath.Dir(m.name); d != "." && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return "", err
			}
		}
		src := paths[m.file]
		fi, err := os.Stat(src)
		if err != nil {
			return "", err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o755, Size: fi.Size(), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return "", err
		}
		in, err := os.Open(src)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(tw, in)
		in.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckSums checks every line of dir/SHA256SUMS against its file, and that
// the bundle holds no file the list does not name.
func CheckSums(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return err
	}
	listed := map[string]bool{"SHA256SUMS": true}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, path, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || path == "" {
			return fmt.Errorf("%s/SHA256SUMS:%d: not \"<sha256>  <path>\"", dir, i+1)
		}
		listed[path] = true
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(path)))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != sum {
			return fmt.Errorf("%s/%s: sha256 %s, SHA256SUMS says %s", dir, path, got, sum)
		}
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !listed[filepath.ToSlash(rel)] {
			return fmt.Errorf("%s: not in SHA256SUMS", p)
		}
		return nil
	})
}
