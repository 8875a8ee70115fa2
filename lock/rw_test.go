package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// queued waits until eng has armed n more waits than before: the
// acquisitions asked for are queued behind someone.
func queued(t *testing.T, eng *engine.Engine, before engine.Stats, n uint64) {
	t.Helper()
	eventually(t, "acquisitions queued", func() bool { return waits(eng.Stats())-waits(before) >= n })
}

func pending(f *engine.Future[*lock.Lease]) bool {
	_, _, ok := f.Result()
	return !ok
}

func TestRWMutexReadersShareWritersExclude(t *testing.T) {
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	path := lockRoot(t) + "/rw"
	ctx := context.Background()

	// Two readers at once, from two sessions.
	r1, err := lock.NewRWMutex(a, path).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lock.NewRWMutex(b, path).Reader().Lock(ctx)
	if err != nil {
		t.Fatalf("a second reader beside a reader: %v", err)
	}
	r1.Release(ctx)
	r2.Release(ctx)

	// Many goroutines over two engines: a writer never overlaps anyone.
	var readers, writers atomic.Int32
	var violations, reads, writes atomic.Int32
	var wg sync.WaitGroup
	for g := range 12 {
		eng := a
		if g%2 == 1 {
			eng = b
		}
		rw := lock.NewRWMutex(eng, path)
		rng := rand.New(rand.NewPCG(uint64(g), 9))
		wg.Go(func() {
			for range 15 {
				if rng.IntN(3) == 0 {
					l, err := rw.Writer().Lock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if writers.Add(1) != 1 || readers.Load() != 0 {
						violations.Add(1)
					}
					writes.Add(1)
					time.Sleep(time.Millisecond)
					writers.Add(-1)
					l.Release(ctx)
				} else {
					l, err := rw.Reader().Lock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					readers.Add(1)
					if writers.Load() != 0 {
						violations.Add(1)
					}
					reads.Add(1)
					time.Sleep(time.Millisecond)
					readers.Add(-1)
					l.Release(ctx)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d reads, %d writes, %d violations", reads.Load(), writes.Load(), violations.Load())
	if violations.Load() != 0 {
		t.Fatalf("%d overlaps of a writer with another holder", violations.Load())
	}
}

// A reader that comes after a waiting writer waits for it: writers do not
// starve behind a stream of readers.
func TestRWMutexReaderQueuesBehindWaitingWriter(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	rw := lock.NewRWMutex(eng, lockRoot(t)+"/fair")
	ctx := context.Background()

	r1, err := rw.Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	w := lock.NewRWMutex(eng, rw.Path()).Writer().Acquire(ctx)
	queued(t, eng, before, 1)
	before = eng.Stats()
	r2 := lock.NewRWMutex(eng, rw.Path()).Reader().Acquire(ctx)
	queued(t, eng, before, 1)
	if !pending(r2) {
		t.Fatal("a reader was let in ahead of a waiting writer")
	}
	r1.Release(ctx)
	wl, err := w.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !pending(r2) {
		t.Fatal("a reader was let in beside the writer")
	}
	wl.Release(ctx)
	rl, err := r2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rl.Release(ctx)
}

func TestRWMutexDowngradeKeepsQueuedWriterOut(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	other := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	rw := lock.NewRWMutex(eng, root+"/down")
	ctx := context.Background()

	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := other.Stats()
	next := lock.NewRWMutex(other, rw.Path()).Writer().Acquire(ctx)
	queued(t, other, before, 1)

	r, err := rw.Downgrade(ctx, w).Wait(ctx)
	if err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	before = other.Stats()
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The queued writer wakes, looks, and must wait again: for the read node
	// that took the writer's place.
	queued(t, other, before, 1)
	if !pending(next) {
		t.Fatal("a queued writer got in while the downgraded read lease is held")
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	nl, err := next.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nl.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })

	if _, err := rw.Downgrade(ctx, w).Wait(ctx); !errors.Is(err, lock.ErrNotWriteLease) {
		t.Fatalf("downgrading a released lease: %v, want ErrNotWriteLease", err)
	}
}

func TestRWMutexNoUpgrade(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	rw := lock.NewRWMutex(eng, lockRoot(t)+"/up")
	ctx := context.Background()
	r, err := rw.Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Writer().Lock(ctx); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("write lock while this handle reads: %v, want ErrUpgrade", err)
	}
	if _, err := rw.Downgrade(ctx, r).Wait(ctx); !errors.Is(err, lock.ErrNotWriteLease) {
		t.Fatalf("downgrading a read lease: %v, want ErrNotWriteLease", err)
	}
	r.Release(ctx)
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatalf("write lock once the read lease is released: %v", err)
	}
	w.Release(ctx)
}

func TestRWMutexTryAndCancelLeaveNoNode(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	rw := lock.NewRWMutex(eng, root+"/try")
	ctx := context.Background()

	w, err := rw.Writer().TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := lock.NewRWMutex(eng, rw.Path())
	if _, err := other.Reader().TryAcquire(ctx); !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("try-read beside a writer: %v, want ErrWouldBlock", err)
	}
	if _, err := other.Writer().TryAcquire(ctx); !errors.Is(err, lock.ErrWouldBlock) {
		t.Fatalf("try-write beside a writer: %v, want ErrWouldBlock", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	before := eng.Stats()
	fr := other.Reader().Acquire(cctx)
	fw := other.Writer().Acquire(cctx)
	queued(t, eng, before, 2)
	cancel()
	if _, err := fr.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled reader: %v", err)
	}
	if _, err := fw.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled writer: %v", err)
	}
	eventually(t, "only the holder's node left", func() bool { return lockNodes(t, conn, root) == 1 })
	w.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestRWMutexReadLeaseLostOnExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/expire"
	r, err := lock.NewRWMutex(a, path).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostBeforeOthersGet(t, p, r, func() (*lock.Lease, error) { return lock.NewRWMutex(b, path).Writer().Lock(ctx) })
}
