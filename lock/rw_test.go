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

// queued waits until eng has armed n more waits than before, or holds
// acquisitions queued in its cohorts (which arm none): the acquisitions
// asked for are queued behind someone.
func queued(t *testing.T, eng *engine.Engine, before engine.Stats, n uint64) {
	t.Helper()
	eventually(t, "acquisitions queued", func() bool {
		return waits(eng.Stats())-waits(before)+uint64(max(eng.CohortStats().Waiting, 0)) >= n
	})
}

func pending(f *engine.Future[*lock.Lease]) bool {
	_, ok, _ := f.Result()
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
	if _, err := other.Reader().TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("try-read beside a writer: %v, want ErrWouldBlock", err)
	}
	if _, err := other.Writer().TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
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

// Checks of RWMutex beyond rw_test.go: every reader holds at once, a
// cancelled writer lets the readers behind it in, a downgrade admits the
// readers queued behind the writer but no writer, and the no-upgrade rule
// is per handle, immediate on every entry point, and ends with the read
// lease (released or lost).

// Readers share: six readers over two sessions all hold at the same time.
func TestRWMutexAllReadersHoldAtOnce(t *testing.T) {
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	path := lockRoot(t) + "/many"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const n = 6
	var held sync.WaitGroup // every reader holds
	held.Add(n)
	all := make(chan struct{}) // closed once all held together
	var wg sync.WaitGroup
	for i := range n {
		eng := a
		if i%2 == 1 {
			eng = b
		}
		wg.Go(func() {
			l, err := lock.NewRWMutex(eng, path).Reader().Lock(ctx)
			if err != nil {
				t.Error(err)
				held.Done()
				return
			}
			held.Done()
			// Keep holding until every other reader holds too: if readers
			// excluded each other, this would never end (ctx bounds it).
			select {
			case <-all:
			case <-ctx.Done():
				t.Error("readers never held together")
			}
			l.Release(context.Background())
		})
	}
	held.Wait()
	close(all)
	wg.Wait()
}

// A waiting writer that gives up lets the readers queued behind it in at
// once, beside the reader ahead: nothing stays stuck on the writer's node.
func TestRWMutexCancelledWriterLetsReadersIn(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	path := root + "/cancel"
	ctx := context.Background()

	r1, err := lock.NewRWMutex(eng, path).Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	before := eng.Stats()
	w := lock.NewRWMutex(eng, path).Writer().Acquire(wctx)
	queued(t, eng, before, 1)
	before = eng.Stats()
	r2 := lock.NewRWMutex(eng, path).Reader().Acquire(ctx)
	queued(t, eng, before, 1)

	cancel()
	if _, err := w.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled writer: %v", err)
	}
	l2, err := r2.Wait(ctx)
	if err != nil {
		t.Fatalf("reader behind the cancelled writer: %v", err)
	}
	if !r1.Held() || !l2.Held() {
		t.Fatal("both readers should hold")
	}
	if n := lockNodes(t, conn, root); n != 2 {
		t.Fatalf("%d nodes with two readers holding, want 2 (the writer's is gone)", n)
	}
	r1.Release(ctx)
	l2.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// Writer W1 holds; reader R2 and writer W3 queue behind it. W1 downgrades
