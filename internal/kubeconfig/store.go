package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// DefaultBackups is how many timestamped backups of a kubeconfig hybridctl
// keeps next to it; older ones are deleted after each write.
const DefaultBackups = 5

// DefaultLockTimeout is how long a writer waits for another one.
const DefaultLockTimeout = 30 * time.Second

const (
	lockSuffix   = ".hybridctl.lock"
	backupInfix  = ".hybridctl-backup-"
	backupLayout = "20060102T150405.000000000Z"
)

var errWouldBlock = errors.New("lock held by another process")

// Store reads and rewrites one kubeconfig file safely: one writer at a time
// (an flock on a sibling file, plus client-go's own config.lock so kubectl
// waits too), the target re-read under the lock, the new content written to
// a temporary file in the same directory, fsynced and renamed over the old
// one, the directory fsynced, and the previous content kept as a 0600
// timestamped backup.
type Store struct {
	// Path is the kubeconfig file (already resolved; see TargetPath).
	Path string
	// LockTimeout bounds the wait for other writers (DefaultLockTimeout
	// when zero); the context can end the wait earlier.
	LockTimeout time.Duration
	// Backups is how many backups to keep (DefaultBackups when zero;
	// negative keeps none).
	Backups int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// beforeRename, when set (tests only), runs after the temporary file is
	// written and synced, just before the rename; an error aborts the write.
	beforeRename func(tmp string) error
}

// UpdateResult says what Update did.
type UpdateResult struct {
	// Written is false when mutate reported no change.
	Written bool `json:"written"`
	// Created is true when the file did not exist before.
	Created bool `json:"created,omitempty"`
	// Backup is the path of the copy of the previous content, if any.
	Backup string `json:"backup,omitempty"`
	// TightenedFrom is the previous file mode when it was looser than 0600
	// (the new file is always 0600).
	TightenedFrom string `json:"tightenedFrom,omitempty"`
	// LooseMode is the file's mode when nothing was written and the file is
	// readable or writable by others (hybridctl then leaves it alone and
	// says so).
	LooseMode string `json:"looseMode,omitempty"`
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Read returns the parsed kubeconfig without locking (readers never see a
// half-written file, because writers rename). A missing file is an empty
// config.
func (s *Store) Read(ctx context.Context) (*api.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, newErr(KindIO, "kubeconfig "+s.Path, err)
	}
	cfg, _, _, err := s.read()
	return cfg, err
}

func (s *Store) read() (cfg *api.Config, raw []byte, mode fs.FileMode, err error) {
	raw, err = os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return api.NewConfig(), nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, newErr(KindIO, "reading kubeconfig "+s.Path, err)
	}
	fi, err := os.Stat(s.Path)
	if err != nil {
		return nil, nil, 0, newErr(KindIO, "kubeconfig "+s.Path, err)
	}
	cfg, err = LoadConfig(s.Path, raw)
	if err != nil {
		return nil, nil, 0, err
	}
	return cfg, raw, fi.Mode().Perm(), nil
}

// Update takes the lock, reads the current file, lets mutate change it, and
// when mutate reports a change writes it back atomically. mutate runs under
// the lock, on the content as it is now, so concurrent updates compose.
func (s *Store) Update(ctx context.Context, mutate func(cfg *api.Config) (changed bool, err error)) (UpdateResult, error) {
	var res UpdateResult
	// The kubeconfig's directory is the user's (as named, links
	// followed); what is missing of it is made 0700 without following
	// links. The lock files, backups and the temporary file hybridctl
	// makes in it are never opened through a link.
	if err := atomicfile.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return res, newErr(KindIO, "creating the directory for kubeconfig "+s.Path, err)
	}
	dir, err := atomicfile.OpenDir(filepath.Dir(s.Path), 0)
	if err != nil {
		return res, newErr(KindIO, "kubeconfig "+s.Path, err)
	}
	defer dir.Close()
	release, err := s.lock(ctx)
	if err != nil {
		return res, err
	}
	defer release()

	cfg, raw, mode, err := s.read()
	if err != nil {
		return res, err
	}
	changed, err := mutate(cfg)
	if err != nil {
		return res, err
	}
	if !changed {
		if raw != nil && mode&0o077 != 0 {
			res.LooseMode = fmt.Sprintf("%04o", mode)
		}
		return res, nil
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return res, newErr(KindIO, "encoding kubeconfig "+s.Path, err)
	}
	if raw == nil {
		if _, statErr := os.Stat(s.Path); errors.Is(statErr, os.ErrNotExist) {
			res.Created = true
		}
	}
	if !res.Created {
		if mode&0o077 != 0 {
			res.TightenedFrom = fmt.Sprintf("%04o", mode)
		}
		if s.Backups >= 0 {
			b, err := s.backup(ctx, dir, raw)
			if err != nil {
				return res, err
			}
			res.Backup = b
		}
	}
	if err := dir.WriteFile(ctx, filepath.Base(s.Path), data, 0o600, atomicfile.Options{BeforeRename: s.beforeRename}); err != nil {
		return res, newErr(KindIO, "writing "+s.Path, err)
	}
	res.Written = true
	if s.Backups >= 0 {
		// Pruning is housekeeping: the new file is in place; a failure to
		// delete an old backup is not a failed import.
		_ = s.prune()
	}
	return res, nil
}

