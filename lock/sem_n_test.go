package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// guardFree waits until no one holds or waits for the semaphore's mutex:
// an acquirer gives its mutex back as its leases are granted, without
// waiting for the delete, so a try from elsewhere right after may find it.
func guardFree(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	eventually(t, "the semaphore's mutex free", func() bool {
		kids, _, err := conn.Children(path + "/locks")
		return errors.Is(err, zk.ErrNoNode) || err == nil && len(kids) == 0
	})
}

// leaseCount counts the lease nodes of the semaphore at path.
func leaseCount(t *testing.T, conn *zk.Conn, path string) int {
	t.Helper()
	return len(leaseNodes(t, conn, path))
}

// bounded is a context for a test that must not hang: a deadlock fails
// the test with its reason instead of stalling the run.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func resolved[T any](f *engine.Future[T]) bool {
	_, ok, _ := f.Result()
	return ok
}

// AcquireN takes n leases together, and only when there is room for all:
// while it waits it holds none, and it is granted all once enough are
// given back. A bad count fails at once.
func TestSemaphoreAcquireN(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	var leaseGrants atomic.Int32 // b's lease nodes granted
	b := startEngine(t, engine.Config{Observer: func(r events.Report) {
		if n, ok := queue.Parse(r.Node); r.Kind == events.Granted && ok && n.Kind == queue.KindLease {
			leaseGrants.Add(1)
		}
	}})
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/sem"
	sa, sb := newSemaphore(t, a, path, 3), newSemaphore(t, b, path, 3)

	two, err := sa.AcquireN(ctx, 2).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(two.Leases()); got != 2 || leaseCount(t, conn, path) != 2 {
		t.Fatalf("AcquireN(2): %d leases, %d lease nodes", got, leaseCount(t, conn, path))
	}
	guardFree(t, conn, path)
	third, err := sb.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the third lease: %v", err)
	}
	if _, err := sb.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("a fourth lease: %v, want ErrWouldBlock", err)
	}

	// Three at once while three are held: it waits, holding nothing but
	// its first node, and takes all three once every lease is back.
	all := sb.AcquireN(ctx, 3)
	eventually(t, "the waiter's first node", func() bool { return leaseCount(t, conn, path) == 4 })
	eventually(t, "the third lease's grant reported", func() bool { return leaseGrants.Load() == 1 })
	lists := b.Stats().Lists
	if err := third.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The waiter's watch fires and it lists the leases again: with one
	// lease free, its first node must not be granted.
	eventually(t, "the waiter looked again", func() bool { return b.Stats().Lists > lists })
	if resolved(all) || leaseGrants.Load() != 1 || leaseCount(t, conn, path) != 3 {
		t.Fatalf("AcquireN(3) with one lease free: resolved %v, %d lease grants, %d lease nodes (want unresolved, 1: the third's, 3: two held and its first)",
			resolved(all), leaseGrants.Load(), leaseCount(t, conn, path))
	}
	if err := two.Release(ctx); err != nil {
		t.Fatal(err)
	}
	three, err := all.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[int64]bool{}
	for _, l := range three.Leases() {
		if !l.Held() {
			t.Error("a lease of AcquireN(3) is not held")
		}
		tokens[l.Token()] = true
	}
	if len(three.Leases()) != 3 || len(tokens) != 3 || leaseCount(t, conn, path) != 3 {
		t.Fatalf("AcquireN(3): %d leases, %d tokens, %d lease nodes", len(three.Leases()), len(tokens), leaseCount(t, conn, path))
	}
	if err := three.Release(ctx); err != nil {
		t.Fatal(err)
	}

	for _, n := range []int{0, -1, 4} {
		if _, err := sa.AcquireN(ctx, n).Wait(ctx); !errors.Is(err, lock.ErrInvalidLeases) {
			t.Errorf("AcquireN(%d) of 3: %v, want ErrInvalidLeases", n, err)
		}
	}
	if _, err := (*lock.Semaphore)(nil).AcquireN(ctx, 1).Wait(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("AcquireN on a nil Semaphore: %v", err)
	}
}

// Acquirers that each want more than half the leases never each hold some
// and wait for the rest: they are served one after another. Holders never
// exceed N. (Failing first: with AcquireN as n acquisitions one after
// another, the second pair deadlocked here, each acquirer holding one
// lease and waiting for another.)
func TestSemaphoreAcquireNNoDeadlock(t *testing.T) {
	ctx := bounded(t)
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	path := lockRoot(t) + "/sem"
	const n, rounds = 2, 5
	var holders, violations atomic.Int32
	var wg sync.WaitGroup
	for _, eng := range []*engine.Engine{a, b, a, b} {
		s := newSemaphore(t, eng, path, n)
		wg.Go(func() {
			for range rounds {
				ml, err := s.AcquireN(ctx, n).Wait(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if holders.Add(n) > n {
					violations.Add(1)
				}
				holders.Add(-n)
				if err := ml.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v := violations.Load(); v > 0 {
		t.Errorf("more than %d leases held at once, %d times", n, v)
	}
}

// Cancelling a waiting AcquireN leaves no lease node and frees the
// semaphore's mutex for the next acquirer.
func TestSemaphoreAcquireNCancelled(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/sem"
	s := newSemaphore(t, eng, path, 2)
	held, err := s.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	waiting := s.AcquireN(wctx, 2)
	eventually(t, "the waiter's first node", func() bool { return leaseCount(t, conn, path) == 2 })
	cancel()
	if _, err := waiting.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled AcquireN: %v", err)
	}
	eventually(t, "the waiter's node gone", func() bool { return leaseCount(t, conn, path) == 1 })
	guardFree(t, conn, path)
	l, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("a lease after the cancelled AcquireN: %v", err)
	}
	for _, l := range []*lock.Lease{l, held} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
