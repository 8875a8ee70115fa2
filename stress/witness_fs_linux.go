package main

import (
	"fmt"
	"syscall"
)

// Filesystem magic numbers of statfs(2) for filesystems held in memory.
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// inMemoryFS reports whether dir is on tmpfs or ramfs, and names the
// filesystem type for messages.
func inMemoryFS(dir string) (bool, string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false, "", fmt.Errorf("statfs %s: %w", dir, err)
	}
	switch uint64(st.Type) {
	case tmpfsMagic:
		return true, "tmpfs", nil
	case ramfsMagic:
		return true, "ramfs", nil
	}
	return false, fmt.Sprintf("a disk filesystem (statfs type %#x)", uint64(st.Type)), nil
}
