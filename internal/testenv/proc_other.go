//go:build !unix

package testenv

import (
	"os/exec"
	"syscall"
)

func prepare(*exec.Cmd) {}

func prepareCommand(*exec.Cmd) {}

// signalGroup falls back to killing the process itself: the control-plane
// binaries are built for Unix only, so this is only reached in a failed start.
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) error {
	return cmd.Process.Kill()
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// processAlive cannot tell here; directories are then never reclaimed.
func processAlive(int) bool { return true }
