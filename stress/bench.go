package main

import (
	"fmt"
	"io"
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

// peerLibraries are the impls that are other libraries' locks: the peers
// of the targets. (rawzk takes no lock; turnstile-fifo is turnstile.)
var peerLibraries = map[string]bool{"gozk": true, "curator": true, "kazoo": true, "redis": true,
	"gozk plain": true, "redis plain": true}

// printSummary is the one table of a -bench run: a row per workload and
// impl, and turnstile's cycles/s as a multiple of each row's.
func printSummary(w io.Writer, env *runEnv, cfg *config, results []*result) {
	fmt.Fprintf(w, "\n== summary · %s · %d CPUs · load %s · each run: warm-up %v, window %v ==\n",
		serverLabel(env, cfg), runtime.NumCPU(), loadAverage(), cfg.Warmup, cfg.Duration)
	fmt.Fprintln(w, "(waiters: 10,000 queued at once, then drained; its cycles/s is waiters drained per second, latency from the drain's start)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\timpl\tcycles/s\tp50 ms\tp99 ms\tmax ms\tclient µs/cycle\tserver µs/cycle\treq/cycle\tturnstile ×\t")
	best := map[string]float64{} // workload → turnstile's cycles/s
	for _, r := range results {
		if r.Impl == "turnstile" && r.Skipped == "" && r.Error == "" {
			best[r.Workload] = r.CyclesPerS
		}
	}
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		ratio := "-"
		if ts, ok := best[r.Workload]; ok && r.CyclesPerS > 0 && r.Error == "" {
			ratio = fmt.Sprintf("%.2f", ts/r.CyclesPerS)
		}
		rate := fmt.Sprintf("%.0f", r.CyclesPerS)
		if r.Error != "" || r.failed() {
			rate += " (failed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Workload, r.Impl, rate, r.AcquireP50Ms, r.AcquireP99Ms,
			r.AcquireMaxMs, optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle), optF(r.ServerRequestsPerCycle), ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
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
