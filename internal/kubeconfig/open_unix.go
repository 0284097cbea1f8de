//go:build unix

package kubeconfig

import "syscall"

// openNonblock opens a FIFO without waiting for a writer, so that a
// reference swapped for a FIFO after the check cannot block the import.
const openNonblock = syscall.O_NONBLOCK
