package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// CPU time, user plus system, is reported per cycle for both sides of every
// run: the client (the harness's own process for the in-process impls, the
// peer's process for the others) and the server. Client and server share
// the machine's cores, so a client that saves its own CPU leaves more of
// it to the server, and the other way round.

// selfCPU is this process's user+system time (getrusage RUSAGE_SELF, every
// thread, microsecond resolution).
func selfCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go runs on (the kernel exports that value whatever its
// own HZ is).
const clockTick = 100

// procCPU is process pid's user+system time so far, every thread, from
// /proc/<pid>/stat (utime and stime, fields 14 and 15), in USER_HZ ticks:
// 10 ms resolution, a fraction of a percent of the seconds a run measures.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := statCPU(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// statCPU reads utime + stime from the content of a /proc/<pid>/stat.
func statCPU(b []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses: count fields after the last closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields", len(f)+2)
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q", f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// procsCPU adds procCPU over pids; ok is false when pids is empty or one
// cannot be read (a member restarted, a server we did not start).
func procsCPU(pids []int) (time.Duration, bool) {
	if len(pids) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, p := range pids {
		d, err := procCPU(p)
		if err != nil {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// procRSS is VmRSS of process pid (0 when unknown).
func procRSS(pid int) uint64 {
	return rssFrom(fmt.Sprintf("/proc/%d/status", pid))
}
