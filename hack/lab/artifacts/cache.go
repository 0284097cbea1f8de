package artifacts

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir is where the lab's artifacts are built and kept:
// $HYBRIDCTL_LAB_CACHE, else <user cache dir>/hybridctl/lab. Layout:
//
//	bin/<artifact>/          one directory per built artifact (its files and .stamp)
//	debs/<set>/              Debian packages fetched by apt-get download, and their
//	                         extracted tree (root/), for image contents and cgo builds
//	work/                    temporary build directories, renamed into place
func CacheDir() (string, error) {
	if d := os.Getenv("HYBRIDCTL_LAB_CACHE"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate the cache (set HYBRIDCTL_LAB_CACHE): %w", err)
	}
	return filepath.Join(c, "hybridctl", "lab"), nil
}

// replaceDir moves the finished directory tmp to dst. A directory cannot be
// renamed over a non-empty one, so an old dst is first renamed aside and
// removed after; readers see either the old or the new directory, never a
// half-built one.
func replaceDir(tmp, dst string) error {
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = dst + ".old"
		_ = os.RemoveAll(old)
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("replace %s: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return nil
}
