package bench

import "syscall"

// peerProcAttr kills the peer gateway with the bench: a run that dies
// must not leave a gateway listening behind it.
func peerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
