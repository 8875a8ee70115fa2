package main

import "testing"

// TestSyncMutex: the in-process limit excludes, so under contention with a
// hold time neither the detector nor the witness sees an overlap, on every
// recipe it has; and it refuses what needs a server.
func TestSyncMutex(t *testing.T) {
	for _, c := range []struct{ workload, leases string }{{"contended", "1"}, {"paths", "1"}, {"rw", "1"}, {"semaphore", "2"}} {
		t.Run(c.workload, func(t *testing.T) {
			o := runCmd(t, "-impl", "syncmutex", "-workload", c.workload, "-leases", c.leases, "-write-ratio", "0.5",
				"-workers", "6", "-hold", "1ms", "-duration", "1s", "-cycles", "300", "-witness-file", shmWitness(t))
			clean(t, o, "syncmutex")
		})
	}
	for _, args := range [][]string{
		{"-workload", "waiters"},
		{"-workload", "twoproc"},
		{"-workload", "keys"},
		{"-faults", "conn-cut"},
	} {
		o := runCmd(t, append([]string{"-impl", "syncmutex", "-duration", "1s"}, args...)...)
		if o.code != exitUsage {
			t.Errorf("%v: exit code %d, want %d\n%s", args, o.code, exitUsage, o.stderr)
		}
	}
}
