package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// workloadSpec is a workload as a process of its own runs it: a plain
// program, or the pause fault's holder. The harness writes it as flags
// (args) and the child reads them back (register), so the two cannot
// disagree on a flag.
type workloadSpec struct {
	impl           string
	servers        []string
	path           string // the lock path (Redis: key), or with paths > 0 the parent of worker w's path/<w mod paths>
	paths          int
	workers        int
	iterations     int // per worker; 0: no limit
	duration       time.Duration
	warmup         time.Duration
	hold           time.Duration
	sessionTimeout time.Duration
	maxInFlight    int
	redisTTL       time.Duration
	redisRetry     time.Duration
	// keys: worker w's cycle n locks path-<w>/<n>, a path never used before
	// (the keys workload; path is the run's prefix, keysPrefix).
	keys bool
	// rate, when positive: open loop, acquisitions started at this many per
	// second across the workers, each timed from its intended start.
	rate float64
	// witness, when not empty, is the cross-process witness file the child
	// follows: the pause fault's stalled holder, and a plain turnstile
	// program (the twoproc workload's second process), which counts its
	// violations.
	witness string
	// witnessMode is the witness's protocol: "file", or "shm" (witness_shm.go).
	witnessMode string
}

// args is the command line that asks a child for s.
func (s workloadSpec) args() []string {
	return []string{
		"-impl", s.impl, "-servers", strings.Join(s.servers, ","), "-path", s.path,
		"-paths", fmt.Sprint(s.paths), "-workers", fmt.Sprint(s.workers), "-iterations", fmt.Sprint(s.iterations),
		"-duration", s.duration.String(), "-warmup", s.warmup.String(), "-hold", s.hold.String(),
		"-session-timeout", s.sessionTimeout.String(), "-max-in-flight", fmt.Sprint(s.maxInFlight),
		"-redis-ttl", s.redisTTL.String(), "-redis-retry", s.redisRetry.String(), "-witness", s.witness, "-witness-mode", s.witnessMode,
		"-keys=" + fmt.Sprint(s.keys), "-rate", fmt.Sprint(s.rate),
	}
}

// register defines s's flags on fs; servers is split after Parse by
// splitServers.
func (s *workloadSpec) register(fs *flag.FlagSet, servers *string) {
	fs.StringVar(&s.impl, "impl", "", "turnstile | turnstile-fifo | gozk | rawzk | redis")
	fs.StringVar(servers, "servers", "", "host:port,...")
	fs.StringVar(&s.path, "path", "", "lock path (Redis: key)")
	fs.IntVar(&s.paths, "paths", 0, "0: every worker on -path; n: worker w on -path/<w mod n>")
	fs.IntVar(&s.workers, "workers", 1, "")
	fs.IntVar(&s.iterations, "iterations", 0, "cycles per worker (0: no limit)")
	fs.DurationVar(&s.duration, "duration", 0, "")
	fs.DurationVar(&s.warmup, "warmup", 0, "")
	fs.DurationVar(&s.hold, "hold", 0, "")
	fs.DurationVar(&s.sessionTimeout, "session-timeout", 5*time.Second, "")
	fs.IntVar(&s.maxInFlight, "max-in-flight", 0, "")
	fs.DurationVar(&s.redisTTL, "redis-ttl", 5*time.Second, "")
	fs.DurationVar(&s.redisRetry, "redis-retry", time.Millisecond, "")
	fs.BoolVar(&s.keys, "keys", false, "worker w's cycle n on -path-<w>/<n>, a lock path never used before")
	fs.Float64Var(&s.rate, "rate", 0, "open loop: acquisitions started per second across the workers (0: closed loop)")
	fs.StringVar(&s.witnessMode, "witness-mode", "file", "file | shm: the witness's protocol (shm: a plain turnstile program only)")
	fs.StringVar(&s.witness, "witness", "", "the witness file to follow (a plain program: turnstile only, the mutex protocol; a failed check is a violation)")
}

// workerPath is worker w's lock path (keys: the parent of its keys).
func (s workloadSpec) workerPath(w int) string {
	if s.keys {
		return keysWorkerDir(s.path, w)
	}
	if s.paths > 0 {
		return fmt.Sprintf("%s/%d", s.path, w%s.paths)
	}
	return s.path
}
