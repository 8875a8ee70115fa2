package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// The recipes on lock cohorting (engine.CohortConfig): what passes among
// one engine's waiters, and what still queues on ZooKeeper.

// paced has no time bound on passes: these tests take their time between
// grants and releases.
var paced = engine.Config{Cohort: engine.CohortConfig{MaxHold: time.Hour}}

// Owners of a ReentrantMutex pass the lock: the other owner is granted the
// node when the first has released every count, with no request.
func TestReentrantMutexOwnersPassTheLock(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, paced)
	r := lock.NewReentrantMutex(eng, lockRoot(t)+"/re")
	la, err := r.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	other := r.Acquire(ctx, "b")
	before := eng.Stats()
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !pending(other) {
		t.Fatal("the other owner was granted while the first held a count")
	}
	if err := r.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	lb, err := other.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The listing that tells whether another client waits may have gone
	// out after before was read; nothing else may.
	if d := eng.Stats().Requests() - before.Requests(); d > 1 {
		t.Fatalf("%d requests to pass the lock between owners, want none but the one listing", d)
	}
	if lb.Node() != la.Node() || lb.Token() <= la.Token() || r.Count("b") != 1 {
		t.Fatalf("passed lease: node %s (was %s), token %d (was %d), count %d; want the same node, a greater token, count 1",
			lb.Node(), la.Node(), lb.Token(), la.Token(), r.Count("b"))
	}
	if err := r.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
}

// A semaphore's acquirers pass its guard mutex among themselves: each
// takes it in turn, in the order they asked, and never more than N hold a
// lease.
func TestSemaphoreGuardPasses(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, paced)
	conn := inspect(t, shared.Addr())
	p := lockRoot(t) + "/sem"
	s := newSemaphore(t, eng, p, 2)
	var held []*lock.Lease
	for range 2 {
		l, err := s.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	passes := eng.CohortStats().Passes
	futs := []*engine.Future[*lock.Lease]{s.Acquire(ctx), s.Acquire(ctx), s.Acquire(ctx)}
	for i, f := range futs {
		eventually(t, "an acquirer waits for a lease", func() bool { return len(leaseNodes(t, conn, p)) == 3 })
		for j, g := range futs[i:] {
			if !pending(g) {
				t.Fatalf("acquirer %d granted while every lease was held", i+j)
			}
		}
		if err := held[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held[1:], l)
		if n := len(leaseNodes(t, conn, p)); n > 3 {
			t.Fatalf("%d lease nodes, want at most the 2 held and one waiting", n)
		}
	}
	if got := eng.CohortStats().Passes - passes; got < 2 {
		t.Fatalf("the guard passed %d times among three acquirers queued together, want 2", got)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// leaseNodes are the lease nodes of the semaphore on p.
func leaseNodes(t *testing.T, conn *zk.Conn, p string) []string {
	t.Helper()
	children, _, err := conn.Children(p + "/leases")
	if err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
	return children
}
