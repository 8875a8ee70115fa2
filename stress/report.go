package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// result is one measured run: the JSON object printed with -json, and a row
// of the table.
type result struct {
	Impl      string  `json:"impl"`
	Workload  string  `json:"workload"`
	Workers   int     `json:"workers"`
	Paths     int     `json:"paths"`
	DurationS float64 `json:"duration_s"`
	Faults    string  `json:"faults"`
	Seed      uint64  `json:"seed"`
	Servers   string  `json:"servers"`
	ZKVersion string  `json:"zk_version,omitempty"`
	HoldMs    float64 `json:"hold_ms"`

	Cycles       int64   `json:"cycles"`
	CyclesPerS   float64 `json:"cycles_per_s"`
	AcquireP50Ms float64 `json:"acquire_p50_ms"`
	AcquireP99Ms float64 `json:"acquire_p99_ms"`
	AcquireMaxMs float64 `json:"acquire_max_ms"`
	// From the servers' mntr zk_packets_received before and after, summed
	// over the members, less the harness's own scan requests; null when
	// unknown (no mntr, or a member restarted during the run). It counts
	// every client of the servers: peers sharing the run's server add theirs.
	ZKRequestsPerCycle *float64 `json:"zk_requests_per_cycle"`
	// What the client itself counted sending (turnstile's engine.Stats).
	ClientRequestsPerCycle *float64 `json:"client_requests_per_cycle,omitempty"`

	Checked          bool             `json:"checked"` // false: the impl takes no lock, exclusion not checked
	Violations       int64            `json:"violations"`
	ViolationsDetail map[string]int64 `json:"violations_detail,omitempty"`
	Orphans          int              `json:"orphans"`
	Leaked           int              `json:"leaked"`
	Stuck            int              `json:"stuck"`
	Lost             int64            `json:"lost"`
	Cancelled        int64            `json:"cancelled"`
	Errors           int64            `json:"errors"`
	FaultsInjected   int64            `json:"faults_injected"`

	GoroutinesBaseline int    `json:"goroutines_baseline"`
	GoroutinesPeak     int    `json:"goroutines_peak"`
	HeapInuseBytes     uint64 `json:"heap_inuse_bytes"`
	StackInuseBytes    uint64 `json:"stack_inuse_bytes"`
	RSSBytes           uint64 `json:"rss_bytes"`

	// waiters only
	Waiters              int     `json:"waiters,omitempty"`
	GoroutinesPlateau    int     `json:"goroutines_plateau,omitempty"`
	HeapPerWaiterBytes   float64 `json:"heap_per_waiter_bytes,omitempty"`
	MemoryPerWaiterBytes float64 `json:"memory_per_waiter_bytes,omitempty"` // heap + stacks
	DrainS               float64 `json:"drain_s,omitempty"`
	Plateau              *bool   `json:"plateau,omitempty"`

	Error   string   `json:"error,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"-"`
}

// failed: the run must make the command exit non-zero.
func (r *result) failed() bool {
	return r.Skipped == "" && (r.Violations > 0 || r.Orphans > 0 || r.Leaked > 0 || r.Stuck > 0 || r.Error != "")
}

func (r *result) summary() string {
	if r.Skipped != "" {
		return fmt.Sprintf("%s %s: skipped: %s", r.Impl, r.Workload, r.Skipped)
	}
	s := fmt.Sprintf("%s %s workers=%d faults=%s: cycles=%d cycles/s=%.0f p50=%.2fms p99=%.2fms max=%.2fms zk_req/cycle=%s violations=%d orphans=%d leaked=%d stuck=%d lost=%d errors=%d",
		r.Impl, r.Workload, r.Workers, r.Faults, r.Cycles, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireMaxMs,
		optF(r.ZKRequestsPerCycle), r.Violations, r.Orphans, r.Leaked, r.Stuck, r.Lost, r.Errors)
	if r.Error != "" {
		s += " error=" + r.Error
	}
	return s
}

func optF(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *p)
}

func printJSON(w io.Writer, results []*result) {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if r.Skipped == "" {
			enc.Encode(r)
		}
	}
}

func bytesIEC(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1fGiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1fMiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1fKiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0fB", b)
}

