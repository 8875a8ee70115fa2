package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnstile-go/turnstile/engine"
)

// benchScenarios is the suite of -bench (make bench, BENCHMARKS.md): the
// same server for all of it, every impl on the two mutex workloads with the
// plain programs beside the harness's runs (and, on one path, turnstile
// without lock cohorting too), the queue of waiters for the two impls
// that queue waiters, and one path shared by two turnstile processes, with
// cohorting and without.
func benchScenarios(cfg *config) []*config {
	mk := func(workload string, workers, paths int, impls []string, plain bool) *config {
		c := *cfg
		c.Workload, c.Workers, c.Paths, c.Impls, c.Plain = workload, workers, paths, impls, plain
		c.Impl = strings.Join(impls, ",")
		return &c
	}
	contended := append([]string{"turnstile", "turnstile-fifo"}, allImpls[1:]...)
	return []*config{
		mk("uncontended", 64, 10, allImpls, true),
		mk("contended", 16, 10, contended, true),
		mk("waiters", 100, 100, []string{"turnstile", "turnstile-fifo", "gozk"}, false),
		mk("twoproc", 8, 10, []string{"turnstile", "turnstile-fifo"}, false),
	}
}

// latencyScenarios is the suite of -bench-latency (make bench-latency,
// BENCHMARKS.md): cold keys closed loop, every impl beside its plain
// program; the ZooKeeper peers on uncontended, for their capacity there;
// then open loop on keys and on uncontended, every impl but the plain
// programs (which run closed loop), each at half the best ZooKeeper peer's
// closed-loop cycles/s of this very run, with openWorkers workers. (turnstile-fifo is left out: a
// key is locked once, so nothing waits behind a holder of the same
// engine, and strict FIFO would change nothing.)
func latencyScenarios(cfg *config) []*config {
	mk := func(workload string, impls []string, plain bool) *config {
		c := *cfg
		c.Workload, c.Workers, c.Paths, c.Impls, c.Plain = workload, 64, 10, impls, plain
		c.Impl = strings.Join(impls, ",")
		return &c
	}
	open := func(workload string) *config {
		c := mk(workload, allImpls, false)
		c.Workers = openWorkers
		c.rateFrom = func(before []*result) (float64, string) {
			best := bestZKPeer(before, workload, false)
			if best == nil {
				return 0, "no ZooKeeper peer's closed-loop run to take the rate from"
			}
			return math.Round(best.CyclesPerS / 2), fmt.Sprintf("half of %s's closed-loop %.0f cycles/s, the best ZooKeeper peer's", best.Impl, best.CyclesPerS)
		}
		return c
	}
	return []*config{
		mk("keys", allImpls, true),
		mk("uncontended", []string{"gozk", "curator", "kazoo"}, true),
		open("keys"),
		open("uncontended"),
	}
}

// openWorkers is the open-loop runs' pool of workers in the suite. With 64,
// a server stall of 30 ms at 2,000 acquisitions/s left every worker
// waiting, so that the acquisitions due meanwhile waited for a worker, in
// the harness, instead of being asked of the lock: the latency then
// measured the pool, and the lock's recovery from the stall (a batch of
// every waiter for turnstile) was cut into rounds of 64. A service asks
// as its requests come; 1,024 workers cover a half-second stall at that
// rate.
const openWorkers = 1024

// zkPeers are the other ZooKeeper lock libraries, in the harness or as
// plain programs: the peers of issue 19's goals (a Redis lock is no
// ZooKeeper lock; its rows are beside them for reference).
var zkPeers = map[string]bool{"gozk": true, "gozk plain": true, "curator": true, "kazoo": true}

// bestZKPeer is the ZooKeeper peer with the most cycles/s on workload,
// closed loop (open false) or open loop, among clean runs.
func bestZKPeer(results []*result, workload string, open bool) *result {
	var best *result
	for _, r := range results {
		if r.Workload != workload || !zkPeers[r.Impl] || r.Skipped != "" || r.failed() || (r.OfferedPerS > 0) != open {
			continue
		}
		if best == nil || r.CyclesPerS > best.CyclesPerS {
			best = r
		}
	}
	return best
}

// rowLabel is a row's workload in the summary: open-loop rows carry
// their offered rate.
func rowLabel(r *result) string {
	if r.OfferedPerS > 0 {
		return fmt.Sprintf("%s @%.0f/s", r.Workload, r.OfferedPerS)
	}
	return r.Workload
}

