package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Passes racing the watchdog's lapses, under real concurrency (the
// simulator runs a release and a lapse one after the other, never at
// once): one engine's workers pass a lock among themselves while its trust
// is ended again and again, and another engine's worker takes the lock
// between. Whenever either is granted, every lease of the other that its
// holder has not yet begun to release is lost; and once a lapse has
// returned, every lease passed on a lost node is lost too.
func TestCohortPassesRacingLapses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := startEngine(t, engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Hour}})
	b := startEngine(t, engine.Config{})
	p := testRoot(t) + "/hot"

	var (
		mu       sync.Mutex
		heldA    = map[*engine.Lease]*engine.Lease{} // a's leases held, with their carriers (nil: none)
		heldB    *engine.Lease
		failures []string
	)
	fail := func(format string, args ...any) {
		failures = append(failures, fmt.Sprintf(format, args...))
		cancel()
	}
	const lapses, grantsB = 60, 50
	var done atomic.Bool
	var wg sync.WaitGroup
	ma := lock.NewMutex(a, p)
	for range 6 {
		wg.Go(func() {
			for !done.Load() {
				l, err := ma.Lock(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				if heldB != nil && heldB.Err() == nil {
					fail("a's %s (token %d) granted while b holds token %d", l.Node(), l.Token(), heldB.Token())
				}
				heldA[l] = l.Carrier() // read while l holds its node
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				mu.Lock()
				delete(heldA, l)
				mu.Unlock()
				l.Release(ctx) // lost or not: the loss is judged above
			}
		})
	}
	wg.Go(func() {
		mb := lock.NewMutex(b, p)
		for i := 0; i < grantsB && !done.Load(); i++ {
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // let a pass between
			l, err := mb.Lock(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			for la := range heldA {
				if la.Err() == nil {
					fail("b granted token %d while a's lease %s (token %d) is open", l.Token(), la.Node(), la.Token())
				}
			}
			heldB = l
			mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			mu.Lock()
			heldB = nil
			mu.Unlock()
			l.Release(ctx)
		}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	caught := 0 // lapses that found a passed lease held on the node they lost
	for range lapses {
		time.Sleep(time.Duration(20+rng.IntN(30)) * time.Millisecond)
		a.LapseTrust()
		mu.Lock()
		for la, carrier := range heldA {
			if carrier != nil && carrier.Err() != nil {
				caught++
				if la.Err() == nil {
					fail("after a lapse, a's passed lease %s (token %d) is open on a lost node", la.Node(), la.Token())
				}
			}
		}
		mu.Unlock()
		if ctx.Err() != nil {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures; the first: %s", len(failures), failures[0])
	}
	s := a.CohortStats()
	t.Logf("a: %+v; %d passed leases held at a lapse", s, caught)
	if s.Passes == 0 {
		t.Fatal("no pass: the test raced nothing")
	}
}
