package artifacts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// debs fetches Debian packages with `apt-get download` (the host's own
// sources) into debs/<set>/ and extracts them with `dpkg-deb -x` into
// debs/<set>/root, once: a stamp names the packages. It returns the root.
func (b *Builder) debs(ctx context.Context, set string, pkgs []string) (string, error) {
	dir := filepath.Join(b.Cache, "debs", set)
	root := filepath.Join(dir, "root")
	pkgs = slices.Sorted(slices.Values(pkgs))
	want := "packages=" + strings.Join(pkgs, " ") + "\n"
	if got, err := os.ReadFile(filepath.Join(dir, ".stamp")); err == nil && string(got) == want {
		return root, nil
	}
	work := filepath.Join(b.Cache, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", fmt.Errorf("debian packages %s: %w", set, err)
	}
	tmp, err := os.MkdirTemp(work, "debs-"+set+"-")
	if err != nil {
		return "", fmt.Errorf("debian packages %s: %w", set, err)
	}
	defer os.RemoveAll(tmp)
	// apt's sandbox user cannot write into a private temp dir.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(b.Log, "lab: apt-get download %s\n", strings.Join(pkgs, " "))
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download", "-q"}, pkgs...)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w\n%s(run apt-get update if a package is not found)", strings.Join(pkgs, " "), err, out)
	}
	files, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(files) != len(pkgs) {
		return "", fmt.Errorf("apt-get download %s: got %d packages, want %d", strings.Join(pkgs, " "), len(files), len(pkgs))
	}
	var names []string
	for _, f := range files {
		cmd := exec.CommandContext(ctx, "dpkg-deb", "-x", f, filepath.Join(tmp, "root"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("dpkg-deb -x %s: %w\n%s", filepath.Base(f), err, out)
		}
		names = append(names, filepath.Base(f))
	}
	// The exact package files (name_version_arch.deb) are kept beside the
	// stamp, so an image's contents can be traced to them.
	if err := os.WriteFile(filepath.Join(tmp, "packages.txt"), []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	for _, f := range files {
		_ = os.Remove(f)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".stamp"), []byte(want), 0o644); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if err := replaceDir(tmp, dir); err != nil {
		return "", fmt.Errorf("debian packages %s: %w", set, err)
	}
	return root, nil
}