// latencyTargetLines are issue 19's goals for cold keys and open loop,
// judged on this run's rows.
func latencyTargetLines(results []*result) []string {
	var lines []string
	find := func(impl, workload string, open bool) *result {
		for _, r := range results {
			if r.Impl == impl && r.Workload == workload && (r.OfferedPerS > 0) == open && r.Skipped == "" && !r.failed() {
				return r
			}
		}
		return nil
	}
	if ts := find("turnstile", "keys", false); ts != nil {
		var bare *result
		for _, n := range []string{"rawzk", "rawzk plain"} {
			if r := find(n, "keys", false); r != nil && (bare == nil || r.CyclesPerS > bare.CyclesPerS) {
				bare = r
			}
		}
		best := bestZKPeer(results, "keys", false)
		if bare != nil && best != nil && bare.CyclesPerS > 0 && best.CyclesPerS > 0 {
			rb, rp := ts.CyclesPerS/bare.CyclesPerS, ts.CyclesPerS/best.CyclesPerS
			cpu := "client CPU per cycle unknown"
			cpuOK := false
			if ts.ClientCPUUsPerCycle != nil && bare.ClientCPUUsPerCycle != nil {
				cpuOK = *ts.ClientCPUUsPerCycle <= *bare.ClientCPUUsPerCycle
				cpu = fmt.Sprintf("client CPU %.0f against the bare cycle's %.0f µs/cycle", *ts.ClientCPUUsPerCycle, *bare.ClientCPUUsPerCycle)
			}
			lines = append(lines, fmt.Sprintf("target: cold keys, 64 workers: turnstile %.0f cycles/s = %.2fx the bare cold cycle (%s, %.0f; goal 2x) and %.2fx the best ZooKeeper peer (%s, %.0f; goal 3x), %s: %s",
				ts.CyclesPerS, rb, bare.Impl, bare.CyclesPerS, rp, best.Impl, best.CyclesPerS, cpu, metIf(rb >= 2 && rp >= 3 && cpuOK)))
		}
	}
	for _, wl := range []string{"uncontended", "keys"} {
		ts := find("turnstile", wl, true)
		if ts == nil {
			continue
		}
		var best *result // the ZooKeeper peer with the lowest p99 at the same rate
		for _, r := range results {
			if r.Workload == wl && zkPeers[r.Impl] && r.OfferedPerS == ts.OfferedPerS && r.Skipped == "" && !r.failed() &&
				(best == nil || r.AcquireP99Ms < best.AcquireP99Ms) {
				best = r
			}
		}
		if best == nil || best.AcquireP99Ms <= 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("target: open loop, %s at %.0f/s: turnstile p99 %.2f ms = %.2fx the best ZooKeeper peer's (%s, %.2f ms; goal at most 0.5x): %s",
			wl, ts.OfferedPerS, ts.AcquireP99Ms, ts.AcquireP99Ms/best.AcquireP99Ms, best.Impl, best.AcquireP99Ms, metIf(ts.AcquireP99Ms <= best.AcquireP99Ms/2)))
	}
	return lines
}

// peerLibraries are the impls that are other libraries' locks: the peers
// of the targets. (rawzk takes no lock; turnstile-fifo is turnstile.)
var peerLibraries = map[string]bool{"gozk": true, "curator": true, "kazoo": true, "redis": true,
	"gozk plain": true, "redis plain": true}

