package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/interop"
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
// Nothing here uses the harness's types: only the libraries, and the lock
// recipe of redislock.go, which is the Redis "library" both use.

// plainCycle is one acquire → release; it returns the acquire's duration.
type plainCycle func(ctx context.Context) (time.Duration, error)

// plainOptions are the plain program's flags.
type plainOptions struct {
	impl           string
	servers        []string
	path           string
	paths          int // 0: every worker on path; n: worker w on path/<w mod n>
	workers        int
	iterations     int // per worker; 0: no limit
	duration       time.Duration
	warmup         time.Duration
	hold           time.Duration
	sessionTimeout time.Duration
	maxInFlight    int
	redisTTL       time.Duration
	redisRetry     time.Duration
}

// args is the command line that asks a plain program for o.
func (o plainOptions) args() []string {
	return []string{
		"-impl", o.impl, "-servers", strings.Join(o.servers, ","), "-path", o.path,
		"-paths", fmt.Sprint(o.paths), "-workers", fmt.Sprint(o.workers), "-iterations", fmt.Sprint(o.iterations),
		"-duration", o.duration.String(), "-warmup", o.warmup.String(), "-hold", o.hold.String(),
		"-session-timeout", o.sessionTimeout.String(), "-max-in-flight", fmt.Sprint(o.maxInFlight),
		"-redis-ttl", o.redisTTL.String(), "-redis-retry", o.redisRetry.String(),
	}
}

func parsePlain(args []string, stderr io.Writer) (plainOptions, error) {
	var o plainOptions
	var servers string
	fs := flag.NewFlagSet("plain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.impl, "impl", "", "turnstile | gozk | rawzk | redis")
	fs.StringVar(&servers, "servers", "", "host:port,...")
	fs.StringVar(&o.path, "path", "", "lock path (Redis: key)")
	fs.IntVar(&o.paths, "paths", 0, "")
	fs.IntVar(&o.workers, "workers", 1, "")
	fs.IntVar(&o.iterations, "iterations", 0, "")
	fs.DurationVar(&o.duration, "duration", 0, "")
	fs.DurationVar(&o.warmup, "warmup", 0, "")
	fs.DurationVar(&o.hold, "hold", 0, "")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", 5*time.Second, "")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 0, "")
	fs.DurationVar(&o.redisTTL, "redis-ttl", 5*time.Second, "")
	fs.DurationVar(&o.redisRetry, "redis-retry", time.Millisecond, "")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.servers = strings.Split(servers, ",")
	if o.path == "" || servers == "" || o.workers < 1 || (o.duration <= 0 && o.iterations <= 0) {
		return o, errors.New("plain: need -impl, -servers, -path, -workers >= 1, and -duration or -iterations")
	}
	return o, nil
}

// plainMain runs a plain program; see plainOptions.
func plainMain(args []string, stdout, stderr io.Writer) int {
	o, err := parsePlain(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	ctx := context.Background()
	cycles, closeLib, err := openPlain(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "plain:", err)
		return exitFailed
	}
	res := runPlain(ctx, o, cycles, stdout)
	closeLib()
	if err := interop.WriteBench(stdout, res); err != nil {
		return exitFailed
	}
	fmt.Fprintf(stdout, "RESULT acquisitions=%d violations=0\n", res.Cycles)
	if res.Errors > 0 {
		return exitFailed
	}
	return exitOK
}

// openPlain connects the library and makes each worker's cycle.
func openPlain(ctx context.Context, o plainOptions) (cycles []plainCycle, closeLib func(), err error) {
	paths := make([]string, o.workers)
	for w := range paths {
		paths[w] = o.path
		if o.paths > 0 {
			paths[w] = fmt.Sprintf("%s/%d", o.path, w%o.paths)
		}
	}
	cycles = make([]plainCycle, o.workers)
	switch o.impl {
	case "turnstile":
		eng, err := engine.Start(ctx, engine.Config{Servers: o.servers, SessionTimeout: o.sessionTimeout,
			MaxInFlight: o.maxInFlight, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, nil, err
		}
		for w, p := range paths {
			m := lock.NewMutex(eng, p)
			cycles[w] = func(ctx context.Context) (time.Duration, error) {
				t0 := time.Now()
				l, err := m.Lock(ctx)
				if err != nil {
					return 0, err
				}
				d := time.Since(t0)
				hold(o.hold)
				return d, l.Release(ctx)
			}
		}
		return cycles, func() { eng.Close() }, nil
	case "gozk", "rawzk":
		conn, err := dialZK(ctx, o.servers, o.sessionTimeout)
		if err != nil {
			return nil, nil, err
		}
		for w, p := range paths {
			if o.impl == "gozk" {
				l := zk.NewLock(conn.conn, p, zk.WorldACL(zk.PermAll))
				cycles[w] = func(context.Context) (time.Duration, error) {
					t0 := time.Now()
					if err := l.Lock(); err != nil {
						return 0, err
					}
					d := time.Since(t0)
					hold(o.hold)
					return d, l.Unlock()
				}
				continue
			}
			cycles[w] = func(context.Context) (time.Duration, error) {
				t0 := time.Now()
				node, err := createLockNode(conn.conn, p, nil)
				if err != nil {
					return 0, err
				}
				_, _, err = conn.conn.Children(p)
				d := time.Since(t0)
				hold(o.hold)
				return d, errors.Join(err, conn.conn.Delete(node, -1))
			}
		}
		return cycles, func() { conn.Close() }, nil
	case "redis":
		rdb, err := dialRedis(ctx, o.servers[0], o.workers)
		if err != nil {
			return nil, nil, err
		}
		for w, p := range paths {
			l := newRedisLock(rdb, p, o.redisTTL, o.redisRetry, "plain")
			cycles[w] = func(ctx context.Context) (time.Duration, error) {
				t0 := time.Now()
				h, err := l.Acquire(ctx)
				if err != nil {
					return 0, err
				}
				d := time.Since(t0)
				hold(o.hold)
				return d, h.Release(ctx)
			}
		}
		return cycles, func() { rdb.Close() }, nil
	}
	return nil, nil, fmt.Errorf("no plain program for -impl %q", o.impl)
}

func hold(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// runPlain runs the workers and measures the window, as the peers do:
// open after the warm-up, closed after the duration (or when every worker
// is done); a cycle counts when it completes while the window is open.
func runPlain(ctx context.Context, o plainOptions, cycles []plainCycle, stdout io.Writer) interop.BenchResult {
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
