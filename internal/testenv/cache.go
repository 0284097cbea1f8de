package testenv

import (
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
)

// cacheFormat changes whenever what Load writes changes (which requests,
// which status), so that an older cache entry is never reused.
const cacheFormat = "testenv-etcd-cache 1"

// cacheKeep is how many entries a cache directory keeps: the newest used.
const cacheKeep = 2

// cacheKey names the etcd data that Start with opts would produce: the
// binaries (size and modification time), the options that add objects,
// and every fixture file's name and content.
func cacheKey(opts Options, etcdBin, apiserverBin string, calicoCRDs string, load []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", cacheFormat, KubernetesVersion)
	for _, bin := range []string{etcdBin, apiserverBin} {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("cache key: %w", err)
		}
		fmt.Fprintf(h, "bin %s %d %d\n", filepath.Base(bin), fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "flags %q\n", opts.APIServerFlags)
	files := func(dir string) error {
		var names []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cache key: %w", err)
		}
		sort.Strings(names)
		fmt.Fprintf(h, "dir %d\n", len(names))
		for _, n := range names {
			if err := hashFile(h, dir, n); err != nil {
				return err
			}
		}
		return nil
	}
	if calicoCRDs != "" {
		if err := hashFile(h, filepath.Dir(calicoCRDs), calicoCRDs); err != nil {
			return "", err
		}
	}
	for _, d := range load {
		if err := files(d); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func hashFile(h io.Writer, dir, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("cache key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cache key: %w", err)
	}
	rel, _ := filepath.Rel(dir, name)
	fmt.Fprintf(h, "file %q %d\n", rel, fi.Size())
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("cache key: read %s: %w", name, err)
	}
	return nil
}

// cachedData returns the etcd data directory of entry key in cache, or ""
// when there is none. Using an entry marks it as recent.
func cachedData(cache, key string) string {
	d := filepath.Join(cache, key)
	if fi, err := os.Stat(filepath.Join(d, "etcd", "member")); err != nil || !fi.IsDir() {
		return ""
	}
	now := time.Now()
	_ = os.Chtimes(d, now, now)
	return filepath.Join(d, "etcd")
}

// saveCache copies the etcd data directory data (etcd stopped) into cache
// as entry key: into a temporary directory first, renamed into place, so
// that a reader sees a whole entry or none. It then removes all but the
// cacheKeep newest entries.
func saveCache(cache, key, data string) error {
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return fmt.Errorf("etcd cache: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, ".tmp-")
	if err != nil {
		return fmt.Errorf("etcd cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(data, filepath.Join(tmp, "etcd")); err != nil {
		return fmt.Errorf("etcd cache: %w", err)
	}
	final := filepath.Join(cache, key)
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return nil // another run saved the same entry first
		}
		return fmt.Errorf("etcd cache: %w", err)
	}
	return pruneCache(cache, cacheKeep)
}

// pruneCache removes the entries of cache beyond the keep most recently
// used, and temporary directories older than a day (a run that died while
// saving).
func pruneCache(cache string, keep int) error {
	ents, err := os.ReadDir(cache)
	if err != nil {
		return fmt.Errorf("etcd cache: %w", err)
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var entries []entry
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.IsDir() {
			continue
		}
		p := filepath.Join(cache, e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if time.Since(fi.ModTime()) > 24*time.Hour {
				_ = os.RemoveAll(p)
			}
			continue
		}
		entries = append(entries, entry{p, fi.ModTime()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].mod.After(entries[j].mod) })
	var errs []error
	for _, e := range entries[min(keep, len(entries)):] {
		if err := os.RemoveAll(e.path); err != nil {
			errs = append(errs, fmt.Errorf("etcd cache: %w", err))
		}
	}
	return errors.Join(errs...)
}

// copyTree copies the regular files and directories under src to dst
// (created), keeping permissions.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, fi.Mode().Perm()|0o700)
		case fi.Mode().IsRegular():
			return copyFile(p, target, fi.Mode().Perm())
		default:
			return fmt.Errorf("copy %s: not a regular file or directory", p)
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
