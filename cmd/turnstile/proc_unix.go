//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup puts CMD in a process group of its own, so that stopping it
// stops what it started too (a shell's children), and a terminal's
// interrupt reaches the tool, which orders the stop, and not CMD.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalNumber is the signal that ended a process, or 0.
func signalNumber(e *exec.ExitError) int {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal())
	}
	return 0
}
