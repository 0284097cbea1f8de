//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FollowLink refuses to follow the symbolic link link (to dest, described
// by li) where the kernel would refuse to open through it for this user
// (Linux fs.protected_symlinks): in a sticky, world-writable directory,
// a link owned by neither the user nor the directory's owner. Anywhere
// else a link in a path the user named is followed.
func FollowLink(link, dest string, li fs.FileInfo) error {
	di, err := os.Stat(filepath.Dir(link))
	if err != nil {
		return err
	}
	if di.Mode()&fs.ModeSticky == 0 || di.Mode().Perm()&0o002 == 0 {
		return nil
	}
	lst, ok1 := li.Sys().(*syscall.Stat_t)
	dst, ok2 := di.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return nil
	}
	if uid := uint32(os.Geteuid()); lst.Uid == uid || lst.Uid == dst.Uid {
		return nil
	}
	return &LinkError{Path: link, Target: dest, Why: "it belongs to another user, in a sticky world-writable directory, where the kernel does not follow it either"}
}
