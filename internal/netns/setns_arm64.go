//go:build linux

package netns

// sysSetns is setns(2)'s number; the syscall package does not name it here.
const sysSetns = 268
