//go:build !linux

package interop

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal; peers are
// bounded by their own --timeout-s instead.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
