//go:build !linux

package zkserver

import "syscall"

// sysProcAttr puts the server in its own process group. There is no
// parent-death signal outside Linux: if the test binary is killed, the
// server must be stopped by hand (its PID is in the log).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
