//go:build !linux

package main

// inMemoryFS cannot tell off Linux: every directory counts as a disk, so a
// witness file needs -witness-on-disk there.
func inMemoryFS(string) (bool, string, error) {
	return false, "a filesystem this platform cannot identify", nil
}
