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
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // violations, orphans, leaks, stuck workers or errors
	exitUsage       = 2 // bad flags, or a workload/fault the impl does not support
	exitInterrupted = 130
)

// run is the whole command: parse, start or reach the servers, run each
// impl through each workload, report. It returns the exit code. Everything
// it starts it stops before returning (servers, proxies, clients, peers,
// goroutines).
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
	started := time.Now()
	for _, rec := range []struct {
		flag, path string
		start      func(io.Writer) error
		stop       func()
	}{
		{"-cpuprofile", cfg.CPUProfile, pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"-trace", cfg.Trace, trace.Start, trace.Stop},
	} {
		if rec.path == "" {
			continue
		}
		f, err := os.Create(rec.path)
		if err == nil {
			err = rec.start(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "stress: %s: %v\n", rec.flag, err)
			return exitUsage
		}
		defer func() { rec.stop(); f.Close() }()
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()>>1 + 1
	}
	con.logf("seed %d", cfg.Seed)

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
	} else if cfg.Faults.has("pause") {
		// The stalled holder is another process: only the witness file sees
		// it hold.
		f, remove, err := memoryWitness()
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			return exitFailed
		}
		defer remove()
		cfg.WitnessFile = f
	}

	scenarios := []*config{cfg}
	switch {
	case cfg.Bench:
		scenarios = benchScenarios(cfg)
	case cfg.BenchLatency:
		scenarios = latencyScenarios(cfg)
	case cfg.BenchTwoproc:
		scenarios = twoprocScenarios(cfg)
	}
	type planned struct {
		cfg     *config
		impls   []impl
		skipped []*result
	}
	var plans []planned
	var needZK, needRedis bool
	for _, sc := range scenarios {
		p := planned{cfg: sc}
		for _, n := range sc.Impls {
			im, _ := implByName(n)
			cands := []impl{im}
			if sc.Plain && hasPlain(n) {
				cands = append(cands, plainImpl{of: im})
				if sc.PlainFirst {
					cands[0], cands[1] = cands[1], cands[0]
				}
			}
			for _, c := range cands {
				err := c.Supports(sc.Workload, sc.Faults)
				if _, plain := c.(plainImpl); plain && err == nil && sc.Rate > 0 {
					err = unsupported(c.Name(), "-rate", "a plain program runs closed loop, as its library's users write it")
				}
				if err != nil {
					if len(sc.Impls) == 1 && c == impl(im) {
						fmt.Fprintln(stderr, "stress:", err)
						return exitUsage
					}
					con.logf("skip: %v", err)
					p.skipped = append(p.skipped, &result{Impl: c.Name(), Workload: sc.Workload, Skipped: err.Error()})
					continue
				}
				p.impls = append(p.impls, c)
				cfg.keysPlanned = cfg.keysPlanned || sc.Workload == "keys"
				needZK = needZK || c.Backend() == zookeeperBackend
				needRedis = needRedis || c.Backend() == redisBackend
			}
		}
		if len(p.impls) == 0 {
			fmt.Fprintf(stderr, "stress: no impl can run -workload %s\n", sc.Workload)
			return exitUsage
		}
		plans = append(plans, p)
	}

	env := &runEnv{con: con, cl: &cluster{}, curator: &curatorPeer}
	if needZK || cfg.Faults.needsProxy() {
		if len(cfg.Servers) == 0 {
			con.logf("starting an embedded ZooKeeper (%d server(s), forceSync=%s)", cfg.Ensemble, yesNo(cfg.FSync))
			if cfg.keysPlanned {
				con.logf("its empty containers swept every %v (ZooKeeper's default: a minute), to tell the keys left forever from those it reaps", reapEvery)
			}
		}
		env.cl, err = startCluster(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			if ctx.Err() != nil {
				return exitInterrupted
			}
			return exitFailed
		}
		defer env.cl.Close()
		con.logf("zookeeper %v, version %s", env.cl.addrs, env.cl.version)
	}
	if needRedis {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		env.rs, err = startRedis(rctx, cfg.RedisFsync)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			return exitFailed
		}
		defer env.rs.Close()
		con.logf("redis-server %s, version %s", env.rs.addr, env.rs.version)
	}
	if cfg.PauseResource == "postgres" {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		env.pg, err = startPostgres(pctx)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "stress:", err)
			return exitFailed
		}
		defer env.pg.Close()
		con.logf("postgres 127.0.0.1:%d, version %s", env.pg.port, env.pg.version)
	}

	var all []*result
	idx := 0
	if cfg.ServerWarmup > 0 && needZK {
		// A fresh JVM interprets, then compiles, ZooKeeper's hot paths over
		// its first seconds of load; the first impl measured would pay for
		// it, and the first to send multi requests (turnstile's group
		// commit) for those. Bare cycles, then turnstile's, unmeasured, run
		// both in first.
		// When keys runs are planned, the warm-up runs keys: the
		// containers' creates are then compiled too.
		w := *cfg
		w.Workload, w.Workers, w.Duration, w.Warmup, w.Plain, w.Cycles, w.Rate, w.Report = "uncontended", 64, cfg.ServerWarmup/2, 0, false, 0, 0, ""
		if cfg.keysPlanned {
			w.Workload = "keys"
		}
		for _, im := range []inProcess{rawzkImpl{}, turnstileImpl{}} {
			res := runOne(ctx, &w, env, im, idx)
			idx++
			con.logf("server warm-up: %s %s, 64 workers, %v: %.0f cycles/s", im.Name(), w.Workload, w.Duration, res.CyclesPerS)
		}
	}
	for _, p := range plans {
		var results []*result
		load := loadAverage()
		if p.cfg.rateFrom != nil {
			// An open-loop scenario of a suite offers a rate drawn from the
			// closed-loop runs before it.
			rate, why := p.cfg.rateFrom(all)
			if rate <= 0 {
				con.logf("skip: open loop on %s: %s", p.cfg.Workload, why)
				continue
			}
			p.cfg.Rate = rate
			con.logf("open loop on %s: %.0f acquisitions/s offered (%s)", p.cfg.Workload, rate, why)
		}
		if p.cfg.rateFrom != nil && len(p.impls) > 1 {
			// The suite's open loops: every impl's slices interleaved on
			// one timeline, so that they meet the machine's stalls alike.
			for _, res := range runInterleaved(ctx, p.cfg, env, p.impls, idx) {
				con.logf("%s", res.summary())
				results = append(results, res)
			}
			idx += len(p.impls)
		} else {
			for _, im := range p.impls {
				if ctx.Err() != nil {
					break
				}
				res := runOne(ctx, p.cfg, env, im, idx)
				idx++
				con.logf("%s", res.summary())
				results = append(results, res)
				if c := res.companion; c != nil {
					con.logf("%s", c.summary())
					results = append(results, c)
				}
			}
		}
		results = append(results, p.skipped...)
		if cfg.JSON {
			printJSON(stdout, results)
			printTable(stderr, p.cfg, results, load)
		} else {
			printTable(stdout, p.cfg, results, load)
		}
		all = append(all, results...)
	}
	if cfg.Bench || cfg.BenchLatency || cfg.BenchTwoproc {
		w := stdout
		if cfg.JSON {
			w = stderr
		}
		printSummary(w, env, cfg, all)
	}
	if cfg.Report != "" {
		meta := reportMeta{args: args, seed: cfg.Seed, started: started, server: serverLabel(env, cfg)}
		if err := writeReport(cfg.Report, meta, all); err != nil {
			fmt.Fprintln(stderr, "stress: -report:", err)
			return exitFailed
		}
		con.logf("report written to %s", cfg.Report)
	}

	code := exitOK
	for _, r := range all {
		if r.failed() {
			code = exitFailed
		}
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	return code
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// runEnv is what every run of one command shares: the servers it started
// or reaches, the console, the Curator peer's build.
type runEnv struct {
	con     *console
	cl      *cluster     // ZooKeeper; empty when no impl needs it
	rs      *redisServer // nil when no impl needs Redis
	pg      *pgServer    // nil but with -pause-resource postgres
	curator *curatorBuild
}

func (e *runEnv) curatorClasspath(ctx context.Context) (string, error) { return e.curator.get(ctx) }

// backendView is the side of a run that is not the client: the servers'
// addresses, their counters and processes, and how lock nodes are found.
type backendView struct {
	addrs    []string
	version  string
	requests func(context.Context) (int64, bool) // requests received so far
	pids     []int                               // server processes, for their CPU time
	// settle is how long the locks of a client that died may outlive it.
	settle  time.Duration
	scanner func(context.Context) (nodeScanner, error)
}

func (e *runEnv) view(kind backendKind, cfg *config) backendView {
	switch kind {
	case zookeeperBackend:
		cl := e.cl
		return backendView{
			addrs: cl.addrs, version: cl.version, requests: cl.packetsReceived, pids: cl.pids(),
			settle: cl.negotiated(cfg.SessionTimeout) + 2*cl.tick + 2*time.Second,
			scanner: func(ctx context.Context) (nodeScanner, error) {
				return openScanner(ctx, cl.addrs)
			},
		}
	case redisBackend:
		rs := e.rs
		return backendView{
			addrs: []string{rs.addr}, version: "redis " + rs.version, requests: rs.commandsProcessed,
			pids: []int{rs.pid()}, settle: cfg.RedisTTL + time.Second,
			scanner: func(context.Context) (nodeScanner, error) { return redisScanner{rs}, nil },
		}
	}
	return backendView{}
}

// nodeScanner finds lock nodes (Redis: keys) of one run, on a connection of
// its own.
type nodeScanner interface {
	// settle polls until no lock node under root carries marker (nil: any),
	// or wait has passed, and returns those left.
	settle(ctx context.Context, root string, marker []byte, wait time.Duration) ([]string, error)
	// sent is the requests it sent, which the server's count includes.
	sent() int64
	Close()
}

// sample is what is read at each end of the measured window.
type sample struct {
	at                 time.Time
	cycles             int64
	client, server     time.Duration
	clientOK, serverOK bool
	requests, scanned  int64
	requestsOK         bool
}

func (v backendView) sample(ctx context.Context, sc nodeScanner, cycles int64, client func() (time.Duration, bool)) sample {
	s := sample{cycles: cycles}
	s.client, s.clientOK = client()
	s.server, s.serverOK = procsCPU(v.pids)
	if v.requests != nil {
		s.requests, s.requestsOK = v.requests(ctx)
	}
	if sc != nil {
		s.scanned = sc.sent()
	}
	s.at = time.Now()
	return s
}

// window fills res's per-cycle figures from the samples at the ends of the
// measured window, for res.Cycles cycles.
func (res *result) window(s0, s1 sample, requestsValid bool) {
	if res.Cycles <= 0 {
		return
	}
	per := func(d time.Duration) *float64 {
		v := float64(d.Microseconds()) / float64(res.Cycles)
		return &v
	}
	if s0.clientOK && s1.clientOK {
		res.ClientCPUUsPerCycle = per(s1.client - s0.client)
	}
	if s0.serverOK && s1.serverOK {
		res.ServerCPUUsPerCycle = per(s1.server - s0.server)
	}
	if requestsValid && s0.requestsOK && s1.requestsOK && s1.requests >= s0.requests {
		v := float64(s1.requests-s0.requests-(s1.scanned-s0.scanned)) / float64(res.Cycles)
		res.ServerRequestsPerCycle = &v
	}
}

// newResult is the part of a result every run fills the same way.
func newResult(cfg *config, im impl, v backendView) *result {
	res := &result{
		Impl: im.Name(), Workload: cfg.Workload, Workers: cfg.Workers, Faults: cfg.Faults.String(),
		Seed: cfg.Seed, Servers: cfg.serversLabel(), ZKVersion: v.version, Checked: im.Excludes(),
		HoldMs: float64(cfg.Hold) / float64(time.Millisecond), WarmupS: cfg.Warmup.Seconds(),
	}
	if len(v.addrs) == 0 {
		res.Servers = "none"
	} else if im.Backend() == redisBackend {
		res.Servers = v.addrs[0]
	}
	switch cfg.Workload {
	case "uncontended":
		res.Paths = cfg.Workers
	case "paths", "waiters":
		res.Paths = cfg.Paths
	default:
		res.Paths = 1
	}
	return res
}

// runOne runs one impl through the workload and its checks.
func runOne(ctx context.Context, cfg *config, env *runEnv, im impl, idx int) *result {
	v := env.view(im.Backend(), cfg)
	res := newResult(cfg, im, v)
	hard, cancelHard := context.WithTimeout(ctx, cfg.Deadline)
	defer cancelHard()
	defer func() {
		if hard.Err() != nil && ctx.Err() == nil {
			res.Error = fmt.Sprintf("hard deadline of %v reached: run aborted", cfg.Deadline)
		}
		if ctx.Err() != nil {
			res.Notes = append(res.Notes, "interrupted")
		}
	}()

	var sc nodeScanner
	if v.scanner != nil {
		octx, cancel := context.WithTimeout(hard, time.Minute)
		s, err := v.scanner(octx)
		cancel()
		if err != nil {
			res.Error = "scan session: " + err.Error()
			return res
		}
		sc = s
		defer sc.Close()
	}
	if cfg.interleave != nil && cfg.Workload == "uncontended" {
		// An interleaved impl idles between its slices, longer than the
		// 1-s container sweep of a suite with keys runs: lock paths made
		// as containers would be reaped each time and every slice would
		// start on cold paths, which is the keys workload's subject, not
		// this one's. Its lock paths are made first, unmeasured, as
		// persistent nodes, as a service's long-used paths are there.
		if zs, ok := sc.(*scanner); ok {
			if err := prepareLockPaths(zs.conn.conn, cfg.LockRoot+"/u", cfg.Workers); err != nil {
				res.Error = err.Error()
				return res
			}
		}
	}
	if cfg.Workload == "keys" {
		kc := *cfg
		kc.keysRun = keysPrefix(cfg.LockRoot, idx)
		cfg = &kc
		if zs, ok := sc.(*scanner); ok {
			if err := prepareKeys(zs.conn.conn, cfg.keysRun, cfg.Workers); err != nil {
				res.Error = err.Error()
				return res
			}
			ks := &keysScanner{scanner: zs, prefix: cfg.keysRun, workers: cfg.Workers}
			sc = ks
			defer func() {
				// Once the client has gone: the keys left after the
				// server's sweeps are there forever. The harness then removes
				// every key, for the runs after.
				if env.cl.reaps && res.Error == "" && res.Cycles > 0 {
					n, err := ks.leftForever(hard, reapEvery)
					if err == nil {
						res.KeysLeft = &n
					} else {
						res.Notes = append(res.Notes, "counting the keys left: "+err.Error())
					}
				}
				if err := ks.removeKeys(); err != nil {
					res.Notes = append(res.Notes, "removing the run's keys: "+err.Error())
				}
			}()
		}
	}
	if sp, ok := im.(spawner); ok {
		runSpawned(hard, cfg, env, sp, v, sc, res)
		return res
	}
	runInProcess(hard, cfg, env, im.(inProcess), idx, v, sc, res)
	return res
}

// runInProcess runs an impl whose workers are the harness's goroutines.
func runInProcess(hard context.Context, cfg *config, env *runEnv, im inProcess, idx int, v backendView, sc nodeScanner, res *result) {
	marker := []byte(fmt.Sprintf("turnstile-stress:%d:%d:%s", os.Getpid(), idx, im.Name()))
	con := env.con
	cl := env.cl

	freeMemory()
	res.GoroutinesBaseline = runtime.NumGoroutine()
	sampler := startSampler()
	defer sampler.Stop()

	servers := v.addrs
	var px *proxies
	if cfg.Faults.needsProxy() && im.Backend() == zookeeperBackend {
		var err error
		if px, err = newProxies(cl.addrs); err != nil {
			res.Error = err.Error()
			return
		}
		defer px.Close()
		servers = px.Addrs()
		if cfg.Faults.has("latency") {
			if err := px.addLatency(cfg.Latency, cfg.Jitter); err != nil {
				res.Error = err.Error()
				return
			}
		}
	}

	if cfg.Workload == "twoproc" && cfg.WitnessFile == "" {
		// The other process's holders are seen only through the witness.
		f, remove, err := memoryWitness()
		if err != nil {
			res.Error = err.Error()
			return
		}
		defer remove()
		withWitness := *cfg
		withWitness.WitnessFile = f
		cfg = &withWitness
	}

	logger := slog.New(slog.DiscardHandler)
	if cfg.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	octx, cancel := context.WithTimeout(hard, time.Minute)
	c, err := im.Open(octx, openOptions{
		Servers: servers, SessionTimeout: cfg.SessionTimeout, MaxInFlight: cfg.MaxInFlight, Linger: cfg.Linger,
		Marker: marker, Logger: logger, Workers: cfg.Workers, RedisTTL: cfg.RedisTTL, RedisRetry: cfg.RedisRetry,
		Cold: cfg.Workload == "keys",
	})
	cancel()
	if err != nil {
		res.Error = "connect: " + err.Error()
		return
	}
	closeClient := sync.OnceValue(c.Close)
	defer closeClient()

	var comp *companion
	if cfg.Workload == "twoproc" {
		if comp, err = startCompanion(hard, cfg, im.Name(), servers); err != nil {
			res.Error = "second process: " + err.Error()
			return
		}
		defer comp.peer.Kill()
	}

	var w crossWitness // nil: no cross-process witness
	if im.Excludes() && cfg.WitnessFile != "" {
		if cfg.witnessMode() == "shm" {
			// Never unmapped: a worker left stuck at the run's end may still
			// leave its hold; the page is the process's for its lifetime.
			sw, err := openShmWitness(cfg.WitnessFile)
			if err != nil {
				res.Error = err.Error()
				return
			}
			w = sw
		} else {
			w = newWitness()
		}
	}
	stop, stopNow := context.WithCancel(hard)
	defer stopNow()
	r := &runState{
		cfg: cfg, impl: im, cl: c, lat: newLatencies(), seed: cfg.Seed ^ uint64(idx)<<48, logf: con.logf,
		check: newChecker(im.Excludes(), cfg.Leases, w, con.logf),
		stop:  stop, stopNow: stopNow,
	}
	if cfg.Workload == "keys" {
		// Each key is locked once: its checker state can go at its release.
		r.check.oneShot = true
	}
	if cfg.Rate > 0 && cfg.interleave != nil {
		r.open = newSlicedSchedule(cfg.Rate, cfg.slices)
		r.lag = newLatencies()
	} else if cfg.Rate > 0 {
		r.open = newSchedule(cfg.Rate, cfg.Cycles)
		r.lag = newLatencies()
	} else if cfg.Cycles > 0 {
		r.limited = true
		r.tickets.Store(cfg.Cycles)
	}
	if cfg.Report != "" {
		res.tl = newTimeline(time.Now())
		r.tl = res.tl
	}

	var pz *pauser
	var acct *pgAccount
	if cfg.Faults.has("pause") {
		var dsn string
		if cfg.PauseResource == "postgres" {
			// A database of the run's own, its account at 0.
			dsn = env.pg.dsn(fmt.Sprintf("pause_%d", idx))
			octx, cancel := context.WithTimeout(hard, time.Minute)
			if err = createPGDatabase(octx, env.pg, fmt.Sprintf("pause_%d", idx)); err == nil {
				acct, err = openPGAccount(octx, dsn, cfg.LockPath, sqlFenced(im.Name()), true)
			}
			cancel()
			if err == nil {
				defer acct.close()
				r.resource = acct
			}
		} else {
			var f *fencedResource
			if f, err = newFencedResource(cfg.WitnessFile + ".resource"); err == nil {
				r.resource = fileHold{f}
			}
		}
		if err == nil {
			pz, err = startPauser(hard, cfg, env, im, servers, marker, r.resource, dsn)
		}
		if err != nil {
			res.Error = "pause fault: " + err.Error()
			return
		}
		defer pz.close()
	}

	inj := &injector{cfg: cfg, cl: cl, px: px, pause: pz, rng: rand.New(rand.NewPCG(cfg.Seed, 1<<62|uint64(idx))), logf: con.logf, tl: r.tl}
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

	take := func() sample { return v.sample(context.Background(), sc, r.cycles.Load(), selfCPU) }
	var s0, s1 sample
	var wres *waitersResult
	var workers *workerSet
	switch cfg.Workload {
	case "waiters":
		s0 = take()
		wres, err = r.runWaiters(hard, sc.(*scanner), cl)
		s1 = take()
	default:
		if r.open != nil {
			r.open.start = time.Now()
		}
		if il := cfg.interleave; il != nil {
			r.open.start = il.epoch
			if late := time.Since(il.epoch); late > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("interleaved: the client was ready %v after the epoch", late.Round(time.Millisecond)))
			}
		}
		workers, err = r.startWorkers()
		if err != nil {
			break
		}
		if il := cfg.interleave; il != nil {
			sleepCtx(r.stop, time.Until(il.epoch.Add(il.windowFrom())))
		} else if cfg.Warmup > 0 {
			sleepCtx(r.stop, cfg.Warmup)
		}
		s0 = take()
		if il := cfg.interleave; il != nil {
			// Tickets count from their intended time: the window opens at
			// the first measured slice, however late this goroutine woke.
			r.windowFrom.Store(il.epoch.Add(il.windowFrom()).UnixNano())
		} else {
			r.windowFrom.Store(s0.at.UnixNano())
		}
		r.lat.reset()
		if il := cfg.interleave; il != nil || cfg.Duration > 0 {
			if il != nil { // the window ends with the impl's last slice
				sleepCtx(r.stop, time.Until(il.epoch.Add(il.windowFrom()+il.window())))
			} else {
				sleepCtx(r.stop, cfg.Duration)
			}
			s1 = take()
			if r.open != nil {
				// No more starts; what is queued or under way still counts,
				// from its intended start, for a while.
				r.open.finish()
				workers.wait(openLoopDrain)
			}
			// A fault under way ends while the workers still run: a pause
			// with nobody left to take the lock would show nothing.
			stopInj()
			<-injDone
			stopNow()
			res.Stuck = workers.finish(cfg.SessionTimeout + 10*time.Second)
		} else {
			// -cycles alone: the window ends with the last cycle.
			select {
			case <-workers.done:
			case <-r.stop.Done():
				res.Stuck = workers.finish(cfg.SessionTimeout + 10*time.Second)
			}
			s1 = take()
		}
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

	if wres != nil {
		res.Cycles = r.cycles.Load()
		if wres.drain > 0 {
			res.DurationS = wres.drain.Seconds()
			res.CyclesPerS = float64(res.Cycles) / wres.drain.Seconds()
		}
	} else {
		res.Cycles = s1.cycles - s0.cycles
		if d := s1.at.Sub(s0.at); d > 0 {
			res.DurationS = d.Seconds()
			res.CyclesPerS = float64(res.Cycles) / d.Seconds()
		}
	}
	res.window(s0, s1, !cfg.Faults.has("leader-kill"))
	res.interleaved(cfg, false)
	if comp != nil {
		// The server served both processes: per cycle of one, its figures
		// would mislead.
		res.ServerCPUUsPerCycle, res.ServerRequestsPerCycle = nil, nil
		res.companion = comp.finish(cfg)
		progressed(res, res.companion)
	}
	if req := c.Requests(); req >= 0 && res.Cycles > 0 {
		// The client's own count covers the whole run, warm-up included.
		v := float64(req) / float64(r.cycles.Load())
		res.ClientRequestsPerCycle = &v
	}
	res.AcquireP50Ms, res.AcquireP99Ms, res.AcquireMaxMs = r.lat.ms(50), r.lat.ms(99), r.lat.maxMs()
	res.AcquireP999Ms = r.lat.ms(99.9)
	if r.open != nil {
		res.OfferedPerS = cfg.Rate
		res.StartLagP99Ms, res.StartLagMaxMs = r.lag.ms(99), r.lag.maxMs()
		res.Notes = append(res.Notes, fmt.Sprintf("open loop: workers called Acquire p50 %.2f, p99 %.2f, max %.2f ms after the intended start (the harness's share of the latency); at most %d tickets were due and not taken",
			r.lag.ms(50), res.StartLagP99Ms, res.StartLagMaxMs, r.open.peak.Load()))
		if res.StartLagP99Ms > res.AcquireP99Ms/2 && r.open.peak.Load() >= int64(cfg.Workers) {
			res.Notes = append(res.Notes, fmt.Sprintf("open loop: the harness's share is over half the p99, and %d tickets waited at once, no fewer than the -workers (%d): every worker was busy, or the process was not running; a larger -workers hands such a backlog to the lock",
				r.open.peak.Load(), cfg.Workers))
		}
	}
	r.tl.window(s0.at, s1.at)

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
	if sc != nil && res.Stuck == 0 {
		left, err := sc.settle(context.Background(), cfg.LockRoot, marker, v.settle)
		res.Leaked = len(left)
		if err != nil {
			res.Notes = append(res.Notes, "leak scan: "+err.Error())
		}
		if len(left) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("leaked lock nodes, e.g. %s", left[0]))
		}
	}
	if cr, ok := c.(cohortReporter); ok {
		res.Notes = append(res.Notes, cr.Cohort())
	}
	if err := closeClient(); err != nil && !errors.Is(err, context.Canceled) {
		res.Notes = append(res.Notes, "close: "+err.Error())
	}
	if workers != nil && !workers.wait(30*time.Second) {
		res.Notes = append(res.Notes, "some workers did not return even after the client closed")
	}
	if pz != nil {
		pz.close()
		res.Pause = pz.summary(r.check.staleOverlaps.Load())
		res.Notes = append(res.Notes, pz.notes()...)
		if acct != nil {
			fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			balance, committed, err := acct.final(fctx)
			cancel()
			if err != nil {
				res.Error = "postgres account: " + err.Error()
			} else {
				res.Pause.Account = account(acct.judgesTokens(), r.deposits.Load(), pz.stalledDeposits(), balance, committed)
			}
		}
	}
	if sc != nil {
		res.scanOrphans(sc, cfg.LockRoot, marker, v.settle)
	}

	res.Violations = r.check.violations()
	if res.Checked {
		res.ViolationsDetail = r.check.detail()
	}
	if res.Pause != nil && res.Pause.StaleAcceptedWithToken > 0 {
		// A fencing token that did not fence: the lock's promise broken.
		res.Violations += res.Pause.StaleAcceptedWithToken
		if res.ViolationsDetail != nil {
			res.ViolationsDetail["stale_write_accepted"] = res.Pause.StaleAcceptedWithToken
		}
	}
	if a := res.Pause.account(); a != nil && a.violations() > 0 {
		// A fenced account whose books do not balance.
		res.Violations += a.violations()
		if res.ViolationsDetail != nil {
			res.ViolationsDetail["lost_update"] = a.violations()
		}
	}
	res.Lost = r.lost.Load()
	res.Unfinished = r.unfinished.Load()
	if res.Unfinished > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d acquisitions scheduled in the window were not granted by the end of the run; their wait until then is in the latencies", res.Unfinished))
	}
	res.Cancelled = r.cancelled.Load()
	res.Errors = r.errs.Load()
	res.FaultsInjected = inj.count.Load()
	if cfg.Faults.has("cancel") {
		res.FaultsInjected += res.Cancelled
	}
	res.GoroutinesPeak = sampler.Stop()
}

