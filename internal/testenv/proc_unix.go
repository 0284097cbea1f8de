//go:build unix

package testenv

import (
	"errors"
	"os/exec"
	"syscall"
)

// prepare puts the child in its own process group, so that stopping it
// reaches everything it started and a terminal's Ctrl-C reaches only the
// test process, which then stops the child in order.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGKILL)
}

// prepareCommand is for the command "run" runs: it stays in the caller's
// process group (a terminal's Ctrl-C reaches it, and it may read the
// terminal) but gets SIGTERM if the runner dies without stopping it.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGTERM)
}

// signalGroup sends sig to the child's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
