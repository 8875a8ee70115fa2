package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// A plain program is what a user of one library writes to time it: workers
// that loop acquire → release on one client, each timing its own acquires
// into a map of its own, with nothing else in the loop — no exclusion
// checks, no shared histogram, no counters but the window's. Each runs in a
// process of its own (this binary in child mode "plain"), speaks interop's
// bench protocol, and is measured exactly like the Curator and kazoo peers:
// -plain runs it right after the harness's own run of the same library, on
// the same server, so the two can be compared; a harness that slows a
// library down shows as a gap between the two rows.
//
// Nothing here uses the harness's workers, checks or metrics: only the
// libraries, the lock recipe of redislock.go (the Redis "library" both
// use) and the workload's flags (workloadSpec).

// plainCycle is one acquire → release; it returns the acquire's duration.
type plainCycle func(ctx context.Context) (time.Duration, error)

// parsePlain reads a plain program's flags: a workloadSpec.
func parsePlain(args []string, stderr io.Writer) (workloadSpec, error) {
	var o workloadSpec
	var servers string
	fs := flag.NewFlagSet("plain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs, &servers)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.servers = strings.Split(servers, ",")
	if o.path == "" || servers == "" || o.workers < 1 || (o.duration <= 0 && o.iterations <= 0) {
		return o, errors.New("plain: need -impl, -servers, -path, -workers >= 1, and -duration or -iterations")
	}
	return o, nil
}

// plainMain runs a plain program of the workload its flags describe.
func plainMain(args []string, stdout, stderr io.Writer) int {
	o, err := parsePlain(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	ctx := context.Background()
	var violations atomic.Int64
	var report func() string
	cycles, closeLib, err := openPlain(ctx, o, &violations, &report)
	if err != nil {
		fmt.Fprintln(stderr, "plain:", err)
		return exitFailed
	}
	res := runPlain(ctx, o, cycles, stdout)
	if report != nil {
		fmt.Fprintln(stdout, "COHORT", report())
	}
	closeLib()
	if err := interop.WriteBench(stdout, res); err != nil {
		return exitFailed
	}
	fmt.Fprintf(stdout, "RESULT acquisitions=%d violations=%d\n", res.Cycles, violations.Load())
	if res.Errors > 0 || violations.Load() > 0 {
		return exitFailed
	}
	return exitOK
}

// openPlain connects the library and makes each worker's cycle: the
// library's own acquire and release, timed. With o.witness, a turnstile
// holder also follows the witness file's mutex protocol, and counts a
// failed check in violations. With o.keys, every cycle makes the lock of
// a new key, as a program locking job ids would.
//
// report, for turnstile, is set to say what lock cohorting did.
func openPlain(ctx context.Context, o workloadSpec, violations *atomic.Int64, report *func() string) (cycles []plainCycle, closeLib func(), err error) {
	cycles = make([]plainCycle, o.workers)
	// each makes worker w's cycle from mk, which makes the acquire of one
	// lock path: once (its own path), or for every cycle (keys).
	each := func(mk func(path string) func(context.Context) (func(context.Context) error, error)) {
		for w := range cycles {
			if !o.keys {
				cycles[w] = timed(o.hold, mk(o.workerPath(w)))
				continue
			}
			var n int64
			cycles[w] = timed(o.hold, func(ctx context.Context) (func(context.Context) error, error) {
				p := keyPath(o.path, w, n)
				n++
				return mk(p)(ctx)
			})
		}
	}
	switch o.impl {
	case "turnstile", "turnstile-fifo", "turnstile-delpaths":
		eng, err := engine.Start(ctx, turnstileConfig(o.servers, o.sessionTimeout, o.maxInFlight, o.impl == "turnstile-fifo", o.impl == "turnstile-delpaths",
			slog.New(slog.DiscardHandler)))
		if err != nil {
			return nil, nil, err
		}
		*report = func() string { return cohortNote(eng.CohortStats()) }
		var wit *interop.Witness
		var words *wordWitness
		switch {
		case o.witness == "":
		case o.witnessMode == "shm":
			words, err = openShmWitness(o.witness)
		default:
			wit, err = interop.NewWitness(o.witness)
		}
		if err != nil {
			eng.Close()
			return nil, nil, err
		}
		closeAll := func() {
			eng.Close()
			if words != nil {
				words.close() // the workers are done: runPlain waited for them
			}
		}
		var worker atomic.Int64 // each mutex's holder id in the shm words
		each(func(path string) func(context.Context) (func(context.Context) error, error) {
			m := lock.NewMutex(eng, path)
			var slot int
			var id uint64
			if words != nil {
				slot, id = words.slot(path), holderID(os.Getpid(), int(worker.Add(1)))
			}
			return func(ctx context.Context) (func(context.Context) error, error) {
				l, err := m.Lock(ctx)
				if err != nil {
					return nil, err
				}
				var enter, leave func() error
				switch {
				case words != nil:
					enter, leave = func() error { return words.take(slot, id) }, func() error { return words.give(slot, id) }
				case wit != nil:
					enter, leave = wit.AcquireMutex, wit.ReleaseMutex
				default:
					return l.Release, nil
				}
				entered := enter()
				return func(ctx context.Context) error {
					var left error
					if entered == nil {
						left = leave() // a hold not entered leaves nothing
					}
					return errors.Join(witnessed(entered, violations), witnessed(left, violations), l.Release(ctx))
				}, nil
			}
		})
		return cycles, closeAll, nil
	case "gozk", "rawzk":
		conn, err := dialZK(ctx, o.servers, o.sessionTimeout)
		if err != nil {
			return nil, nil, err
		}
		if o.impl == "gozk" {
			each(func(p string) func(context.Context) (func(context.Context) error, error) {
				l := zk.NewLock(conn.conn, p, zk.WorldACL(zk.PermAll))
				return func(context.Context) (func(context.Context) error, error) {
					if err := l.Lock(); err != nil {
						return nil, err
					}
					return func(context.Context) error { return l.Unlock() }, nil
				}
			})
			return cycles, func() { conn.Close() }, nil
		}
		each(func(p string) func(context.Context) (func(context.Context) error, error) {
			return func(context.Context) (func(context.Context) error, error) {
				if o.keys {
					// The bare cold cycle: the key as a container first.
					if err := createKey(conn.conn, p); err != nil {
						return nil, err
					}
				}
				node, err := createLockNode(conn.conn, p, nil)
				if err != nil {
					return nil, err
				}
				_, _, err = conn.conn.Children(p)
				return func(context.Context) error { return errors.Join(err, conn.conn.Delete(node, -1)) }, nil
			}
		})
		return cycles, func() { conn.Close() }, nil
	case "redis":
		rdb, err := dialRedis(ctx, o.servers[0], o.workers)
		if err != nil {
			return nil, nil, err
		}
		each(func(p string) func(context.Context) (func(context.Context) error, error) {
			l := newRedisLock(rdb, p, o.redisTTL, o.redisRetry, "plain")
			return func(ctx context.Context) (func(context.Context) error, error) {
				h, err := l.Acquire(ctx)
				if err != nil {
					return nil, err
				}
				return h.Release, nil
			}
		})
		return cycles, func() { rdb.Close() }, nil
	}
	return nil, nil, fmt.Errorf("no plain program for -impl %q", o.impl)
}

// witnessed counts a witness check that failed in violations, and returns
// any other error of the witness (its file's I/O), which the cycle reports.
func witnessed(err error, violations *atomic.Int64) error {
	if errors.Is(err, interop.ErrViolation) {
		violations.Add(1)
		return nil
	}
	return err
}

// timed is the cycle of acquire (which returns its release): acquire,
// timed; hold; release.
func timed(hold time.Duration, acquire func(context.Context) (func(context.Context) error, error)) plainCycle {
	return func(ctx context.Context) (time.Duration, error) {
		t0 := time.Now()
		release, err := acquire(ctx)
		if err != nil {
			return 0, err
		}
		d := time.Since(t0)
		if hold > 0 {
			time.Sleep(hold)
		}
		return d, release(ctx)
	}
}

// runPlain runs the workers and measures the window, as the peers do:
// open after the warm-up, closed after the duration (or when every worker
// is done); a cycle counts when it completes while the window is open.
func runPlain(ctx context.Context, o workloadSpec, cycles []plainCycle, stdout io.Writer) interop.BenchResult {
	var open, stopping atomic.Bool
	var errs atomic.Int64
	lat := make([]map[int64]int64, len(cycles))
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w, cycle := range cycles {
		lat[w] = map[int64]int64{}
		wg.Go(func() {
			for i := 0; (o.iterations == 0 || i < o.iterations) && !stopping.Load(); i++ {
				d, err := cycle(ctx)
				if err != nil {
					errs.Add(1)
					time.Sleep(5 * time.Millisecond) // not a spin on a failing server
					continue
				}
				if open.Load() {
					lat[w][interop.LatencyRound(d.Microseconds())]++
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	waitFor := func(d time.Duration) {
		if d <= 0 {
			select {
			case <-done:
			default:
			}
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
	waitFor(o.warmup)
	start := time.Now()
	open.Store(true)
	fmt.Fprintln(stdout, interop.BenchStartLine)
	if o.duration > 0 {
		waitFor(o.duration)
	} else {
		<-done
	}
	open.Store(false)
	window := time.Since(start)
	stopping.Store(true)
	fmt.Fprintln(stdout, interop.BenchEndLine)
	<-done
	res := interop.BenchResult{Errors: errs.Load(), Window: window}
	for _, m := range lat {
		for us, n := range m {
			res.Latency = append(res.Latency, interop.LatencyBucket{Micros: us, Count: n})
			res.Cycles += n
		}
	}
	return res
}