// printSummary is the one table of a -bench run: a row per workload and
// impl, and turnstile's cycles/s as a multiple of each row's.
func printSummary(w io.Writer, env *runEnv, cfg *config, results []*result) {
	fmt.Fprintf(w, "\n== summary · %s · %d CPUs · load %s · each run: warm-up %v, window %v ==\n",
		serverLabel(env, cfg), runtime.NumCPU(), loadAverage(), cfg.Warmup, cfg.Duration)
	open, waiters := false, false
	var left, unfinished []string
	for _, r := range results {
		open = open || r.OfferedPerS > 0
		waiters = waiters || r.Workload == "waiters"
		if r.KeysLeft != nil && r.Skipped == "" {
			left = append(left, fmt.Sprintf("%s %s %d", rowLabel(r), r.Impl, *r.KeysLeft))
		}
		if r.Unfinished > 0 {
			unfinished = append(unfinished, fmt.Sprintf("%s %s %d", rowLabel(r), r.Impl, r.Unfinished))
		}
	}
	if waiters {
		fmt.Fprintln(w, "(waiters: 10,000 queued at once, then drained; its cycles/s is waiters drained per second, latency from the drain's start)")
	}
	fmt.Fprintln(w)
	if open {
		fmt.Fprintln(w, "(workload @N/s: open loop, N acquisitions a second offered, latency from each one's intended start)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p999 := ""
	if open {
		p999 = "p99.9 ms\t"
	}
	fmt.Fprintln(tw, "workload\timpl\tcycles/s\tp50 ms\tp99 ms\t"+p999+"max ms\tclient µs/cycle\tserver µs/cycle\treq/cycle\tturnstile ×\t")
	best := map[string]float64{} // row label → turnstile's cycles/s
	for _, r := range results {
		if r.Impl == "turnstile" && r.Skipped == "" && r.Error == "" {
			best[rowLabel(r)] = r.CyclesPerS
		}
	}
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		ratio := "-"
		if ts, ok := best[rowLabel(r)]; ok && r.CyclesPerS > 0 && r.Error == "" {
			ratio = fmt.Sprintf("%.2f", ts/r.CyclesPerS)
		}
		rate := fmt.Sprintf("%.0f", r.CyclesPerS)
		if r.Error != "" || r.failed() {
			rate += " (failed)"
		}
		tail := ""
		if open {
			tail = fmt.Sprintf("%.2f\t", r.AcquireP999Ms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%s%.2f\t%s\t%s\t%s\t%s\t\n", rowLabel(r), r.Impl, rate, r.AcquireP50Ms, r.AcquireP99Ms, tail,
			r.AcquireMaxMs, optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle), optF(r.ServerRequestsPerCycle), ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(left) > 0 {
		fmt.Fprintf(w, "keys left forever after each keys run (persistent nodes, or containers that never had a child; the rest were containers the server reaped): %s\n", strings.Join(left, ", "))
	}
	if len(unfinished) > 0 {
		fmt.Fprintf(w, "open loop, scheduled in the window and not granted by the end (in the latencies with their wait until then): %s\n", strings.Join(unfinished, ", "))
	}
	for _, l := range latencyTargetLines(results) {
		fmt.Fprintln(w, l)
	}
	for _, l := range targetLines(results) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

// targetLines are issue 12's targets for lock cohorting, judged on this
// run's rows: 16 workers on one path at 10 times the best peer's cycles/s
// (the best of the other libraries, in the harness or as plain programs);
// two processes on one path both progressing, with their longest wait and
// a clean witness.
func targetLines(results []*result) []string {
	var lines []string
	var ts, best *result
	for _, r := range results {
		if r.Workload != "contended" || r.Skipped != "" || r.Error != "" {
			continue
		}
		switch {
		case r.Impl == "turnstile":
			ts = r
		case peerLibraries[r.Impl] && (best == nil || r.CyclesPerS > best.CyclesPerS):
			best = r
		}
	}
	if ts != nil && best != nil && best.CyclesPerS > 0 {
		ratio := ts.CyclesPerS / best.CyclesPerS
		lines = append(lines, fmt.Sprintf("target: 16 workers, one path: turnstile %.0f cycles/s = %.1fx the best peer (%s, %.0f): %s",
			ts.CyclesPerS, ratio, best.Impl, best.CyclesPerS, metIf(ratio >= 10)))
	}
	twoproc := map[string][]*result{}
	for _, r := range results {
		if r.Workload == "twoproc" && r.Skipped == "" {
			impl := strings.TrimSuffix(r.Impl, " (2nd process)")
			twoproc[impl] = append(twoproc[impl], r)
		}
	}
	longest := func(rows []*result) float64 {
		m := 0.0
		for _, r := range rows {
			m = max(m, r.AcquireMaxMs)
		}
		return m
	}
	if rows := twoproc["turnstile"]; len(rows) == 2 {
		a, b := rows[0], rows[1]
		both := a.Error == "" && b.Error == "" && a.Cycles > 0 && b.Cycles > 0
		clean := a.Violations == 0 && b.Violations == 0
		line := fmt.Sprintf("target: two processes x 8 workers, one path: cycles %d and %d, witness violations %d, longest acquire wait %.1f and %.1f ms",
			a.Cycles, b.Cycles, a.Violations+b.Violations, a.AcquireMaxMs, b.AcquireMaxMs)
		bounded := false
		if fifo := twoproc["turnstile-fifo"]; len(fifo) == 2 {
			// Passing may keep a node from the other process for MaxHold
			// beyond what strict FIFO would: that is the bound.
			limit := longest(fifo) + float64(engine.DefaultCohortHold)/float64(time.Millisecond)
			bounded = longest(rows) <= limit
			line += fmt.Sprintf(" (strict FIFO's longest %.1f ms + MaxHold %v = %.1f ms)", longest(fifo), engine.DefaultCohortHold, limit)
		}
		lines = append(lines, line+": "+metIf(both && clean && bounded))
		lines = append(lines, twoprocLines(a, b, twoproc["turnstile-fifo"], best)...)
	}
	return lines
}

func metIf(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func serverLabel(env *runEnv, cfg *config) string {
	s := "zookeeper " + env.cl.version
	if len(cfg.Servers) == 0 {
		s += fmt.Sprintf(" embedded, forceSync=%s", yesNo(cfg.FSync))
	}
	if env.rs != nil {
		s += " · redis " + env.rs.version
		if cfg.RedisFsync != "" {
			s += " appendfsync " + cfg.RedisFsync
		}
	}
	return s
}

// loadAverage is /proc/loadavg's first three fields, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
