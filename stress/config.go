package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// config is every flag of a run.
type config struct {
	Servers        []string // an existing ZooKeeper; empty: start an embedded one
	Ensemble       int      // embedded: 1 standalone server, or n ensemble members
	Workload       string
	Workers        int
	Paths          int
	Duration       time.Duration
	Hold           time.Duration
	Cycles         int64
	Warmup         time.Duration
	ServerWarmup   time.Duration
	Impl           string   // as given
	Impls          []string // what it names, in order
	Plain          bool
	PlainFirst     bool
	Bench          bool
	BenchLatency   bool
	BenchTwoproc   bool
	FSync          bool
	RedisTTL       time.Duration
	RedisRetry     time.Duration
	RedisFsync     string
	Faults         faultSet
	FaultInterval  time.Duration
	PauseResource  string // what the pause fault's holders write: "file" or "postgres"
	Latency        time.Duration
	Jitter         time.Duration
	CancelRatio    float64
	CancelMax      time.Duration
	LockRoot       string
	LockPath       string
	WitnessFile    string // "" = no cross-process witness (the in-process checks always run)
	WitnessOnDisk  bool
	WitnessMode    string // "file", "shm", or "" (resolved: shm for twoproc, file otherwise)
	WriteRatio     float64
	Leases         int
	Seed           uint64
	SessionTimeout time.Duration
	MaxInFlight    int
	Linger         time.Duration
	Deadline       time.Duration
	JSON           bool
	CPUProfile     string
	Trace          string
	Progress       bool
	Verbose        bool
	// Rate, when positive, runs the workers open-loop: acquisitions start at
	// this many per second across them, each timed from its intended start.
	Rate float64
	// Report is the HTML file written at the end ("" = none).
	Report string

	// keysRun is the keys workload's prefix of one run (keysPrefix), set by
	// runOne on its copy of the config.
	keysRun string
	// rateFrom, on an open-loop scenario of a suite, draws its rate from
	// the results before it (0: skip it, and why).
	rateFrom func(before []*result) (rate float64, why string)
	// keysPlanned: a keys run is planned, so the embedded servers sweep
	// empty containers often (reapEvery).
	keysPlanned bool
	// interleave, on an interleaved open-loop run (interleave.go), is the
	// timeline every impl of the scenario shares, and slices this impl's
	// spans of it; Warmup and Duration then count from its epoch.
	interleave *interleaving
	slices     []slice
}

var workloads = []string{"uncontended", "contended", "paths", "keys", "waiters", "rw", "semaphore", "election", "twoproc"}

// openLoopWorkloads are those -rate applies to: workers that cycle acquire
// → hold → release (the others queue, campaign or span two processes).
var openLoopWorkloads = []string{"uncontended", "contended", "paths", "keys", "rw", "semaphore"}

// knownFaults are the values of -faults; several may be given, comma
// separated.
var knownFaults = []string{"none", "conn-cut", "latency", "expire", "leader-kill", "cancel", "pause"}

// faultSet is the parsed -faults list, without "none".
type faultSet []string

func (f faultSet) has(name string) bool { return slices.Contains(f, name) }

// needsProxy: the faults that put a TCP proxy between client and server.
func (f faultSet) needsProxy() bool {
	return f.has("conn-cut") || f.has("latency") || f.has("expire")
}

func (f faultSet) String() string {
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, ",")
}

