// Command pipeline takes 2,000 locks over 200 paths at once, the way an
// async pipeline would: one goroutine issues every acquisition, and the
// futures' callbacks hold each lock briefly and release it. No goroutine
// waits per lock; the engine's loop serves them all.
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

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/examples/internal/zkenv"
	"github.com/turnstile-go/turnstile/lock"
)

func main() {
	locks := flag.Int("locks", 2000, "acquisitions to issue")
	paths := flag.Int("paths", 200, "lock paths they spread over")
	hold := flag.Duration("hold", 5*time.Millisecond, "how long each lock is held")
	flag.Parse()
	if *locks < 1 || *paths < 1 || *hold < 0 {
		fmt.Fprintln(os.Stderr, "pipeline: -locks and -paths must be positive, -hold not negative")
		os.Exit(2)
	}
	if err := run(*locks, *paths, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

func run(locks, paths int, hold time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	servers, stopZK, err := zkenv.Servers(ctx)
	if err != nil {
		return err
	}
	defer stopZK()

	eng, err := engine.Start(ctx, engine.Config{Servers: servers})
	if err != nil {
		return err
	}
	defer eng.Close()

	var (
		granted, released, failed atomic.Int64
		peak                      atomic.Int64
		done                      sync.WaitGroup
	)
	sample := func() {
		if n := int64(runtime.NumGoroutine()); n > peak.Load() {
			peak.Store(n)
		}
	}
	start := time.Now()
	before := eng.Stats()
	fmt.Printf("issuing %d acquisitions over %d paths from one goroutine\n", locks, paths)
	for i := range locks {
		done.Add(1)
		m := lock.NewMutex(eng, fmt.Sprintf("/examples/pipeline/shard-%03d", i%paths))
		m.Acquire(ctx).Then(func(lease *lock.Lease, err error) {
			if err != nil {
				failed.Add(1)
				done.Done()
				return
			}
			granted.Add(1)
			sample()
			// Hold without parking a goroutine: a timer releases.
			time.AfterFunc(hold, func() {
				lease.ReleaseAsync().Then(func(_ struct{}, err error) {
					if err != nil {
						failed.Add(1)
					} else {
						released.Add(1)
					}
					done.Done()
				})
			})
		})
	}
	sample()
	fmt.Printf("all %d issued in %v; goroutines now %d\n", locks, time.Since(start).Round(time.Millisecond), runtime.NumGoroutine())

	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-finished:
			waiting = false
		case <-tick.C:
			sample()
			fmt.Printf("  %6v granted %5d released %5d failed %d goroutines %d\n",
				time.Since(start).Round(time.Millisecond), granted.Load(), released.Load(), failed.Load(), runtime.NumGoroutine())
		}
	}
	elapsed := time.Since(start)
	st := eng.Stats()
	reqs := st.Requests() - before.Requests()
	fmt.Printf("done: %d granted, %d released, %d failed in %v (%.0f locks/s)\n",
		granted.Load(), released.Load(), failed.Load(), elapsed.Round(time.Millisecond), float64(granted.Load())/elapsed.Seconds())
	fmt.Printf("ZooKeeper requests: %d (%.2f per lock)\n", reqs, float64(reqs)/float64(locks))
	fmt.Printf("operations: creates %d, deletes %d (%d of them sent together in %d multi requests), lists %d, watches %d, parent creates %d\n",
		st.Creates-before.Creates, st.Deletes-before.Deletes, st.Batched-before.Batched, st.Multis-before.Multis,
		st.Lists-before.Lists, st.Watches-before.Watches, st.ParentCreates-before.ParentCreates)
	fmt.Printf("peak goroutines: %d\n", peak.Load())
	if failed.Load() > 0 {
		return fmt.Errorf("%d acquisitions or releases failed", failed.Load())
	}
	return nil
}
