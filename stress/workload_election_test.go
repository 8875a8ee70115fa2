package main

import (
	"strings"
	"testing"
)

// The election workload runs clean with no fault and under each fault
// kind: terms made, no two leaders, no node left, and for the faults that
// are injected, some injected.
func TestElectionWorkload(t *testing.T) {
	for _, c := range []struct {
		fault string
		args  []string
	}{
		{"none", []string{"-hold", "2ms", "-duration", "2s", "-cycles", "300"}},
		{"conn-cut", []string{"-hold", "2ms", "-fault-interval", "500ms", "-duration", "3s", "-cycles", "100000"}},
		{"latency", []string{"-latency", "2ms", "-jitter", "1ms", "-duration", "2s", "-cycles", "150"}},
		// Away longer than the 1 s session: the server expires it once.
		{"expire", []string{"-hold", "2ms", "-session-timeout", "1s", "-fault-interval", "600ms", "-duration", "3s", "-cycles", "100000"}},
		{"cancel", []string{"-cancel-ratio", "0.5", "-cancel-max", "10ms", "-duration", "2s", "-cycles", "600"}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			o := runCmd(t, append([]string{"-workload", "election", "-workers", "6", "-faults", c.fault}, c.args...)...)
			clean(t, o, "turnstile")
			r := o.results[0]
			t.Logf("%s: %d terms, handover p50 %.2f ms p99 %.2f ms, lost %d, faults %d, cancelled %d",
				c.fault, r.Cycles, r.AcquireP50Ms, r.AcquireP99Ms, r.Lost, r.FaultsInjected, r.Cancelled)
			if c.fault != "none" && c.fault != "latency" && r.FaultsInjected == 0 {
				t.Errorf("no fault was injected")
			}
			if c.fault == "none" && r.AcquireMaxMs == 0 {
				t.Errorf("no handover latency measured")
			}
		})
	}
}

func TestElectionWorkloadLeaderKill(t *testing.T) {
	o := runCmd(t, "-ensemble", "3", "-faults", "leader-kill", "-workload", "election", "-workers", "6",
		"-hold", "2ms", "-duration", "5s", "-fault-interval", "1500ms")
	clean(t, o, "turnstile")
	if o.results[0].FaultsInjected == 0 {
		t.Errorf("no leader was killed")
	}
}

// Two leaders at once are caught: the none impl elects every candidate.
func TestElectionCheckersCatchNone(t *testing.T) {
	o := runCmd(t, "-impl", "none", "-workload", "election", "-workers", "6", "-hold", "2ms", "-duration", "1s", "-cycles", "300",
		"-witness-file", shmWitness(t))
	if o.code != exitFailed || len(o.results) != 1 {
		t.Fatalf("exit code %d with %d results, want %d with one", o.code, len(o.results), exitFailed)
	}
	r := o.results[0]
	if r.ViolationsDetail["overlap"] == 0 || r.ViolationsDetail["witness"] == 0 {
		t.Errorf("violations %v: both the detector and the witness must see two leaders", r.ViolationsDetail)
	}
}

func TestElectionUnsupported(t *testing.T) {
	for _, im := range []string{"gozk", "rawzk"} {
		o := runCmd(t, "-impl", im, "-workload", "election", "-duration", "1s")
		if o.code != exitUsage || !strings.Contains(o.stderr, "does not support") {
			t.Errorf("%s: exit code %d, want %d and a clear 'does not support':\n%s", im, o.code, exitUsage, o.stderr)
		}
	}
}