// errUsage marks a command line that cannot run (exit code 2).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers, faults string
	fs.StringVar(&servers, "servers", "", "an existing ZooKeeper, `host:port,...` (default: start an embedded one)")
	fs.IntVar(&c.Ensemble, "ensemble", 1, "embedded servers to start: 1 standalone, or 3 for an ensemble (leader-kill needs it)")
	fs.StringVar(&c.Workload, "workload", "contended", "uncontended | contended | paths | keys (each worker's every cycle on a lock path never used before) | waiters | rw | semaphore | election | twoproc (turnstile only: one lock path, -workers in the harness and as many in a second process, checked with a witness file)")
	fs.IntVar(&c.Workers, "workers", 16, "concurrent workers (for waiters: waiters queued behind each path's holder)")
	fs.IntVar(&c.Paths, "paths", 0, "lock paths for the paths and waiters workloads (default 10)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long workers run (0 with -cycles: until the cycles are done; waiters runs one queue-and-drain and ignores it)")
	fs.DurationVar(&c.Hold, "hold", 0, "time held in the critical section per cycle")
	fs.Int64Var(&c.Cycles, "cycles", 0, "stop after this many acquisition attempts in all (0: no limit, use -duration)")
	fs.DurationVar(&c.Warmup, "warmup", 0, "run this long before the measured window opens (every impl, peers included; not for waiters)")
	fs.DurationVar(&c.ServerWarmup, "server-warmup", 0, "before the first impl, load the ZooKeeper servers this long with bare cycles and turnstile's, unmeasured, so that the JVM has compiled its hot paths and the first impl does not pay for it (default 10s with -bench)")
	fs.StringVar(&c.Impl, "impl", "turnstile", "turnstile | gozk (go-zookeeper/zk's Lock) | curator (Apache Curator's InterProcessMutex, a Java process) | kazoo (kazoo's Lock, a Python process) | redis (SET NX PX + compare-and-delete, on a redis-server of its own) | rawzk (no lock: create+getChildren+delete) | syncmutex (a process-local sync.Mutex per path, no server: the in-process limit) | all, or a comma-separated list")
	fs.BoolVar(&c.Plain, "plain", false, "after each of turnstile, gozk, redis and rawzk, run its plain program (a process of its own doing nothing but the loop) on the same server, to compare with the harness's run")
	fs.BoolVar(&c.PlainFirst, "plain-first", false, "with -plain: run each plain program before the harness's run instead of after (to see that the order does not decide the comparison)")
	fs.BoolVar(&c.Bench, "bench", false, "run the suite of BENCHMARKS.md (uncontended with 64 workers and contended with 16, every impl and -plain; waiters 100 x 100 for turnstile and gozk) and print one table; -duration and -warmup apply to each run")
	fs.BoolVar(&c.BenchLatency, "bench-latency", false, "run the suite of BENCHMARKS.md's cold keys and open loop (keys with 64 workers, every impl and -plain; then open loop on keys and on uncontended at half the best ZooKeeper peer's closed-loop cycles/s) and print one table; -duration and -warmup apply to each run")
	fs.BoolVar(&c.BenchTwoproc, "bench-twoproc", false, "run issue 19's two-process shape alone: contended with 16 workers on one path for gozk, curator and kazoo (the best is the reference), then twoproc with 8 workers in each of two processes for turnstile and turnstile-fifo, and print the targets; -duration and -warmup apply to each run")
	fs.BoolVar(&c.FSync, "fsync", true, "embedded ZooKeeper servers fsync every write before acknowledging it (ZooKeeper's default, forceSync=yes); false: forceSync=no, as the tests run")
	fs.DurationVar(&c.RedisTTL, "redis-ttl", 0, "redis: the lock's lease (default: -session-timeout)")
	fs.DurationVar(&c.RedisRetry, "redis-retry", time.Millisecond, "redis: a waiter retries its SET after this long, +/-50%")
	fs.StringVar(&c.RedisFsync, "redis-appendfsync", "", "redis: run redis-server with an append-only file and this fsync policy (always | everysec); default: redis-server's defaults (snapshots only)")
	fs.StringVar(&faults, "faults", "none", "comma-separated: none | conn-cut | latency | expire | leader-kill | cancel | pause (stop a holder process with SIGSTOP for longer than its session / TTL; contended only)")
	fs.StringVar(&c.PauseResource, "pause-resource", "file", "with -faults pause, what every holder writes once per hold: file (a file under flock that refuses a token below the greatest it has seen) | postgres (an account in a PostgreSQL server the harness starts: the holder reads the balance, then writes it plus a deposit of 1, the stalled holder stopped in between; unfenced, but for -impl turnstile-sqlfence, whose transactions check the token with fence/sqlfence; the books are balanced at the end)")
	fs.DurationVar(&c.FaultInterval, "fault-interval", 2*time.Second, "mean time between injected faults (each wait is drawn from 0.5x..1.5x)")
	fs.DurationVar(&c.Latency, "latency", 5*time.Millisecond, "with -faults latency: delay added by the proxy in each direction")
	fs.DurationVar(&c.Jitter, "jitter", 2*time.Millisecond, "with -faults latency: +/- jitter on that delay")
	fs.Float64Var(&c.CancelRatio, "cancel-ratio", 0.3, "with -faults cancel: share of acquisitions cancelled")
	fs.DurationVar(&c.CancelMax, "cancel-max", 20*time.Millisecond, "with -faults cancel: a cancelled acquisition is cancelled at a random moment up to this long after it starts")
	fs.StringVar(&c.LockRoot, "lock-root", "/stress", "ZooKeeper path under which every lock node goes")
	fs.StringVar(&c.LockPath, "lock-path", "", "the one lock path of contended, rw, semaphore and election (default <lock-root>/one)")
	fs.StringVar(&c.WitnessFile, "witness-file", "", "cross-process witness file shared with peer processes, for interop and fault runs (default: none; the in-process checks run always); a name without a directory goes under "+memoryDir+", a path on a disk filesystem is refused; multi-path workloads use `PATH`-<i>")
	fs.StringVar(&c.WitnessMode, "witness-mode", "", "file (the witness files every peer follows) | shm (a word per lock path in a file both processes map, entered and left by compare-and-swap: twoproc only, whose two processes are both this binary); default: shm for twoproc, file otherwise")
	fs.BoolVar(&c.WitnessOnDisk, "witness-on-disk", false, "allow -witness-file on a disk filesystem (its per-cycle create and remove are then measured as part of every cycle)")
	fs.Float64Var(&c.WriteRatio, "write-ratio", 0.2, "rw: share of acquisitions that are writes")
	fs.IntVar(&c.Leases, "leases", 3, "semaphore: leases N")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of every random choice (0: pick one; it is printed at start)")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 5*time.Second, "ZooKeeper session timeout the clients ask for")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 0, "turnstile: engine.Config.MaxInFlight (0: the engine's default)")
	fs.DurationVar(&c.Linger, "linger", 0, "turnstile: engine.Config.Cohort.Linger, keep a lock's node this long after its last local release while no other client waits (0: off)")
	fs.DurationVar(&c.Deadline, "deadline", 0, "hard deadline of each run, after which it is aborted (default 2x duration + 2m, at least 5m)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write the harness process's CPU profile to `file` (to see what the harness itself costs)")
	fs.StringVar(&c.Trace, "trace", "", "write an execution trace of the harness process to `file` (go tool trace; to see where a latency tail comes from: the scheduler, GC, syscalls)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object per measured run on stdout (the table then goes to stderr)")
	fs.BoolVar(&c.Progress, "progress", false, "print the progress line even when stderr is not a terminal")
	fs.BoolVar(&c.Verbose, "v", false, "log the clients' warnings and errors to stderr")
	fs.Float64Var(&c.Rate, "rate", 0, "open loop: start this many acquisitions per second across the workers, whether or not earlier ones were granted, each timed from its intended start (0: closed loop, each worker waits for its grant before asking again)")
	fs.StringVar(&c.Report, "report", "", "write a self-contained HTML report to `file`: latency and throughput per second of every run, and the moments faults were injected")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./stress [flags]\n\n"+
			"Runs lock workloads on a real ZooKeeper, checks exclusion (in process and by\n"+
			"fencing tokens always; by a witness file shared with peer processes when\n"+
			"-witness-file is given), counts orphaned lock nodes, and measures.\n"+
			"Exit code: 0 clean, 1 violations/orphans/leaks/stuck workers/errors, 2 bad\n"+
			"flags or a workload the impl does not support, 130 interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}
	if servers != "" {
		for _, s := range strings.Split(servers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.Servers = append(c.Servers, s)
			}
		}
		if set["ensemble"] {
			return nil, bad("-servers and -ensemble exclude each other")
		}
	}
	for _, f := range strings.Split(faults, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || f == "none":
		case slices.Contains(knownFaults, f):
			if !c.Faults.has(f) {
				c.Faults = append(c.Faults, f)
			}
		default:
			return nil, bad("unknown fault %q (want %s)", f, strings.Join(knownFaults, ", "))
		}
	}
	if !slices.Contains(workloads, c.Workload) {
		return nil, bad("unknown -workload %q (want %s)", c.Workload, strings.Join(workloads, ", "))
	}
	for _, n := range strings.Split(c.Impl, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "all":
			c.Impls = append(c.Impls, allImpls...)
		case n != "":
			if _, err := implByName(n); err != nil {
				return nil, bad("%v", err)
			}
			c.Impls = append(c.Impls, n)
		}
	}
	c.Impls = slices.Compact(c.Impls)
	if len(c.Impls) == 0 {
		return nil, bad("-impl names no impl")
	}
	switch c.RedisFsync {
	case "", "always", "everysec", "no":
	default:
		return nil, bad("-redis-appendfsync %q: always, everysec or no", c.RedisFsync)
	}
	if c.Cycles > 0 && !set["duration"] {
		c.Duration = 0
	}
	switch {
	case c.Workers < 1:
		return nil, bad("-workers must be at least 1")
	case c.Ensemble < 1:
		return nil, bad("-ensemble must be at least 1")
	case c.Duration < 0 || c.Hold < 0 || c.Cycles < 0 || c.Deadline < 0 || c.Warmup < 0 || c.ServerWarmup < 0 || c.RedisTTL < 0 || c.RedisRetry <= 0:
		return nil, bad("negative -duration, -hold, -cycles, -deadline, -warmup or -redis-ttl, or -redis-retry not positive")
	case c.Duration == 0 && c.Cycles == 0 && c.Workload != "waiters":
		return nil, bad("give -duration or -cycles: every run must end by itself")
	case c.FaultInterval <= 0:
		return nil, bad("-fault-interval must be positive")
	case c.SessionTimeout <= 0:
		return nil, bad("-session-timeout must be positive")
	case c.CancelRatio < 0 || c.CancelRatio > 1 || c.WriteRatio < 0 || c.WriteRatio > 1:
		return nil, bad("-cancel-ratio and -write-ratio are between 0 and 1")
	case c.Leases < 1:
		return nil, bad("-leases must be at least 1")
	case c.Jitter > c.Latency:
		return nil, bad("-jitter may not exceed -latency")
	}
	if c.Rate < 0 {
		return nil, bad("-rate must not be negative")
	}
	if c.Rate > 0 && !slices.Contains(openLoopWorkloads, c.Workload) {
		return nil, bad("-rate runs the workloads %s", strings.Join(openLoopWorkloads, ", "))
	}
	if c.Faults.has("leader-kill") && (len(c.Servers) > 0 || c.Ensemble < 3) {
		return nil, bad("-faults leader-kill needs an embedded ensemble: -ensemble 3")
	}
	if c.Faults.has("pause") && c.Workload != "contended" {
		return nil, bad("-faults pause runs on -workload contended: the stalled holder and the workers share its one path")
	}
	switch {
	case c.PauseResource != "file" && c.PauseResource != "postgres":
		return nil, bad("-pause-resource %q: file or postgres", c.PauseResource)
	case c.PauseResource == "postgres" && !c.Faults.has("pause"):
		return nil, bad("-pause-resource postgres is what the holders of -faults pause write")
	case c.PauseResource != "postgres" && slices.ContainsFunc(c.Impls, sqlFenced):
		return nil, bad("-impl turnstile-sqlfence fences the pause fault's PostgreSQL account: give -faults pause -pause-resource postgres")
	}
	if (c.Bench || c.BenchLatency || c.BenchTwoproc) && (set["workload"] || set["impl"] || set["workers"] || set["paths"] || set["cycles"] || set["rate"] || len(c.Faults) > 0) {
		return nil, bad("-bench, -bench-latency and -bench-twoproc run their own workloads, impls and workers: give only -duration, -warmup, -hold and server flags with them")
	}
	if b2i(c.Bench)+b2i(c.BenchLatency)+b2i(c.BenchTwoproc) > 1 {
		return nil, bad("-bench, -bench-latency and -bench-twoproc are suites of their own: run one at a time")
	}
	switch c.WitnessMode {
	case "", "file":
	case "shm":
		if c.Workload != "twoproc" && !c.Bench && !c.BenchTwoproc {
			return nil, bad("-witness-mode shm checks the one path of -workload twoproc, whose two processes are both this binary; the peers follow the file protocol")
		}
	default:
		return nil, bad("-witness-mode %q: file or shm", c.WitnessMode)
	}
	if c.RedisTTL == 0 {
		c.RedisTTL = c.SessionTimeout
	}
	if (c.Bench || c.BenchLatency || c.BenchTwoproc) && !set["server-warmup"] {
		c.ServerWarmup = 10 * time.Second
	}
	if c.Paths == 0 {
		c.Paths = 10
	}
	if c.Paths < 1 {
		return nil, bad("-paths must be at least 1")
	}
	if !strings.HasPrefix(c.LockRoot, "/") || c.LockRoot == "/" || strings.HasSuffix(c.LockRoot, "/") {
		return nil, bad("-lock-root %q: an absolute ZooKeeper path, not the root", c.LockRoot)
	}
	if c.LockPath == "" {
		c.LockPath = c.LockRoot + "/one"
	}
	if !strings.HasPrefix(c.LockPath, c.LockRoot+"/") {
		return nil, bad("-lock-path %q must be under -lock-root %q (orphans are looked for there)", c.LockPath, c.LockRoot)
	}
	if c.Deadline == 0 {
		c.Deadline = max(2*c.Duration+2*time.Minute, 5*time.Minute)
	}
	return c, nil
}