// and lets go: R2 now reads beside the downgraded reader, W3 still waits
// for both.
func TestRWMutexDowngradeAdmitsReadersNotWriters(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	other := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	rw := lock.NewRWMutex(eng, root+"/down")
	ctx := context.Background()

	w1, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := other.Stats()
	r2 := lock.NewRWMutex(other, rw.Path()).Reader().Acquire(ctx)
	queued(t, other, before, 1)
	before = other.Stats()
	w3 := lock.NewRWMutex(other, rw.Path()).Writer().Acquire(ctx)
	queued(t, other, before, 1)

	r1, err := rw.Downgrade(ctx, w1).Wait(ctx)
	if err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	if err := w1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := r2.Wait(ctx)
	if err != nil {
		t.Fatalf("reader queued behind the downgraded writer: %v", err)
	}
	if !pending(w3) {
		t.Fatal("a queued writer got in beside readers")
	}
	before = other.Stats()
	l2.Release(ctx)
	// W3 looks again and must go on waiting, for the downgraded reader.
	queued(t, other, before, 1)
	if !pending(w3) {
		t.Fatal("a queued writer got in while the downgraded read lease is held")
	}
	r1.Release(ctx)
	l3, err := w3.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l3.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// Downgrade refuses, at once and without a request, anything but a held
// write lease of its own path.
func TestRWMutexDowngradeRejectsOtherLeases(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	rw := lock.NewRWMutex(eng, root+"/a")
	ctx := context.Background()

	elsewhere, err := lock.NewRWMutex(eng, root+"/b").Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Release(ctx)
	mutexLease, err := lock.NewMutex(eng, root+"/c").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer mutexLease.Release(ctx)

	before := eng.Stats().Requests()
	for name, l := range map[string]*lock.Lease{
		"nil":                     nil,
		"write lease, other path": elsewhere,
		"mutex lease":             mutexLease,
	} {
		f := rw.Downgrade(ctx, l)
		_, done, err := f.Result()
		if !done {
			t.Fatalf("%s: Downgrade did not resolve at once", name)
		}
		if !errors.Is(err, lock.ErrNotWriteLease) {
			t.Fatalf("%s: %v, want ErrNotWriteLease", name, err)
		}
	}
	if n := eng.Stats().Requests() - before; n != 0 {
		t.Fatalf("refused downgrades sent %d requests", n)
	}
}

// The no-upgrade rule: while a handle holds a read lease, its Writer fails
// at once on every entry point, with no request and no node. Another handle
// on the same path is another owner and queues as usual. A read lease taken
// by Downgrade counts too.
func TestRWMutexUpgradeRefusedAtOncePerHandle(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	rw := lock.NewRWMutex(eng, root+"/up")
	ctx := context.Background()

	r, err := rw.Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats().Requests()
	f := rw.Writer().Acquire(ctx)
	if _, done, err := f.Result(); !done || !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("Acquire: resolved=%v err=%v, want ErrUpgrade at once", done, err)
	}
	if _, err := rw.Writer().TryAcquire(ctx); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("TryAcquire: %v, want ErrUpgrade", err)
	}
	if _, err := rw.Writer().Lock(ctx); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("Lock: %v, want ErrUpgrade", err)
	}
	if n := eng.Stats().Requests() - before; n != 0 {
		t.Fatalf("refused upgrades sent %d requests", n)
	}
	if n := lockNodes(t, conn, root); n != 1 {
		t.Fatalf("%d nodes, want only the reader's", n)
	}

	// Another owner of the same lock is not refused: it would wait.
	if _, err := rw.Owner().Writer().TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("another handle's try-write beside a reader: %v, want ErrWouldBlock", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A downgraded read lease holds the handle's writer back just the same.
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatalf("write lock once the read lease is released: %v", err)
	}
	down, err := rw.Downgrade(ctx, w).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
	if _, err := rw.Writer().TryAcquire(ctx); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("write after a downgrade, read lease held: %v, want ErrUpgrade", err)
	}
	down.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// A read lease lost with its session no longer holds the handle's writer
// back: once the engine has a new session, the handle may write.
func TestRWMutexUpgradeRuleEndsWithLostReadLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/lost"
	rw := lock.NewRWMutex(a, path)
	r, err := rw.Reader().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostBeforeOthersGet(t, p, r, func() (*lock.Lease, error) { return lock.NewRWMutex(b, path).Writer().Lock(ctx) })
	if r.Held() || !errors.Is(r.Err(), engine.ErrLost) {
		t.Fatalf("lost read lease: held=%v err=%v", r.Held(), r.Err())
	}
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatalf("write lock after the read lease was lost: %v, want a grant", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of the lost read lease: %v, want ErrLost", err)
	}
}
