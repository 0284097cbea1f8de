package atomicfile

import "golang.org/x/sys/unix"

// openBeneath opens the directory c below dirfd in one openat2 call that
// fails on any symbolic link and never leaves dirfd; ok is false when it
// cannot (an older kernel or a seccomp filter without openat2, a link, a
// missing name): the caller then walks, which names what failed.
func openBeneath(dirfd int, c string) (int, bool) {
	fd, err := retry(func() (int, error) {
		return unix.Openat2(dirfd, c, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
	})
	if err != nil {
		return -1, false
	}
	return fd, true
}

// exchangeAt swaps a and b in dirfd (renameat2 RENAME_EXCHANGE).
func exchangeAt(dirfd int, a, b string) error {
	return unix.Renameat2(dirfd, a, dirfd, b, unix.RENAME_EXCHANGE)
}
