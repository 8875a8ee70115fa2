//go:build !unix

package main

import (
	"os"
	"os/exec"
)

var (
	sigTerm os.Signal = os.Interrupt
	sigKill os.Signal = os.Kill
)

// ownGroup does nothing where process groups are not Unix's.
func ownGroup(*exec.Cmd) {}

// signalGroup signals CMD's process.
func signalGroup(cmd *exec.Cmd, sig os.Signal) { _ = cmd.Process.Signal(sig) }

func signalNumber(*exec.ExitError) int { return 0 }
