package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
)

// The twoproc workload: one lock path shared by two processes, each with
// an engine of its own (a session each) and -workers workers: the
// harness's, checked as in every run, and a plain turnstile program in a
// process of its own (plain.go), both following the witness: by default
// its shared-memory mode (witness_shm.go), as the file protocol's cost per
// cycle would bound the rate measured. It shows what lock cohorting gives
// a lock contended across clients: each
// process must keep progressing, and no acquisition may wait for long
// while the other process passes the lock among its own workers.
//
// The two windows are each process's own, opened after the same warm-up
// and as long; the second process starts just before the harness's
// workers. Server figures are left out of both rows: the server serves
// the two at once.

// companion is the second process of a twoproc run.
type companion struct {
	name string
	peer *interop.Peer
	// cpu is the process's CPU time at its window's opening and closing,
	// read as it prints each (ok when both were read).
	cpu0, cpu1 time.Duration
	cpuOK      bool
	done       chan struct{} // closed when the window has closed or the wait failed
	err        error
}

// startCompanion starts the second process of a twoproc run of impl on
// servers, following the witness file of cfg.
func startCompanion(ctx context.Context, cfg *config, impl string, servers []string) (*companion, error) {
	spec := cfg.spec(servers)
	spec.impl, spec.witness, spec.witnessMode = impl, cfg.WitnessFile, cfg.witnessMode()
	peer, err := startChild(ctx, "plain", spec.args())
	if err != nil {
		return nil, err
	}
	c := &companion{name: impl + " (2nd process)", peer: peer, done: make(chan struct{})}
	go c.sampleWindow(ctx)
	return c, nil
}

// sampleWindow reads the process's CPU time when its window opens and
// closes.
func (c *companion) sampleWindow(ctx context.Context) {
	defer close(c.done)
	for i, line := range []string{interop.BenchStartLine, interop.BenchEndLine} {
		if _, err := c.peer.WaitLine(ctx, line); err != nil {
			c.err = err
			return
		}
		d, err := procCPU(c.peer.PID())
		if err != nil {
			return
		}
		if i == 0 {
			c.cpu0 = d
		} else {
			c.cpu1, c.cpuOK = d, true
		}
	}
}

// finish waits for the process to end and returns its row of the table.
// Its violations are the witness checks it failed.
func (c *companion) finish(cfg *config) *result {
	res := &result{Impl: c.name, Workload: cfg.Workload, Workers: cfg.Workers, Paths: 1, Faults: cfg.Faults.String(),
		Seed: cfg.Seed, Servers: cfg.serversLabel(), Checked: true,
		HoldMs: float64(cfg.Hold) / float64(time.Millisecond), WarmupS: cfg.Warmup.Seconds()}
	<-c.done
	out, err := c.peer.Wait()
	if c.err != nil {
		res.Error = c.err.Error()
	} else if err != nil {
		res.Error = fmt.Sprintf("%s exited %d", c.name, out.ExitCode)
	}
	if res.Error != "" {
		res.Notes = append(res.Notes, lastLines(out.Output, 5)...)
	}
	res.Violations = int64(out.Violations)
	for _, l := range splitLines(out.Output) {
		if note, ok := strings.CutPrefix(l, "COHORT "); ok {
			res.Notes = append(res.Notes, note)
		}
	}
	b, perr := interop.ParseBench(out.Output)
	if perr != nil {
		if res.Error == "" {
			res.Error = perr.Error()
		}
		return res
	}
	res.Cycles, res.Errors, res.DurationS, res.CyclesPerS = b.Cycles, b.Errors, b.Window.Seconds(), b.Rate()
	lat := newLatencies()
	for _, l := range b.Latency {
		lat.recordCount(l.Micros, l.Count)
	}
	res.AcquireP50Ms, res.AcquireP99Ms, res.AcquireP999Ms, res.AcquireMaxMs = lat.ms(50), lat.ms(99), lat.ms(99.9), lat.maxMs()
	if c.cpuOK && res.Cycles > 0 {
		v := float64((c.cpu1 - c.cpu0).Microseconds()) / float64(res.Cycles)
		res.ClientCPUUsPerCycle = &v
	}
	return res
}

// progressed checks the twoproc target on the two rows: both processes
// completed cycles in their windows.
func progressed(harness, second *result) {
	for _, r := range []*result{harness, second} {
		if r.Error == "" && r.Cycles == 0 {
			r.Error = "no cycle completed in the window: this process made no progress"
		}
	}
}

// twoprocScenarios is the suite of -bench-twoproc (issue 19's two
// processes on one lock): the ZooKeeper peers on one path with 16
// workers, the reference the two processes are judged against, then the
// two processes with 8 workers each, with cohorting and without (strict
// FIFO's rate gives the handoff through ZooKeeper the wait bound counts).
func twoprocScenarios(cfg *config) []*config {
	mk := func(workload string, workers int, impls []string) *config {
		c := *cfg
		c.Workload, c.Workers, c.Paths, c.Impls, c.Plain = workload, workers, 10, impls, false
		c.Impl = strings.Join(impls, ",")
		return &c
	}
	return []*config{
		mk("contended", 16, []string{"gozk", "curator", "kazoo"}),
		mk("twoproc", 8, []string{"turnstile", "turnstile-fifo"}),
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// twoprocLines are issue 19's targets for two processes on one path,
// judged on this run's rows (a and b, the two processes with cohorting;
// fifo, the two without, if run; best, the best peer's one-process
// contended row, if run): together at 10 times the best peer's cycles/s,
// within 2:1 of each other, and no acquisition waiting longer than MaxHold,
// one hold and one handoff through ZooKeeper (strict FIFO's time between
// two grants, 1 / its cycles/s together).
func twoprocLines(a, b *result, fifo []*result, best *result) []string {
	var lines []string
	together := a.CyclesPerS + b.CyclesPerS
	if best != nil && best.CyclesPerS > 0 {
		ratio := together / best.CyclesPerS
		lines = append(lines, fmt.Sprintf("target: two processes x 8 workers, one path: %.0f + %.0f = %.0f cycles/s together = %.1fx the best peer's one process (%s, 16 workers, %.0f): %s",
			a.CyclesPerS, b.CyclesPerS, together, ratio, best.Impl, best.CyclesPerS, metIf(ratio >= 10)))
	}
	if lo, hi := min(a.Cycles, b.Cycles), max(a.Cycles, b.Cycles); hi > 0 {
		lines = append(lines, fmt.Sprintf("target: two processes within 2:1 of each other's cycles: %d and %d (%.2f:1): %s",
			a.Cycles, b.Cycles, float64(hi)/float64(max(lo, 1)), metIf(lo > 0 && hi <= 2*lo)))
	}
	if len(fifo) == 2 && fifo[0].CyclesPerS+fifo[1].CyclesPerS > 0 {
		hold := a.HoldMs
		handoff := 1000 / (fifo[0].CyclesPerS + fifo[1].CyclesPerS)
		limit := float64(engine.DefaultCohortHold)/float64(time.Millisecond) + hold + handoff
		longest := max(a.AcquireMaxMs, b.AcquireMaxMs)
		lines = append(lines, fmt.Sprintf("target: longest acquire wait %.1f ms (p99.9 %.1f and %.1f ms) <= MaxHold %v + one hold %.1f ms + one handoff %.2f ms (strict FIFO's mean) = %.1f ms: %s",
			longest, a.AcquireP999Ms, b.AcquireP999Ms, engine.DefaultCohortHold, hold, handoff, limit, metIf(longest <= limit)))
	}
	return lines
}