// interleaved corrects res's per-second and per-cycle figures for an
// interleaved run: its cycles/s over its own slices, not the whole
// timeline; no server figures (the server served every impl at once), nor
// client ones for an impl in the harness's process, which the other
// in-process impls shared (ownProcess: a spawned peer's CPU is its own).
func (res *result) interleaved(cfg *config, ownProcess bool) {
	il := cfg.interleave
	if il == nil {
		return
	}
	if m := il.measured(); m > 0 {
		res.DurationS = m.Seconds()
		res.CyclesPerS = float64(res.Cycles) / m.Seconds()
	}
	res.ServerCPUUsPerCycle, res.ServerRequestsPerCycle = nil, nil
	if !ownProcess {
		res.ClientCPUUsPerCycle = nil
	}
	res.Notes = append(res.Notes, fmt.Sprintf("interleaved: %d slices of %v of its own in a window of %v shared with %d impls (cycles/s over its own slices)",
		il.rounds, il.slice, il.window(), il.n))
}

// openLoopDrain is how long an open-loop run's workers go on after the
// window, for the acquisitions scheduled in it.
const openLoopDrain = 5 * time.Second

// runSpawned runs an impl whose workers live in a process of its own, and
// measures it from outside: CPU times and the server's counters at the
// peer's BENCH-START and BENCH-END, cycles and latencies from its report.
func runSpawned(hard context.Context, cfg *config, env *runEnv, sp spawner, v backendView, sc nodeScanner, res *result) {
	spec := spawnSpec{workloadSpec: cfg.spec(v.addrs), witness: cfg.WitnessFile, env: env, interleave: cfg.interleave, slices: cfg.slices}
	res.Checked = cfg.WitnessFile != "" && sp.Excludes()
	peer, err := sp.Spawn(hard, spec)
	if err != nil {
		res.Error = err.Error()
		return
	}
	defer peer.Kill()
	client := func() (time.Duration, bool) {
		d, err := procCPU(peer.PID())
		return d, err == nil
	}
	var s0, s1 sample
	for i, line := range []string{interop.BenchStartLine, interop.BenchEndLine} {
		if _, err := peer.WaitLine(hard, line); err != nil {
			res.Error = err.Error()
			return
		}
		if i == 1 {
			res.RSSBytes = procRSS(peer.PID()) // before the peer can exit
		}
		s := v.sample(context.Background(), sc, 0, client)
		if i == 0 {
			s0 = s
		} else {
			s1 = s
		}
	}
	out, err := peer.Wait()
	if err != nil {
		res.Error = fmt.Sprintf("%s exited %d", sp.Name(), out.ExitCode)
		res.Notes = append(res.Notes, lastLines(out.Output, 5)...)
	}
	res.Violations = int64(out.Violations)
	b, perr := interop.ParseBench(out.Output)
	if perr != nil {
		if res.Error == "" {
			res.Error = perr.Error()
		}
		return
	}
	res.Cycles, res.Errors = b.Cycles, b.Errors
	res.DurationS = b.Window.Seconds()
	res.CyclesPerS = b.Rate()
	lat := newLatencies()
	for _, l := range b.Latency {
		lat.recordCount(l.Micros, l.Count)
	}
	res.AcquireP50Ms, res.AcquireP99Ms, res.AcquireMaxMs = lat.ms(50), lat.ms(99), lat.maxMs()
	res.AcquireP999Ms = lat.ms(99.9)
	if cfg.Rate > 0 {
		res.OfferedPerS = cfg.Rate
		res.Unfinished = parseUnfinished(out.Output)
	}
	res.window(s0, s1, true)
	res.interleaved(cfg, true)
	if sc != nil {
		// The peer has exited: any lock node left under the root is its.
		res.scanOrphans(sc, cfg.LockRoot, nil, v.settle)
	}
}

// scanOrphans counts the lock nodes carrying marker left under root once
// the client has gone, after the settle time in which a dead session's
// nodes may linger.
func (res *result) scanOrphans(sc nodeScanner, root string, marker []byte, settle time.Duration) {
	left, err := sc.settle(context.Background(), root, marker, settle)
	res.Orphans = len(left)
	if err != nil {
		res.Notes = append(res.Notes, "orphan scan: "+err.Error())
	}
	if len(left) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("orphaned lock nodes, e.g. %s", left[0]))
	}
}

// lastLines are up to n last non-empty lines of s.
func lastLines(s string, n int) []string {
	var out []string
	for _, l := range splitLines(s) {
		if l != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
