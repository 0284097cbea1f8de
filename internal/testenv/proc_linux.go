package testenv

import "syscall"

// setParentDeathSignal makes the kernel kill the child when the test process
// dies without running its cleanups (a panic in a test, a -timeout, SIGKILL),
// so no etcd or kube-apiserver outlives the run.
func setParentDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) {
	attr.Pdeathsig = sig
}
