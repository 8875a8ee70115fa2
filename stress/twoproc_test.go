package main

import (
	"strings"
	"testing"
)

// The twoproc workload runs a second turnstile process on the lock path,
// both following the witness file: each process reports its own row, both
// progress, and neither sees the other holding beside it.
func TestTwoProcesses(t *testing.T) {
	o := runCmd(t, "-impl", "turnstile,turnstile-fifo", "-workload", "twoproc", "-workers", "3", "-duration", "2s", "-session-timeout", "4s")
	clean(t, o, "turnstile", "turnstile (2nd process)", "turnstile-fifo", "turnstile-fifo (2nd process)")
	for _, r := range o.results {
		if !r.Checked {
			t.Errorf("%s: exclusion not checked", r.Impl)
		}
		if r.ServerCPUUsPerCycle != nil {
			t.Errorf("%s: server CPU per cycle of one process of two", r.Impl)
		}
	}
}

// Other libraries cannot be the two processes.
func TestTwoProcessesTurnstileOnly(t *testing.T) {
	o := runCmd(t, "-impl", "gozk", "-workload", "twoproc", "-workers", "2", "-duration", "1s")
	if o.code != exitUsage || !strings.Contains(o.stderr, "twoproc") {
		t.Fatalf("gozk twoproc: exit %d, want %d and a message naming the workload\n%s", o.code, exitUsage, o.stderr)
	}
}
