package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// The twoproc workload: one lock path shared by two processes, each with
// an engine of its own (a session each) and -workers workers: the
// harness's, checked as in every run, and a plain turnstile program in a
// process of its own (plain.go) following the witness file's protocol. It
// shows what lock cohorting gives a lock contended across clients: each
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
	spec.impl, spec.witness = impl, cfg.WitnessFile
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
	res.AcquireP50Ms, res.AcquireP99Ms, res.AcquireMaxMs = lat.ms(50), lat.ms(99), lat.maxMs()
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
