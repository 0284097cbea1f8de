package artifacts

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
)

// BundleVersions are the versions a spec pins for what its bundle holds
// (plan's "versions"). The lab builds the Kubernetes versions of Releases
// and one version of everything else; LayoutBundle refuses any other and
// names the field.
type BundleVersions struct {
	Kubernetes, Containerd, Runc, CNIPlugins, Crictl string
}

// bundleMember is one file of a bundle tarball: its name in the archive and
// the built binary it comes from.
type bundleMember struct {
	name string // "bin/containerd", "./bridge", "crictl"
	file string // the artifact file (Builder.Path)
}

// bundleRecipe is how the lab makes one artifact of the bundle: a tarball
// packed from built binaries, one binary copied as it is, or a manifest
// from the repository's vendored copy (testdata/third_party; gzipped ones
// are decompressed).
type bundleRecipe struct {
	members  []bundleMember
	file     string
	manifest string // relative to the repository root
}

// calicoManifests is where the repository vendors Calico's manifests.
const calicoManifests = "testdata/third_party/calico-v3.33"

// recipe says how the lab makes the artifact a, or why it cannot.
func recipe(a bundle.Artifact) (bundleRecipe, error) {
	switch a.OS + "/" + a.Name {
	case bundle.OSLinux + "/" + bundle.NameContainerd:
		return bundleRecipe{members: []bundleMember{
			{"bin/containerd", "containerd"}, {"bin/containerd-shim-runc-v2", "containerd-shim-runc-v2"}, {"bin/ctr", "ctr"}}}, nil
	case bundle.OSLinux + "/" + bundle.NameRunc:
		return bundleRecipe{file: "runc"}, nil
	case bundle.OSLinux + "/" + bundle.NameCNIPlugins:
		var cni []bundleMember
		c, _ := Lookup("cni-plugins")
		for _, f := range c.Files {
			cni = append(cni, bundleMember{"./" + f, f})
		}
		return bundleRecipe{members: cni}, nil
	case bundle.OSLinux + "/" + bundle.NameCrictl:
		return bundleRecipe{members: []bundleMember{{"crictl", "crictl"}}}, nil
	case bundle.OSLinux + "/" + bundle.NameKubelet, bundle.OSLinux + "/" + bundle.NameKubeadm, bundle.OSLinux + "/" + bundle.NameKubectl:
		return bundleRecipe{file: a.Name}, nil
	case bundle.OSWorkstation + "/" + bundle.NameCalicoCRDs, bundle.OSWorkstation + "/" + bundle.NameTigeraOperator:
		return bundleRecipe{manifest: calicoManifests + "/" + a.File()}, nil
	}
	return bundleRecipe{}, fmt.Errorf("the lab cannot make %s (%s %s %s): it builds Linux binaries and has Calico's manifests only", a.Path, a.OS, a.Name, a.Version)
}

