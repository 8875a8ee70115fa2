//go:build unix && !linux

package main

// becomeSubreaper does nothing where there is no subreaper to become:
// CMD's tree is its process group.
func becomeSubreaper() {}

// descendants finds none without Linux's /proc: CMD's tree is its process
// group.
func descendants() []int { return nil }

// groupRunning cannot tell a zombie from a running process here: a group
// that can be signalled counts as running.
func groupRunning(int) bool { return true }
