//go:build unix

package testenv

import (
	"os/exec"
	"syscall"
)

// prepare puts the child in its own process group, so that stopping it
// reaches everything it started and a terminal's Ctrl-C reaches only the
// test process, which then stops the child in order.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the child's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