// CheckBundleVersions says which pinned version the lab does not build.
func CheckBundleVersions(v BundleVersions) error {
	var bad []string
	if _, err := LookupRelease(v.Kubernetes); err != nil {
		bad = append(bad, fmt.Sprintf("spec.kubernetesVersion is %q; the lab builds %s", v.Kubernetes, strings.Join(KubernetesVersions(), " and ")))
	}
	for _, c := range []struct{ field, got, want string }{
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

// LayoutBundle lays the built binaries out as the plan's bundle in dir (the
// kubelet, kubeadm and kubectl of the plan's Kubernetes version), exactly
// the artifacts internal/bundle lists for the plan (the layout `hybridctl
// apply --bundle` and `hybridctl bundle verify` read): upstream-shaped tarballs and binaries under linux-amd64/, Calico's
// manifests under manifests/ (the repository's vendored copies), and a
// SHA256SUMS of every file. The tarballs are deterministic (sorted, fixed
// times and owners), so the same binaries give the same sums. A bundle whose
// inputs did not change (a stamp beside dir: each input's path, size and
// time) and that still verifies is kept as it is. The new bundle is made
// beside dir, verified, and renamed into place.
func (b *Builder) LayoutBundle(ctx context.Context, dir string, p *plan.Plan) error {
	v := p.Versions
	if err := CheckBundleVersions(BundleVersions{Kubernetes: v.Kubernetes, Containerd: v.Containerd, Runc: v.Runc,
		CNIPlugins: v.CNIPlugins, Crictl: v.Crictl}); err != nil {
		return err
	}
	arts, err := bundle.Artifacts(p)
	if err != nil {
		return err
	}
	recipes := make([]bundleRecipe, len(arts))
	paths := map[string]string{} // artifact file or manifest -> its path here
	var stamp strings.Builder
	for i, a := range arts {
		r, err := recipe(a)
		if err != nil {
			return err
		}
		recipes[i] = r
		fmt.Fprintf(&stamp, "%s\n", a.Path)
		var inputs []string
		switch {
		case r.members != nil:
			for _, m := range r.members {
				inputs = append(inputs, m.file)
			}
		case r.file != "":
			inputs = []string{r.file}
		}
		for _, in := range inputs {
			p, err := b.path(ctx, v.Kubernetes, in)
			if err != nil {
				return fmt.Errorf("bundle %s: %w", a.Path, err)
			}
			paths[in] = p
		}
		if r.manifest != "" {
			p := filepath.Join(b.Root, filepath.FromSlash(r.manifest))
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				p += ".gz"
			}
			paths[r.manifest] = p
			inputs = []string{r.manifest}
		}
		for _, in := range inputs {
			fi, err := os.Stat(paths[in])
			if err != nil {
				return fmt.Errorf("bundle %s: %w", a.Path, err)
			}
			fmt.Fprintf(&stamp, "  %s %d %d\n", paths[in], fi.Size(), fi.ModTime().UnixNano())
		}
	}
	// The stamp sits beside the bundle: the bundle holds only what
	// SHA256SUMS lists.
	stampPath := filepath.Clean(dir) + ".lab-stamp"
	if got, err := os.ReadFile(stampPath); err == nil && string(got) == stamp.String() {
		if rep, err := bundle.VerifyArtifacts(ctx, dir, arts); err == nil && rep.Err() == nil && len(rep.Extra) == 0 {
			fmt.Fprintf(b.Log, "lab: bundle in %s is up to date\n", dir)
			return nil
		}
	}
	if err := os.Remove(stampPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	var sums []bundle.Sum
	for i, a := range arts {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := recipes[i]
		out := filepath.Join(tmp, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		var sum string
		switch {
		case r.members != nil:
			sum, err = writeTarball(out, r.members, paths)
		case r.file != "":
			sum, err = copyFile(out, paths[r.file], 0o755, false)
		default:
			sum, err = copyFile(out, paths[r.manifest], 0o644, strings.HasSuffix(paths[r.manifest], ".gz"))
		}
		if err != nil {
			return fmt.Errorf("bundle %s: %w", a.Path, err)
		}
		sums = append(sums, bundle.Sum{SHA256: sum, Path: a.Path})
	}
	if err := bundle.WriteSums(ctx, filepath.Join(tmp, bundle.SumsFile), sums); err != nil {
		return err
	}
	rep, err := bundle.VerifyArtifacts(ctx, tmp, arts)
	if err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return fmt.Errorf("the bundle the lab laid out does not verify: %w", err)
	}
	if len(rep.Extra) > 0 {
		return fmt.Errorf("the bundle the lab laid out has files the plan does not name: %s", strings.Join(rep.Extra, ", "))
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

// path is PathFor, or the test's stand-in.
func (b *Builder) path(ctx context.Context, kubernetes, file string) (string, error) {
	if b.pathOf != nil {
		return b.pathOf(ctx, kubernetes, file)
	}
	return b.PathFor(ctx, kubernetes, file)
}

func create(path string, mode os.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
}

// copyFile copies src to dst (gunzipping it when gunzip is set) and
// returns the sha256 of what it wrote.
func copyFile(dst, src string, mode os.FileMode, gunzip bool) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var in io.Reader = f
	if gunzip {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
		defer zr.Close()
		in = zr
	}
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
