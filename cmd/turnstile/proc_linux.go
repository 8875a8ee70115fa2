package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (Linux 3.4).
const prSetChildSubreaper = 36

// becomeSubreaper makes this process the parent of its descendants'
// orphans, so that a process CMD started stays in the supervisor's tree
// after its parent exits, instead of going to init. Without it (an old
// kernel) orphans are found by their process group only.
func becomeSubreaper() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// procEntry is what /proc/PID/stat says of one process.
type procEntry struct {
	pid, ppid, pgrp int
	zombie          bool
}

// processes reads every process's entry from /proc.
func processes() []procEntry {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procEntry, 0, len(dir))
	for _, d := range dir {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields start after its last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		out = append(out, procEntry{pid: pid, ppid: ppid, pgrp: pgrp, zombie: string(f[0]) == "Z" || string(f[0]) == "X"})
	}
	return out
}

// descendants are this process's descendants that may still run (not
// zombies), CMD's tree and the orphans reparented to it.
func descendants() []int {
	procs := processes()
	children := make(map[int][]procEntry, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []int
	next := []int{os.Getpid()}
	for len(next) > 0 {
		pid := next[len(next)-1]
		next = next[:len(next)-1]
		for _, c := range children[pid] {
			next = append(next, c.pid)
			if !c.zombie {
				out = append(out, c.pid)
			}
		}
	}
	return out
}

// groupRunning reports whether a process of group pgrp is alive and not a
// zombie.
func groupRunning(pgrp int) bool {
	for _, p := range processes() {
		if p.pgrp == pgrp && !p.zombie {
			return true
		}
	}
	return false
}