// spec is the workload as a process of its own runs it on servers: the
// same paths the harness's workers use (lockPath), the same bounds.
func (c *config) spec(servers []string) workloadSpec {
	s := workloadSpec{
		servers: servers, path: c.LockPath, workers: c.Workers, duration: c.Duration, warmup: c.Warmup,
		hold: c.Hold, sessionTimeout: c.SessionTimeout, maxInFlight: c.MaxInFlight,
		redisTTL: c.RedisTTL, redisRetry: c.RedisRetry,
	}
	switch c.Workload {
	case "uncontended":
		s.path, s.paths = c.LockRoot+"/u", c.Workers
	case "paths":
		s.path, s.paths = c.LockRoot+"/p", c.Paths
	case "keys":
		s.path, s.keys = c.keysRun, true
	}
	s.rate = c.Rate
	if c.Cycles > 0 {
		s.iterations = int((c.Cycles + int64(c.Workers) - 1) / int64(c.Workers))
	}
	return s
}

// witnessMode is the witness's protocol for this run: shm for twoproc
// unless -witness-mode file asked otherwise; file for every other workload,
// whose peers (Curator, kazoo) follow only the files.
func (c *config) witnessMode() string {
	if c.Workload == "twoproc" && c.WitnessMode != "file" {
		return "shm"
	}
	return "file"
}

// serversLabel is the servers field of a result.
func (c *config) serversLabel() string {
	if len(c.Servers) == 0 {
		return "embedded"
	}
	return strings.Join(c.Servers, ",")
}
