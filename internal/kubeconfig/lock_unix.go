//go:build unix

package kubeconfig

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive advisory lock on f without blocking; it
// returns errWouldBlock when another process holds it. The kernel drops the
// lock when the process dies, so a crash never leaves a stale lock.
func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN) {
		return errWouldBlock
	}
	return err
}

func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// sameFile says whether two descriptions, of an open file (os.File.Stat)
// and of a name (atomicfile.Dir.Lstat), are of one file: the same device
// and inode.
func sameFile(a, b fs.FileInfo) bool {
	da, ia, ok := devIno(a)
	if !ok {
		return false
	}
	db, ib, ok := devIno(b)
	return ok && da == db && ia == ib
}

func devIno(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return uint64(st.Dev), uint64(st.Ino), true
	case *unix.Stat_t:
		return uint64(st.Dev), uint64(st.Ino), true
	}
	return 0, 0, false
}
