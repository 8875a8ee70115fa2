package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
)

// benchScenarios is the suite of -bench (make bench, BENCHMARKS.md): the
// same server for all of it, every impl on the two mutex workloads with the
// plain programs beside the harness's runs, and the queue of waiters for
// the two impls that queue waiters.
func benchScenarios(cfg *config) []*config {
	mk := func(workload string, workers, paths int, impls []string, plain bool) *config {
		c := *cfg
		c.Workload, c.Workers, c.Paths, c.Impls, c.Plain = workload, workers, paths, impls, plain
		c.Impl = strings.Join(impls, ",")
		return &c
	}
	return []*config{
		mk("uncontended", 64, 10, allImpls, true),
		mk("contended", 16, 10, allImpls, true),
		mk("waiters", 100, 100, []string{"turnstile", "gozk"}, false),
	}
}

// printSummary is the one table of a -bench run: a row per workload and
// impl, and turnstile's cycles/s as a multiple of each row's.
func printSummary(w io.Writer, env *runEnv, cfg *config, results []*result) {
	fmt.Fprintf(w, "\n== summary · %s · %d CPUs · load %s · each run: warm-up %v, window %v ==\n",
		serverLabel(env, cfg), runtime.NumCPU(), loadAverage(), cfg.Warmup, cfg.Duration)
	fmt.Fprintln(w, "(waiters: 10,000 queued at once, then drained; its cycles/s is waiters drained per second, latency from the drain's start)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\timpl\tcycles/s\tp50 ms\tp99 ms\tclient µs/cycle\tserver µs/cycle\treq/cycle\tturnstile ×\t")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Workload, r.Impl, rate, r.AcquireP50Ms, r.AcquireP99Ms,
			optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle), optF(r.ServerRequestsPerCycle), ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
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
