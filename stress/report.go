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
	WarmupS   float64 `json:"warmup_s"`

	Cycles        int64   `json:"cycles"`
	CyclesPerS    float64 `json:"cycles_per_s"`
	AcquireP50Ms  float64 `json:"acquire_p50_ms"`
	AcquireP99Ms  float64 `json:"acquire_p99_ms"`
	AcquireP999Ms float64 `json:"acquire_p999_ms"`
	AcquireMaxMs  float64 `json:"acquire_max_ms"`
	// Open loop (-rate): acquisitions offered per second, and those
	// scheduled in the window that were not granted by the run's end.
	OfferedPerS float64 `json:"offered_per_s,omitempty"`
	Unfinished  int64   `json:"unfinished,omitempty"`
	// Open loop in the harness's process: how late after the intended
	// start a worker called Acquire (p99, max), the harness's share of
	// the latency.
	StartLagP99Ms float64 `json:"start_lag_p99_ms,omitempty"`
	StartLagMaxMs float64 `json:"start_lag_max_ms,omitempty"`
	// keys: the run's keys left forever after it: persistent nodes, or
	// containers that never had a child (the containers the server reaps
	// are not counted); null on other workloads and unknown servers.
	KeysLeft *int `json:"keys_left_forever,omitempty"`
	// The requests the server received during the window, less the
	// harness's own: ZooKeeper's mntr zk_packets_received summed over the
	// members, Redis's total_commands_processed; null when unknown (no mntr,
	// or a member restarted during the run). It counts every client of the
	// servers: peers sharing the run's server add theirs.
	ServerRequestsPerCycle *float64 `json:"server_requests_per_cycle"`
	// What the client itself counted sending (turnstile's engine.Stats).
	ClientRequestsPerCycle *float64 `json:"client_requests_per_cycle,omitempty"`
	// CPU time (user + system) per cycle in the window, µs: the client's
	// process (the harness's own for in-process impls, the peer's for the
	// others) and the server's processes (the ZooKeeper JVMs or
	// redis-server); null when unknown (no /proc, an external server).
	ClientCPUUsPerCycle *float64 `json:"client_cpu_us_per_cycle"`
	ServerCPUUsPerCycle *float64 `json:"server_cpu_us_per_cycle"`

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

	Pause *pauseResult `json:"pause,omitempty"`

	Error   string   `json:"error,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"-"`

	// companion is the second process's row of a twoproc run.
	companion *result
	// tl is the run's per-second record, with -report.
	tl *timeline
}

// failed: the run must make the command exit non-zero.
func (r *result) failed() bool {
	return r.Skipped == "" && (r.Violations > 0 || r.Orphans > 0 || r.Leaked > 0 || r.Stuck > 0 || r.Error != "")
}

func (r *result) summary() string {
	if r.Skipped != "" {
		return fmt.Sprintf("%s %s: skipped: %s", r.Impl, r.Workload, r.Skipped)
	}
	s := fmt.Sprintf("%s %s workers=%d faults=%s: cycles=%d cycles/s=%.0f p50=%.2fms p99=%.2fms max=%.2fms req/cycle=%s client_cpu=%sus/cycle server_cpu=%sus/cycle violations=%d orphans=%d leaked=%d stuck=%d lost=%d errors=%d",
		r.Impl, r.Workload, r.Workers, r.Faults, r.Cycles, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireMaxMs,
		optF(r.ServerRequestsPerCycle), optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle),
		r.Violations, r.Orphans, r.Leaked, r.Stuck, r.Lost, r.Errors)
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

func optF0(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", *p)
}

