package lock_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Goroutines of one engine that contend for one mutex pass it among
// themselves, first come first served, without a ZooKeeper request per
// handoff (lock cohorting, the default): one node is granted, and the lock
// passes from holder to holder until a bound or another client waits. Every
// pass has a fencing token above the one before.
func ExampleMutex_cohorting() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	m := lock.NewMutex(eng, "/examples/mutex-hot")
	var (
		wg      sync.WaitGroup
		holding int // touched only under the lock
		overlap bool
		last    int64
		ordered = true
	)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				l, err := m.Lock(ctx)
				if err != nil {
					fmt.Println(err)
					return
				}
				holding++
				overlap = overlap || holding > 1
				ordered = ordered && l.Token() > last
				last = l.Token()
				holding--
				if err := l.Release(ctx); err != nil {
					fmt.Println(err)
				}
			}
		})
	}
	wg.Wait()
	s := eng.CohortStats()
	fmt.Println("two holders at once:", overlap)
	fmt.Println("tokens rose with every grant:", ordered)
	fmt.Println("fewer nodes than grants:", s.Carriers < 400)
	fmt.Println("passed without a request:", s.Passes > 0)
	// Output:
	// two holders at once: false
	// tokens rose with every grant: true
	// fewer nodes than grants: true
	// passed without a request: true
}

// WithStrictFIFO has every acquisition queue a node of its own, in one
// order across every client, as Curator's and kazoo's locks do: no lock
// passes inside the engine.
func ExampleWithStrictFIFO() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	m := lock.NewMutex(eng, "/examples/mutex-fifo", lock.WithStrictFIFO())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				l, err := m.Lock(ctx)
				if err != nil {
					fmt.Println(err)
					return
				}
				if err := l.Release(ctx); err != nil {
					fmt.Println(err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("passes:", eng.CohortStats().Passes)
	// Output:
	// passes: 0
}
