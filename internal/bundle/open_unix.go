//go:build unix

package bundle

import "syscall"

// openNonblock opens a FIFO without waiting for a writer, so that a file
// of the bundle swapped for a FIFO cannot block a download (the file is
// then refused as not a regular file).
const openNonblock = syscall.O_NONBLOCK