// lock takes hybridctl's flock, then client-go's config.lock (created with
// O_EXCL and removed after, the protocol kubectl config uses), waiting for
// either until ctx ends or the lock timeout passes.
func (s *Store) lock(ctx context.Context) (release func(), err error) {
	dir, err := atomicfile.OpenDir(filepath.Dir(s.Path), 0)
	if err != nil {
		return nil, newErr(KindIO, "kubeconfig "+s.Path, err)
	}
	defer func() {
		if err != nil {
			dir.Close()
		}
	}()
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The lock file is removed when the lock is released, so that none is
	// left beside the kubeconfig. A process that was waiting on the file
	// just removed holds a lock on a file no one else will open: it finds
	// the name gone or naming another file, and locks again.
	lockPath := s.Path + lockSuffix
	lockName := filepath.Base(lockPath)
	var f *os.File
	for f == nil {
		l, err := dir.OpenFile(lockName, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, newErr(KindIO, "opening lock file "+lockPath, err)
		}
		if err := poll(ctx, func() (bool, error) {
			err := tryLock(l)
			if errors.Is(err, errWouldBlock) {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			l.Close()
			return nil, newErr(KindIO, fmt.Sprintf("locking kubeconfig %s (another hybridctl is writing it; waited %s)", s.Path, timeout), err)
		}
		held, err := l.Stat()
		if err != nil {
			_ = unlock(l)
			l.Close()
			return nil, newErr(KindIO, "lock file "+lockPath, err)
		}
		if named, err := dir.Lstat(lockName); err == nil && sameFile(held, named) {
			f = l
			break
		}
		_ = unlock(l)
		l.Close()
		if err := ctx.Err(); err != nil {
			return nil, newErr(KindIO, fmt.Sprintf("locking kubeconfig %s (another hybridctl is writing it; waited %s)", s.Path, timeout), err)
		}
	}
	kubectlLock := s.Path + ".lock"
	if err := poll(ctx, func() (bool, error) {
		l, err := dir.OpenFile(filepath.Base(kubectlLock), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, l.Close()
	}); err != nil {
		_ = dir.Remove(lockName)
		_ = unlock(f)
		f.Close()
		return nil, newErr(KindIO, fmt.Sprintf("waiting for %s (kubectl or another client-go program is writing the kubeconfig; waited %s; if none is running, a crashed one left it behind: remove it)", kubectlLock, timeout), err)
	}
	return func() {
		_ = dir.Remove(filepath.Base(kubectlLock))
		// Removed while still locked (see above); where an open file
		// cannot be removed (Windows) it stays, which is harmless.
		_ = dir.Remove(lockName)
		_ = unlock(f)
		_ = f.Close()
		_ = dir.Close()
	}, nil
}

// poll calls try with a short, growing back-off until it succeeds, fails or
// ctx ends.
func poll(ctx context.Context, try func() (bool, error)) error {
	wait := 2 * time.Millisecond
	for {
		ok, err := try()
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// backup writes the previous content next to the target, 0600, atomically,
// under a name that did not exist (never through a link).
func (s *Store) backup(ctx context.Context, dir *atomicfile.Dir, raw []byte) (string, error) {
	base := s.Path + backupInfix + s.now().Format(backupLayout)
	p := base
	for i := 1; ; i++ {
		err := dir.WriteFile(ctx, filepath.Base(p), raw, 0o600, atomicfile.Options{NoClobber: true})
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, atomicfile.ErrExists) || i > 1000 {
			return "", newErr(KindIO, "writing backup of kubeconfig "+s.Path, err)
		}
		p = fmt.Sprintf("%s-%d", base, i)
	}
}

// ListBackups lists the backups of the file, oldest first.
func (s *Store) ListBackups() ([]string, error) {
	dir, base := filepath.Split(s.Path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+backupInfix) && !strings.Contains(e.Name(), ".tmp-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *Store) prune() error {
	keep := s.Backups
	if keep == 0 {
		keep = DefaultBackups
	}
	all, err := s.ListBackups()
	if err != nil {
		return err
	}
	var errs []error
	for len(all) > keep {
		if err := os.Remove(all[0]); err != nil {
			errs = append(errs, err)
		}
		all = all[1:]
	}
	return errors.Join(errs...)
}