func optInt(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
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
// impl that ran; load is the load average when the runs began.
func printTable(w io.Writer, cfg *config, results []*result, load string) {
	if len(results) == 0 {
		return
	}
	r0 := results[0]
	fmt.Fprintf(w, "\nworkload %s · workers %d · paths %d · hold %v · faults %s · seed %d · server %s %s · load before %s\n\n",
		cfg.Workload, cfg.Workers, r0.Paths, cfg.Hold, cfg.Faults, cfg.Seed, r0.Servers, r0.ZKVersion, load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	waiters := cfg.Workload == "waiters"
	open, keys := cfg.Rate > 0, cfg.Workload == "keys"
	head := "impl\tcycles\tcycles/s\tp50 ms\tp99 ms\tmax ms\treq/cycle\tclient µs/cycle\tserver µs/cycle\tviolations\torphans\tleaked\tlost\terrors\tgoroutines peak\trss\t"
	if open {
		head = "impl\toffered/s\tcycles\tcycles/s\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\tunfinished\treq/cycle\tclient µs/cycle\tserver µs/cycle\tviolations\torphans\tleaked\tlost\terrors\tgoroutines peak\trss\t"
	}
	if keys {
		head += "keys left forever\t"
	}
	if waiters {
		head = "impl\twaiters\tdrain s\tcycles/s\tp50 ms\tp99 ms\treq/cycle\tclient µs/cycle\tserver µs/cycle\tviolations\torphans\tleaked\tgoroutines queued\theap/waiter\tmem/waiter\trss\t"
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
		switch {
		case waiters:
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n",
				r.Impl, r.Waiters, r.DrainS, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, optF(r.ServerRequestsPerCycle),
				optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle),
				viol, r.Orphans, r.Leaked, r.GoroutinesPlateau-r.GoroutinesBaseline,
				bytesIEC(r.HeapPerWaiterBytes), bytesIEC(r.MemoryPerWaiterBytes), bytesIEC(float64(r.RSSBytes)))
			continue
		case open:
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t",
				r.Impl, r.OfferedPerS, r.Cycles, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireP999Ms, r.AcquireMaxMs, r.Unfinished,
				optF(r.ServerRequestsPerCycle), optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle),
				viol, r.Orphans, r.Leaked, r.Lost, r.Errors, optInt(r.GoroutinesPeak), bytesIEC(float64(r.RSSBytes)))
		default:
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t",
				r.Impl, r.Cycles, r.CyclesPerS, r.AcquireP50Ms, r.AcquireP99Ms, r.AcquireMaxMs, optF(r.ServerRequestsPerCycle),
				optF0(r.ClientCPUUsPerCycle), optF0(r.ServerCPUUsPerCycle),
				viol, r.Orphans, r.Leaked, r.Lost, r.Errors, optInt(r.GoroutinesPeak), bytesIEC(float64(r.RSSBytes)))
		}
		if keys {
			left := "-"
			if r.KeysLeft != nil {
				left = fmt.Sprint(*r.KeysLeft)
			}
			fmt.Fprintf(tw, "%s\t", left)
		}
		fmt.Fprintln(tw)
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
	if keys {
		fmt.Fprintln(w, "(keys left forever: the run's keys still there once its client had gone and the server's container sweeps (every 1s on an embedded server) stopped removing any: persistent nodes, or containers that never had a child; -: not known (Redis, or -servers); the harness then removes every key)")
	}
	if open {
		fmt.Fprintln(w, "(open loop: latency from each acquisition's intended start; unfinished: scheduled in the window, not granted by the end, counted in the latencies with their wait until then)")
	}
	for _, r := range results {
		if r.Pause != nil {
			fmt.Fprintf(w, "pause (%s): %s\n", r.Impl, r.Pause)
		}
	}
	printPauseTable(w, results)
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
		if ts.ServerRequestsPerCycle != nil && r.ServerRequestsPerCycle != nil {
			parts = append(parts, fmt.Sprintf("server requests/cycle %.2f vs %.2f", *ts.ServerRequestsPerCycle, *r.ServerRequestsPerCycle))
		}
		if ts.ClientCPUUsPerCycle != nil && r.ClientCPUUsPerCycle != nil {
			parts = append(parts, fmt.Sprintf("client CPU/cycle %.0f vs %.0f µs", *ts.ClientCPUUsPerCycle, *r.ClientCPUUsPerCycle))
		}
		if ts.ServerCPUUsPerCycle != nil && r.ServerCPUUsPerCycle != nil {
			parts = append(parts, fmt.Sprintf("server CPU/cycle %.0f vs %.0f µs", *ts.ServerCPUUsPerCycle, *r.ServerCPUUsPerCycle))
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

// String is the pause fault's report in one line.
func (p *pauseResult) String() string {
	var lost []string
	for _, ms := range p.LostAfterMs {
		lost = append(lost, fmt.Sprint(ms))
	}
	told := fmt.Sprintf("Lost() closed before that write %d, after it %d", p.LostBeforeWrite, p.LostAfterWrite)
	if len(lost) > 0 {
		told += " (" + strings.Join(lost, ", ") + " ms after the continue)"
	}
	told += fmt.Sprintf(", not within the bound %d, no Lost() at all %d", p.LostNever, p.NoLost)
	var in []string
	for _, s := range p.GotInAfterS {
		in = append(in, fmt.Sprintf("%.1f", s))
	}
	gotIn := fmt.Sprintf("another holder got in during %d", p.SecondHolderIn)
	if len(in) > 0 {
		gotIn += " (" + strings.Join(in, ", ") + " s after the stop)"
	}
	var wrote []string
	for _, n := range p.OthersWrote {
		wrote = append(wrote, fmt.Sprint(n))
	}
	gotIn += " and wrote " + strings.Join(wrote, ", ") + " times"

	s := fmt.Sprintf("%d stalls of at least %.1fs: %s, and found the stalled holder's witness file %d times; "+
		"the stalled holder's write when continued: accepted %d, refused %d; %s; releases: %s",
		p.Stalls, p.PauseS, gotIn, p.WitnessSawStale, p.StaleAccepted, p.StaleRefused, told, strings.Join(p.Releases, ", "))
	if p.Account != nil {
		s += "; " + p.Account.String()
	}
	return s
}
