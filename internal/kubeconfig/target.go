package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// TargetPath picks the kubeconfig file to change, as kubectl does for a
// single file: the explicit path (--kubeconfig), else the first entry of
// $KUBECONFIG (kubeconfigEnv), else ~/.kube/config. A symlink is followed so
// that the link itself survives the rename of an atomic write (the user
// named it, and kubectl follows it), except another user's link in a
// sticky, world-writable directory, which the kernel does not follow
// either (atomicfile.FollowLink).
func TargetPath(explicit, kubeconfigEnv string) (string, error) {
	p := explicit
	if p == "" {
		for _, e := range filepath.SplitList(kubeconfigEnv) {
			if e != "" {
				p = e
				break
			}
		}
	}
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", newErr(KindIO, "cannot find the home directory for ~/.kube/config; pass --kubeconfig", err)
		}
		p = filepath.Join(home, ".kube", "config")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", newErr(KindIO, fmt.Sprintf("kubeconfig %s", p), err)
	}
	return resolveLink(abs)
}

// maxSymlinks is how many symbolic links resolveLink follows: Linux's
// limit (MAXSYMLINKS), so that a chain kubectl can open resolves here too.
const maxSymlinks = 40

// resolveLink follows a chain of symlinks at path (whose target may not
// exist yet). Relative link targets are relative to the link's directory.
func resolveLink(path string) (string, error) {
	start := path
	// One more round than links: the last one finds the file itself.
	for i := 0; i <= maxSymlinks; i++ {
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", newErr(KindIO, fmt.Sprintf("kubeconfig %s", path), err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", newErr(KindIO, fmt.Sprintf("kubeconfig %s", path), err)
		}
		// As the kernel: not another user's link in a sticky directory.
		if err := atomicfile.FollowLink(path, dest, fi); err != nil {
			return "", newErr(KindIO, fmt.Sprintf("kubeconfig %s", start), err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", newErr(KindIO, fmt.Sprintf("kubeconfig %s: too many levels of symbolic links", start), nil)
}
