//go:build unix && !linux

package testenv

import "syscall"

// setParentDeathSignal has no equivalent outside Linux; Stop and the signal
// handler of Main stop the children.
func setParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}
