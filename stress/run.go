package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // violations, orphans, leaks, stuck workers or errors
	exitUsage       = 2 // bad flags, or a workload/fault the impl does not support
	exitInterrupted = 130
)

// run is the whole command: parse, start or reach ZooKeeper, run each impl,
// report. It returns the exit code. Everything it starts it stops before
// returning (servers, proxies, clients, goroutines).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "stress:", err)
		return exitUsage
	}
	con := newConsole(stderr)
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()>>1 + 1
	}
	con.logf("seed %d", cfg.Seed)

	names := []string{cfg.Impl}
	if cfg.Impl == "all" {
		names = allImpls
	}
	var plan []impl
	var skipped []*result
	for _, n := range names {
		im, _ := implByName(n)
		if err := im.Supports(cfg.Workload, cfg.Faults); err != nil {
			if cfg.Impl != "all" {
				fmt.Fprintln(stderr, "stress:", err)
				return exitUsage
			}
			con.logf("skip: %v", err)
			skipped = append(skipped, &result{Impl: n, Workload: cfg.Workload, Skipped: err.Error()})
			continue
		}
		plan = append(plan, im)
	}
	if len(plan) == 0 {
		fmt.Fprintln(stderr, "stress: no impl can run this workload")
		return exitUsage
	}

	if cfg.WitnessFile != "" {
		f, err := placeWitness(cfg.WitnessFile, cfg.WitnessOnDisk)
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			return exitUsage
		}
		cfg.WitnessFile = f
		if _, err := os.Stat(f); err == nil {
			con.logf("warning: witness file %s exists already: a peer holds, or a run crashed (then remove it)", f)
		}
	}

	var cl *cluster
	if len(plan) > 1 || plan[0].Name() != "none" || cfg.Faults.needsProxy() {
		if len(cfg.Servers) == 0 {
			con.logf("starting an embedded ZooKeeper (%d server(s))", cfg.Ensemble)
		}
		cl, err = startCluster(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			if ctx.Err() != nil {
				return exitInterrupted
			}
			return exitFailed
		}
		defer cl.Close()
		con.logf("zookeeper %v, version %s", cl.addrs, cl.version)
	} else {
		cl = &cluster{} // the hidden none impl needs no server
	}

	var results []*result
	for i, im := range plan {
		if ctx.Err() != nil {
			break
		}
		res := runOne(ctx, cfg, cl, im, i, con)
		con.logf("%s", res.summary())
		results = append(results, res)
	}
	results = append(results, skipped...)

	if cfg.JSON {
		printJSON(stdout, results)
		printTable(stderr, cfg, results)
	} else {
		printTable(stdout, cfg, results)
	}

	code := exitOK
	for _, r := range results {
		if r.failed() {
			code = exitFailed
		}
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	return code
}

