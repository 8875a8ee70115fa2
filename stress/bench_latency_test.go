package main

import (
	"strings"
	"testing"
	"time"
)

// TestLatencySuiteRates: each open-loop scenario offers half the best
// ZooKeeper peer's closed-loop cycles/s on its workload, from the runs
// before it; Redis, turnstile, failed runs and the other workload's rows
// do not count.
func TestLatencySuiteRates(t *testing.T) {
	sc := latencyScenarios(&config{})
	var keysOpen, uncOpen *config
	for _, c := range sc {
		if c.rateFrom == nil {
			continue
		}
		switch c.Workload {
		case "keys":
			keysOpen = c
		case "uncontended":
			uncOpen = c
		}
	}
	if keysOpen == nil || uncOpen == nil || len(sc) != 4 || sc[0].Workload != "keys" || !sc[0].Plain {
		t.Fatalf("suite: %+v", sc)
	}
	// Closed loop measures capacity with 64 workers; open loop hands the
	// lock every acquisition as it is due, from a pool past any backlog.
	for _, c := range sc {
		if want := map[bool]int{false: 64, true: openWorkers}[c.rateFrom != nil]; c.Workers != want {
			t.Errorf("%s (open %v): %d workers, want %d", c.Workload, c.rateFrom != nil, c.Workers, want)
		}
	}
	before := []*result{
		{Impl: "turnstile", Workload: "keys", CyclesPerS: 9000},
		{Impl: "redis", Workload: "keys", CyclesPerS: 20000},
		{Impl: "gozk", Workload: "keys", CyclesPerS: 1600},
		{Impl: "gozk plain", Workload: "keys", CyclesPerS: 1700},
		{Impl: "curator", Workload: "keys", CyclesPerS: 5000, Error: "exited 1"},
		{Impl: "kazoo", Workload: "keys", CyclesPerS: 1000},
		{Impl: "kazoo", Workload: "uncontended", CyclesPerS: 3000},
	}
	if rate, why := keysOpen.rateFrom(before); rate != 850 || !strings.Contains(why, "gozk plain") {
		t.Errorf("keys: rate %v (%s), want 850 from gozk plain", rate, why)
	}
	if rate, _ := uncOpen.rateFrom(before); rate != 1500 {
		t.Errorf("uncontended: rate %v, want 1500 from kazoo's 3000", rate)
	}
	if rate, why := uncOpen.rateFrom(before[:2]); rate != 0 || why == "" {
		t.Errorf("no peer: rate %v (%q), want 0 and why", rate, why)
	}
}

// TestLatencyTargetLines: issue 19's goals judged on a run's rows.
func TestLatencyTargetLines(t *testing.T) {
	cpu := func(v float64) *float64 { return &v }
	rows := []*result{
		{Impl: "turnstile", Workload: "keys", CyclesPerS: 9000, ClientCPUUsPerCycle: cpu(100)},
		{Impl: "rawzk", Workload: "keys", CyclesPerS: 4000, ClientCPUUsPerCycle: cpu(120)},
		{Impl: "rawzk plain", Workload: "keys", CyclesPerS: 4400, ClientCPUUsPerCycle: cpu(110)},
		{Impl: "gozk", Workload: "keys", CyclesPerS: 1600},
		{Impl: "redis", Workload: "keys", CyclesPerS: 20000},
		{Impl: "turnstile", Workload: "keys", OfferedPerS: 800, AcquireP99Ms: 4},
		{Impl: "gozk", Workload: "keys", OfferedPerS: 800, AcquireP99Ms: 10},
		{Impl: "kazoo", Workload: "keys", OfferedPerS: 800, AcquireP99Ms: 7},
		{Impl: "redis", Workload: "keys", OfferedPerS: 800, AcquireP99Ms: 1},
		{Impl: "turnstile", Workload: "uncontended", OfferedPerS: 1000, AcquireP99Ms: 3},
		{Impl: "curator", Workload: "uncontended", OfferedPerS: 1000, AcquireP99Ms: 5},
	}
	got := strings.Join(latencyTargetLines(rows), "\n")
	for _, want := range []string{
		"cold keys, 64 workers: turnstile 9000 cycles/s = 2.05x the bare cold cycle (rawzk plain, 4400; goal 2x) and 5.62x the best ZooKeeper peer (gozk, 1600; goal 3x), client CPU 100 against the bare cycle's 110 µs/cycle: met",
		"open loop, keys at 800/s: turnstile p99 4.00 ms = 0.57x the best ZooKeeper peer's (kazoo, 7.00 ms; goal at most 0.5x): NOT met",
		"open loop, uncontended at 1000/s: turnstile p99 3.00 ms = 0.60x the best ZooKeeper peer's (curator, 5.00 ms; goal at most 0.5x): NOT met",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in\n%s", want, got)
		}
	}
}

// TestDriverOpenThreads: an open-loop driver runs at most
// driverOpenThreads threads, whatever -workers; a closed loop runs them all.
func TestDriverOpenThreads(t *testing.T) {
	workersArg := func(s spawnSpec) string {
		a, err := s.driverArgs()
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i] == "--workers" {
				return a[i+1]
			}
		}
		t.Fatalf("no --workers in %v", a)
		return ""
	}
	s := spawnSpec{workloadSpec: workloadSpec{workers: 1024, duration: time.Second, rate: 2000}}
	if got := workersArg(s); got != "64" {
		t.Errorf("open loop, 1024 workers: driver --workers %s, want 64", got)
	}
	s.rate = 0
	if got := workersArg(s); got != "1024" {
		t.Errorf("closed loop, 1024 workers: driver --workers %s, want 1024", got)
	}
}
