//go:build unix

package render

import "syscall"

// openNonblock opens a FIFO without waiting for a writer (it is then
// refused as not a regular file).
const openNonblock = syscall.O_NONBLOCK
