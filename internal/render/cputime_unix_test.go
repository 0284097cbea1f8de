//go:build unix

package render

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the process has used: unlike
// wall time, it hardly grows with the load other jobs put on the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
