package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A multi refused as a whole is sent again op by op: within MaxInFlight,
// and in the order the ops were issued, so the creates of one lock path
// keep their order in the queue.
func TestRefusedBatchKeepsOrderAndInFlightBound(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	tap := newWireTap()
	gate := newLoopGate(root + "/gate")
	const maxInFlight = 2
	eng := startEngine(t, engine.Config{MaxInFlight: maxInFlight, Dialer: tap.dial, Observer: gate.observe})
	raw := rawConn(t)
	mkdirs(t, raw, root+"/p")

	gateF := gate.hold(t, func() *engine.Future[*engine.Lease] { return lock.NewMutex(eng, root+"/gate").Acquire(ctx) })
	before := eng.Stats()
	// Queued in one turn, so sent as one multi: a create under a path that
	// does not exist yet, which the server refuses and with it the whole
	// multi, then the creates of waiters on one path, in order.
	missing := lock.NewMutex(eng, root+"/missing/q").Acquire(ctx)
	const n = 20
	var (
		mu      sync.Mutex
		granted []int
		wg      sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		lock.NewMutex(eng, root+"/p").Acquire(ctx).Then(func(l *engine.Lease, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			granted = append(granted, i)
			mu.Unlock()
			l.Release(ctx) // the next in the queue is granted after this
		})
	}
	gate.release()
	wg.Wait()
	if l, err := missing.Wait(ctx); err != nil {
		t.Errorf("acquisition under a missing path: %v", err)
	} else {
		l.Release(ctx)
	}
	if l, err := gateF.Wait(ctx); err == nil {
		l.Release(ctx)
	}

	after := eng.Stats()
	t.Logf("grant order %v; at most %d requests outstanding; %d multis, %d creates",
		granted, tap.most(), after.Multis-before.Multis, after.Creates-before.Creates)
	if after.Multis == before.Multis {
		t.Fatal("no multi was sent: the test did not exercise a refused batch")
	}
	if want := seq(n); !slices.Equal(granted, want) {
		t.Errorf("waiters granted in order %v, want the order they were issued in", granted)
	}
	if got := tap.most(); got > maxInFlight {
		t.Errorf("%d requests outstanding at once, MaxInFlight is %d", got, maxInFlight)
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
