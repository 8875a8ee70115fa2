//go:build linux

package interop

import "syscall"

// sysProcAttr puts a peer in its own process group, so a Ctrl-C meant for
// the test does not reach it first, and asks the kernel to SIGKILL it when
// the thread that started it dies (see start for why that thread lives
// exactly as long as the peer): a dead test leaves no JVM or Python behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
