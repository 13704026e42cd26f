//go:build !linux

package bench

import "syscall"

// peerProcAttr is nothing where the kernel cannot tie the peer's life to
// the bench's: close stops it.
func peerProcAttr() *syscall.SysProcAttr { return nil }
