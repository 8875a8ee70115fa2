package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Close racing passes, under real concurrency: one engine's workers pass a
// lock among themselves (paced, lingering, yielding) while another
// engine's worker takes it between, and the first engine closes at a
// random moment. Every worker returns (no Lock or Release hangs); once
// Close has returned, every lease whose holder had not begun to release it
// is lost; and the other engine is granted the lock after, with a greater
// token.
func TestCohortCloseDuringPasses(t *testing.T) {
	cfgs := []engine.Config{paced, lingering,
		{Cohort: engine.CohortConfig{MaxHold: time.Hour, YieldToOthers: true}}}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 6 {
		cfg := cfgs[round%len(cfgs)]
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		a := startEngine(t, cfg)
		b := startEngine(t, engine.Config{})
		p := fmt.Sprintf("%s/close%d", testRoot(t), round)
		var (
			mu       sync.Mutex
			held     = map[*engine.Lease]bool{} // a's leases whose holders have not begun to release
			last     int64                      // the greatest token granted on p
			failures []string
			first    sync.Once
		)
		granted := make(chan struct{}) // closed at a's first grant
		fail := func(format string, args ...any) {
			mu.Lock()
			failures = append(failures, fmt.Sprintf("round %d: ", round)+fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		var wg sync.WaitGroup
		ma := lock.NewMutex(a, p)
		for range 6 {
			wg.Go(func() {
				for {
					l, err := ma.Lock(ctx)
					if err != nil {
						if !errors.Is(err, engine.ErrClosed) {
							fail("a's Lock: %v, want ErrClosed", err)
						}
						return
					}
					mu.Lock()
					held[l] = true
					last = max(last, l.Token())
					mu.Unlock()
					first.Do(func() { close(granted) })
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
					mu.Lock()
					delete(held, l)
					mu.Unlock()
					if err := l.Release(ctx); err != nil && !errors.Is(err, engine.ErrLost) && !errors.Is(err, engine.ErrClosed) {
						fail("a's Release: %v", err)
					}
				}
			})
		}
		var stopB sync.WaitGroup
		doneB := make(chan struct{})
		stopB.Go(func() {
			mb := lock.NewMutex(b, p)
			for {
				select {
				case <-doneB:
					return
				case <-time.After(time.Duration(rand.IntN(10)) * time.Millisecond):
				}
				l, err := mb.Lock(ctx)
				if err != nil {
					fail("b's Lock: %v", err)
					return
				}
				mu.Lock()
				for la := range held {
					if la.Err() == nil {
						fail("b granted token %d while a's %d is open", l.Token(), la.Token())
					}
				}
				last = max(last, l.Token())
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					fail("b's Release: %v", err)
					return
				}
			}
		})
		<-granted // then passes, lingers, b's grants for a while
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		a.Close()
		mu.Lock()
		for l := range held {
			if l.Err() == nil {
				failures = append(failures, fmt.Sprintf("round %d: a's lease token %d open after Close returned", round, l.Token()))
			}
		}
		mu.Unlock()
		wg.Wait() // a's workers: a hang ends with ctx, as a failure
		close(doneB)
		stopB.Wait()
		l, err := lock.NewMutex(b, p).Lock(ctx)
		if err != nil {
			t.Fatalf("round %d: b after a closed: %v", round, err)
		}
		if l.Token() <= last {
			t.Fatalf("round %d: b's token %d after %d", round, l.Token(), last)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("round %d: timed out: a worker hung", round)
		}
		cancel()
		if len(failures) > 0 {
			t.Fatalf("%d failures; the first: %s", len(failures), failures[0])
		}
		t.Logf("round %d: a %+v", round, a.CohortStats())
	}
}
