// Command pipeline takes 2,000 locks over 200 paths, the way an async
// pipeline would: one goroutine issues every acquisition, and the futures'
// callbacks hold each lock briefly and release it. No goroutine waits per
// lock; the engine's loop serves them all. -inflight bounds how many
// acquisitions are issued and not yet released (a weighted semaphore the
// issuing goroutine waits on); the issuing and the progress report are the
// two stages of an errgroup, so that either's failure, or an interrupt,
// stops both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/examples/internal/zkenv"
	"github.com/turnstile-go/turnstile/lock"
)

// pipeline is what the example does.
type pipeline struct {
	locks, paths int
	inflight     int           // at most this many acquired and not released; 0: no bound
	hold         time.Duration // how long each lock is held
	root         string        // the lock paths' parent
	progress     time.Duration // how often to print progress; 0: never
}

// result is what a run did.
type result struct {
	granted, released, failed int64
	peakInFlight              int64 // issued and not yet released, at most
	peakGoroutines            int64
}

func main() {
	p := pipeline{root: "/examples/pipeline", progress: 250 * time.Millisecond}
	flag.IntVar(&p.locks, "locks", 2000, "acquisitions to issue")
	flag.IntVar(&p.paths, "paths", 200, "lock paths they spread over")
	flag.IntVar(&p.inflight, "inflight", 0, "at most this many acquisitions issued and not yet released (0: all at once)")
	flag.DurationVar(&p.hold, "hold", 5*time.Millisecond, "how long each lock is held")
	flag.Parse()
	if p.locks < 1 || p.paths < 1 || p.hold < 0 || p.inflight < 0 {
		fmt.Fprintln(os.Stderr, "pipeline: -locks and -paths must be positive, -hold and -inflight not negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	servers, stopZK, err := zkenv.Servers(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
	_, err = p.run(ctx, servers)
	stopZK()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

func (p pipeline) run(ctx context.Context, servers []string) (result, error) {
	eng, err := engine.Start(ctx, engine.Config{Servers: servers})
	if err != nil {
		return result{}, err
	}
	defer eng.Close()

	bound := p.inflight
	if bound == 0 {
		bound = p.locks
	}
	var (
		slots                     = semaphore.NewWeighted(int64(bound))
		granted, released, failed atomic.Int64
		inFlight, peakInFlight    atomic.Int64
		peak                      atomic.Int64
		done                      sync.WaitGroup
		finished                  = make(chan struct{})
	)
	raise := func(max *atomic.Int64, n int64) {
		for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
		}
	}
	sample := func() { raise(&peak, int64(runtime.NumGoroutine())) }
	// finish ends one acquisition, granted and released or not, and gives
	// its slot back.
	finish := func() {
		inFlight.Add(-1)
		slots.Release(1)
		done.Done()
	}
	start := time.Now()
	before := eng.Stats()
	fmt.Printf("issuing %d acquisitions over %d paths from one goroutine, at most %d in flight\n", p.locks, p.paths, bound)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { // issue every acquisition, then wait for all to end
		defer close(finished)
		for i := range p.locks {
			if err := slots.Acquire(gctx, 1); err != nil {
				done.Wait()
				return err
			}
			raise(&peakInFlight, inFlight.Add(1))
			done.Add(1)
			m := lock.NewMutex(eng, fmt.Sprintf("%s/shard-%03d", p.root, i%p.paths))
			m.Acquire(gctx).Then(func(lease *lock.Lease, err error) {
				if err != nil {
					failed.Add(1)
					finish()
					return
				}
				granted.Add(1)
				sample()
				// Hold without parking a goroutine: a timer releases.
				time.AfterFunc(p.hold, func() {
					lease.ReleaseAsync().Then(func(_ struct{}, err error) {
						if err != nil {
							failed.Add(1)
						} else {
							released.Add(1)
						}
						finish()
					})
				})
			})
		}
		sample()
		fmt.Printf("all %d issued in %v; goroutines now %d\n", p.locks, time.Since(start).Round(time.Millisecond), runtime.NumGoroutine())
		done.Wait()
		return nil
	})
	g.Go(func() error { // report progress until the issuing stage ends
		var tick <-chan time.Time
		if p.progress > 0 {
			t := time.NewTicker(p.progress)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-finished:
				return nil
			case <-tick:
				sample()
				fmt.Printf("  %6v granted %5d released %5d failed %d in flight %d goroutines %d\n",
					time.Since(start).Round(time.Millisecond), granted.Load(), released.Load(), failed.Load(),
					inFlight.Load(), runtime.NumGoroutine())
			}
		}
	})
	err = g.Wait()
	res := result{granted: granted.Load(), released: released.Load(), failed: failed.Load(),
		peakInFlight: peakInFlight.Load(), peakGoroutines: peak.Load()}
	if err != nil {
		return res, err
	}

	elapsed := time.Since(start)
	st := eng.Stats()
	reqs := st.Requests() - before.Requests()
	fmt.Printf("done: %d granted, %d released, %d failed in %v (%.0f locks/s)\n",
		res.granted, res.released, res.failed, elapsed.Round(time.Millisecond), float64(res.granted)/elapsed.Seconds())
	fmt.Printf("ZooKeeper requests: %d (%.2f per lock)\n", reqs, float64(reqs)/float64(p.locks))
	fmt.Printf("operations: creates %d, deletes %d (%d of them sent together in %d multi requests), lists %d, watches %d, parent creates %d\n",
		st.Creates-before.Creates, st.Deletes-before.Deletes, st.Batched-before.Batched, st.Multis-before.Multis,
		st.Lists-before.Lists, st.Watches-before.Watches, st.ParentCreates-before.ParentCreates)
	fmt.Printf("peak goroutines: %d; peak in flight: %d\n", res.peakGoroutines, res.peakInFlight)
	if res.failed > 0 {
		return res, fmt.Errorf("%d acquisitions or releases failed", res.failed)
	}
	return res, nil
}