// runOne runs one impl through the workload and its checks.
func runOne(ctx context.Context, cfg *config, cl *cluster, im impl, idx int, con *console) *result {
	res := &result{
		Impl: im.Name(), Workload: cfg.Workload, Workers: cfg.Workers, Faults: cfg.Faults.String(),
		Seed: cfg.Seed, Servers: cfg.serversLabel(), ZKVersion: cl.version, Checked: im.Excludes(),
		HoldMs: float64(cfg.Hold) / float64(time.Millisecond),
	}
	if len(cl.addrs) == 0 {
		res.Servers = "none"
	}
	switch cfg.Workload {
	case "uncontended":
		res.Paths = cfg.Workers
	case "paths", "waiters":
		res.Paths = cfg.Paths
	default:
		res.Paths = 1
	}
	hard, cancelHard := context.WithTimeout(ctx, cfg.Deadline)
	defer cancelHard()
	marker := []byte(fmt.Sprintf("turnstile-stress:%d:%d:%s", os.Getpid(), idx, im.Name()))
	usesZK := im.Name() != "none"

	freeMemory()
	res.GoroutinesBaseline = runtime.NumGoroutine()
	sampler := startSampler()
	defer sampler.Stop()

	var sc *scanner
	if usesZK {
		var err error
		octx, cancel := context.WithTimeout(hard, time.Minute)
		sc, err = openScanner(octx, cl.addrs)
		cancel()
		if err != nil {
			res.Error = "scan session: " + err.Error()
			return res
		}
		defer sc.Close()
	}

	servers := cl.addrs
	var px *proxies
	if cfg.Faults.needsProxy() && usesZK {
		var err error
		if px, err = newProxies(cl.addrs); err != nil {
			res.Error = err.Error()
			return res
		}
		defer px.Close()
		servers = px.Addrs()
		if cfg.Faults.has("latency") {
			if err := px.addLatency(cfg.Latency, cfg.Jitter); err != nil {
				res.Error = err.Error()
				return res
			}
		}
	}

	logger := slog.New(slog.DiscardHandler)
	if cfg.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	octx, cancel := context.WithTimeout(hard, time.Minute)
	c, err := im.Open(octx, openOptions{
		Servers: servers, SessionTimeout: cfg.SessionTimeout, MaxInFlight: cfg.MaxInFlight,
		Marker: marker, Logger: logger,
	})
	cancel()
	if err != nil {
		res.Error = "connect: " + err.Error()
		return res
	}
	closeClient := sync.OnceValue(c.Close)
	defer closeClient()

	w := (*witness)(nil)
	if im.Excludes() && cfg.WitnessFile != "" {
		w = newWitness()
	}
	stop, stopNow := context.WithCancel(hard)
	defer stopNow()
	r := &runState{
		cfg: cfg, impl: im, cl: c, lat: newLatencies(), seed: cfg.Seed ^ uint64(idx)<<48, logf: con.logf,
		check: newChecker(im.Excludes(), cfg.Leases, w, con.logf),
		stop:  stop, stopNow: stopNow,
	}
	if cfg.Cycles > 0 {
		r.limited = true
		r.tickets.Store(cfg.Cycles)
	}

	pk0, pkOK := cl.packetsReceived(hard)
	req0 := c.Requests()
	var scan0 int64
	if sc != nil {
		scan0 = sc.requests
	}

	inj := &injector{cfg: cfg, cl: cl, px: px, rng: rand.New(rand.NewPCG(cfg.Seed, 1<<62|uint64(idx))), logf: con.logf}
	if cfg.Faults.has("expire") {
		// Away for longer than the session the server granted, plus two ticks
		// of its expiry sweep.
		inj.downTime = cl.negotiated(cfg.SessionTimeout) + 2*cl.tick + time.Second
	}
	injCtx, stopInj := context.WithCancel(stop)
	injDone := make(chan struct{})
	go func() { defer close(injDone); inj.run(injCtx) }()

	showProgress := cfg.Progress || con.tty
	endProgress := con.startProgress(showProgress, im.Name(), r)

	start := time.Now()
	var elapsed time.Duration
	var wres *waitersResult
	var wait func(time.Duration) bool
	if cfg.Workload == "waiters" {
		wres, err = r.runWaiters(hard, sc, cl)
		if wres != nil {
			elapsed = wres.drain
		}
	} else {
		if cfg.Duration > 0 {
			t := time.AfterFunc(cfg.Duration, stopNow)
			defer t.Stop()
		}
		res.Stuck, wait, err = r.runWorkers(cfg.SessionTimeout + 10*time.Second)
		elapsed = time.Since(start)
	}
	if err != nil {
		res.Error = err.Error()
	}
	stopInj()
	<-injDone
	stopNow()
	endProgress()
	if px != nil {
		if err := px.upAgain(); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
	}
	if cfg.Faults.has("leader-kill") {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := cl.waitReady(rctx); err != nil {
			res.Notes = append(res.Notes, "ensemble not ready after the run: "+err.Error())
		}
		cancel()
	}

	// Counters, before the scans add requests of their own.
	pk1, pk1OK := cl.packetsReceived(context.Background())
	req1 := c.Requests()
	res.Cycles = r.cycles.Load()
	if elapsed > 0 {
		res.DurationS = elapsed.Seconds()
		res.CyclesPerS = float64(res.Cycles) / elapsed.Seconds()
	}
	if res.Cycles > 0 && usesZK {
		if pkOK && pk1OK && !cfg.Faults.has("leader-kill") && pk1 >= pk0 {
			var scanned int64
			if sc != nil {
				scanned = sc.requests - scan0
			}
			v := float64(pk1-pk0-scanned) / float64(res.Cycles)
			res.ZKRequestsPerCycle = &v
		}
		if req0 >= 0 && req1 >= req0 {
			v := float64(req1-req0) / float64(res.Cycles)
			res.ClientRequestsPerCycle = &v
		}
	}
	res.AcquireP50Ms, res.AcquireP99Ms, res.AcquireMaxMs = r.lat.ms(50), r.lat.ms(99), r.lat.maxMs()

	if wres != nil {
		res.Waiters = wres.waiters
		res.DrainS = wres.drain.Seconds()
		res.GoroutinesPlateau = wres.at.Goroutines
		res.HeapInuseBytes, res.StackInuseBytes, res.RSSBytes = wres.at.HeapInuse, wres.at.StackInuse, wres.at.RSS
		if wres.waiters > 0 {
			res.HeapPerWaiterBytes = (float64(wres.at.HeapInuse) - float64(wres.base.HeapInuse)) / float64(wres.waiters)
			res.MemoryPerWaiterBytes = (float64(wres.at.HeapInuse+wres.at.StackInuse) - float64(wres.base.HeapInuse+wres.base.StackInuse)) / float64(wres.waiters)
		}
		res.Plateau = &wres.plateau
		res.Notes = append(res.Notes, wres.notes...)
		res.Stuck = wres.stuck
	} else {
		m := takeMem()
		res.HeapInuseBytes, res.StackInuseBytes, res.RSSBytes = m.HeapInuse, m.StackInuse, m.RSS
	}
	if res.Stuck > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d workers were still waiting for a lock long after the run stopped (no progress)", res.Stuck))
	}

	// Leaked: lock nodes of ours left while the client is still open, with
	// every acquisition ended and every lease released. Orphans: lock nodes
	// of ours left after the client closed, read with a separate session.
	settle := cl.negotiated(cfg.SessionTimeout) + 2*cl.tick + 2*time.Second
	if sc != nil && res.Stuck == 0 {
		left, err := sc.settle(context.Background(), cfg.LockRoot, marker, settle)
		res.Leaked = len(left)
		if err != nil {
			res.Notes = append(res.Notes, "leak scan: "+err.Error())
		}
		if len(left) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("leaked lock nodes, e.g. %s", left[0]))
		}
	}
	if err := closeClient(); err != nil && !errors.Is(err, context.Canceled) {
		res.Notes = append(res.Notes, "close: "+err.Error())
	}
	if wait != nil && !wait(30*time.Second) {
		res.Notes = append(res.Notes, "some workers did not return even after the client closed")
	}
	if sc != nil {
		left, err := sc.settle(context.Background(), cfg.LockRoot, marker, settle)
		res.Orphans = len(left)
		if err != nil {
			res.Notes = append(res.Notes, "orphan scan: "+err.Error())
		}
		if len(left) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("orphaned lock nodes, e.g. %s", left[0]))
		}
	}

	res.Violations = r.check.violations()
	if res.Checked {
		res.ViolationsDetail = r.check.detail()
	}
	res.Lost = r.lost.Load()
	res.Cancelled = r.cancelled.Load()
	res.Errors = r.errs.Load()
	res.FaultsInjected = inj.count.Load()
	if cfg.Faults.has("cancel") {
		res.FaultsInjected += res.Cancelled
	}
	res.GoroutinesPeak = sampler.Stop()
	if hard.Err() != nil && ctx.Err() == nil {
		res.Error = fmt.Sprintf("hard deadline of %v reached: run aborted", cfg.Deadline)
	}
	if ctx.Err() != nil {
		res.Notes = append(res.Notes, "interrupted")
	}
	return res
}