// printTable writes the human table, then turnstile's ratio to every other
// impl that ran.
func printTable(w io.Writer, cfg *config, results []*result) {
	if len(results) == 0 {
		return
	}
	r0 := results[0]
	fmt.Fprintf(w, "\nworkload %s · workers %d · paths %d · hold %v · faults %s · seed %d · zookeeper %s %s\n\n",
		cfg.Workload, cfg.Workers, r0.Paths, cfg.Hold, cfg.Faults, cfg.Seed, r0.Servers, r0.ZKVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	waiters := cfg.Workload == "waiters"
	head := "impl\tcycles\tcycles/s\tp50 ms\tp99 ms\tmax ms\tzk req/cycle\tviolations\torphans\tleaked\tlost\terrors\tgoroutines peak\trss\t"
	if waiters {
		head = "impl\twaiters\tdrain s\tcycles/s\tp50 ms\tp99 ms\tzk req/cycle\tviolations\torphans\tleaked\tgoroutines queued\theap/waiter\tmem/waiter\trss\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		viol := fmt.Sprint(r.Violations)
		if !r.Checked {
			viol = "n/a"
		}
		if waiters {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.1f\t%.1f\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n",
				r.Impl, r.Waiters, r.DrainS, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, optF(r.ZKRequestsPerCycle),
				viol, r.Orphans, r.Leaked, r.GoroutinesPlateau-r.GoroutinesBaseline,
				bytesIEC(r.HeapPerWaiterBytes), bytesIEC(r.MemoryPerWaiterBytes), bytesIEC(float64(r.RSSBytes)))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
				r.Impl, r.Cycles, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireMaxMs, optF(r.ZKRequestsPerCycle),
				viol, r.Orphans, r.Leaked, r.Lost, r.Errors, r.GoroutinesPeak, bytesIEC(float64(r.RSSBytes)))
		}
	}
	tw.Flush()
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n", r.Impl, r.Skipped)
		}
	}
	if len(cfg.Faults) > 0 {
		for _, r := range results {
			if r.Skipped == "" {
				fmt.Fprintf(w, "%s: faults injected %d (cancelled acquisitions %d)\n", r.Impl, r.FaultsInjected, r.Cancelled)
			}
		}
	}
	if waiters {
		fmt.Fprintln(w, "(goroutines queued: at the plateau, less the process's baseline before the client started)")
	}
	for _, r := range results {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note (%s): %s\n", r.Impl, n)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "error (%s): %s\n", r.Impl, r.Error)
		}
	}
	if ratios := ratioLines(results); len(ratios) > 0 {
		fmt.Fprintln(w)
		for _, l := range ratios {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w)
}

func ratioLines(results []*result) []string {
	var ts *result
	for _, r := range results {
		if r.Impl == "turnstile" && r.Skipped == "" && r.Error == "" {
			ts = r
		}
	}
	if ts == nil {
		return nil
	}
	var lines []string
	for _, r := range results {
		if r == ts || r.Skipped != "" || r.Error != "" || r.CyclesPerS == 0 {
			continue
		}
		parts := []string{fmt.Sprintf("cycles/s %.2fx", ts.CyclesPerS/r.CyclesPerS)}
		if r.AcquireP99Ms > 0 {
			parts = append(parts, fmt.Sprintf("acquire p99 %.2fx", ts.AcquireP99Ms/r.AcquireP99Ms))
		}
		if ts.ZKRequestsPerCycle != nil && r.ZKRequestsPerCycle != nil {
			parts = append(parts, fmt.Sprintf("zk requests/cycle %.2f vs %.2f", *ts.ZKRequestsPerCycle, *r.ZKRequestsPerCycle))
		}
		if ts.Waiters > 0 && r.Waiters > 0 {
			if ts.DrainS > 0 {
				parts = append(parts, fmt.Sprintf("drains %.2fx as fast", r.DrainS/ts.DrainS))
			}
			parts = append(parts, fmt.Sprintf("goroutines queued %d vs %d", ts.GoroutinesPlateau-ts.GoroutinesBaseline, r.GoroutinesPlateau-r.GoroutinesBaseline))
			parts = append(parts, fmt.Sprintf("heap/waiter %s vs %s", bytesIEC(ts.HeapPerWaiterBytes), bytesIEC(r.HeapPerWaiterBytes)))
		}
		lines = append(lines, fmt.Sprintf("turnstile vs %s: %s", r.Impl, strings.Join(parts, ", ")))
	}
	return lines
}
