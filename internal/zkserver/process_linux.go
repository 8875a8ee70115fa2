//go:build linux

package zkserver

import "syscall"

// sysProcAttr puts the server in its own process group, so signals meant for
// the test (Ctrl-C on the terminal's foreground group) do not reach it, and
// asks the kernel to SIGKILL it if the thread that started it dies (see
// startProcess for why that thread lives as long as the server).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
