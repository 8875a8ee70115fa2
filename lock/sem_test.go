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
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

func newSemaphore(t *testing.T, eng *engine.Engine, path string, n int) *lock.Semaphore {
	t.Helper()
	s, err := lock.NewSemaphore(eng, path, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSemaphoreNeverExceedsN(t *testing.T) {
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	const n = 3
	var holders, peak, violations atomic.Int32
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := range 10 {
		eng := a
		if g%2 == 1 {
			eng = b
		}
		s := newSemaphore(t, eng, root+"/sem", n)
		wg.Go(func() {
			for range 10 {
				l, err := s.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				h := holders.Add(1)
				if h > n {
					violations.Add(1)
				}
				for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
				}
				time.Sleep(3 * time.Millisecond)
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("peak %d holders of %d leases, %d violations", peak.Load(), n, violations.Load())
	if violations.Load() != 0 {
		t.Fatalf("more than %d holders at once, %d times", n, violations.Load())
	}
	if peak.Load() < 2 {
		t.Fatalf("peak %d holders: the leases were never shared", peak.Load())
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

// A waiter gets a lease when any holder lets go, not only the oldest.
func TestSemaphoreAnyReleaseAdmitsTheWaiter(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	s := newSemaphore(t, eng, lockRoot(t)+"/any", 2)
	ctx := context.Background()
	first, err := s.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := eng.Stats()
	waiting := s.Acquire(ctx)
	queued(t, eng, before, 1)
	if !pending(waiting) {
		t.Fatal("a third lease of two was granted")
	}
	if err := second.Release(ctx); err != nil { // the newer holder
		t.Fatal(err)
	}
	third, err := waiting.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Release(ctx)
	third.Release(ctx)
}

func TestSemaphoreTryCancelAndBadInput(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	ctx := context.Background()
	if _, err := lock.NewSemaphore(eng, root+"/bad", 0); !errors.Is(err, lock.ErrInvalidLeases) {
		t.Fatalf("zero leases: %v, want ErrInvalidLeases", err)
	}
	if _, err := lock.NewSemaphoreMutex(eng, "no/slash").Lock(ctx); !errors.Is(err, engine.ErrInvalidPath) {
		t.Fatalf("relative path: %v, want ErrInvalidPath", err)
	}

	s := lock.NewSemaphoreMutex(eng, root+"/one")
	held, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("try with no lease free: %v, want ErrWouldBlock", err)
	}
	eventually(t, "only the holder's lease node", func() bool { return lockNodes(t, conn, root) == 1 })

	// Cancel waiters at random moments: queued on the mutex, or holding it
	// and waiting for a lease.
	rng := rand.New(rand.NewPCG(3, 4))
	var fs []*engine.Future[*lock.Lease]
	var cancels []context.CancelFunc
	for range 20 {
		cctx, cancel := context.WithCancel(ctx)
		fs = append(fs, s.Acquire(cctx))
		cancels = append(cancels, cancel)
	}
	for _, cancel := range cancels {
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		cancel()
	}
	for _, f := range fs {
		if l, err := f.Wait(ctx); err == nil {
			t.Errorf("granted a lease while the only one is held: %v", l.Node())
		} else if !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}
	eventually(t, "only the holder's lease node", func() bool { return lockNodes(t, conn, root) == 1 })
	held.Release(ctx)
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestSemaphoreLeaseLostOnExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	path := lockRoot(t) + "/expire"
	la, err := lock.NewSemaphoreMutex(a, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lostBeforeOthersGet(t, p, la, func() (*lock.Lease, error) { return lock.NewSemaphoreMutex(b, path).Lock(ctx) })
}

// Acquirers queue fairly on the semaphore's mutex: with every lease taken,
// waiters are granted in the order they asked. (Each on a mutex node of
// its own, with lock cohorting off: see TestSemaphoreGuardPasses.)
func TestSemaphoreServesWaitersInOrder(t *testing.T) {
	eng := startEngine(t, strictFIFO)
	s := newSemaphore(t, eng, lockRoot(t)+"/order", 1)
	ctx := context.Background()
	held, err := s.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	order := make(chan int, n)
	var fs []*engine.Future[*lock.Lease]
	for i := range n {
		before := eng.Stats()
		f := s.Acquire(ctx)
		queued(t, eng, before, 1) // each queued before the next asks
		fs = append(fs, f)
		f.Then(func(l *lock.Lease, err error) {
			if err != nil {
				t.Error(err)
				order <- -1
				return
			}
			order <- i
			l.Release(ctx)
		})
	}
	held.Release(ctx)
	for want := range n {
		if got := <-order; got != want {
			t.Fatalf("waiter %d granted in place %d", got, want)
		}
	}
}

// A waiter whose session expires while it holds the guard and waits for a
// lease comes back through the guard: when it waits for a lease again, it
// holds the guard under its new session. A lease node queued without the
// guard can sit behind one a Curator acquirer made under the guard
// meanwhile, and then neither is ever admitted (see interop).
func TestSemaphoreWaiterComesBackThroughTheGuardAfterExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/sem"
	held, err := lock.NewSemaphoreMutex(b, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewSemaphoreMutex(a, path).Acquire(ctx)
	eventually(t, "a waits with a lease node", func() bool { return lockNodes(t, conn, path+"/leases") == 2 })
	old := a.SessionID()
	p.Cut()
	eventually(t, "a's nodes removed by the expiry", func() bool { return lockNodes(t, conn, path) == 1 })
	p.Heal()
	eventually(t, "a waits again with a lease node under a new session", func() bool {
		return a.SessionID() != old && lockNodes(t, conn, path+"/leases") == 2
	})
	if n := lockNodes(t, conn, path+"/locks"); n != 1 {
		t.Fatalf("a waits for a lease again with %d guard node(s), want it holding the guard", n)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("waiter after expiry: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, path) == 0 })
}

// A waiter whose guard is lost before its lease is granted, while its
// session lapses and comes back without expiring, comes back through the
// guard too: it never queues a lease node without holding the guard. Its
// lease node goes when the guard goes, and it waits again under a guard of
// its own. (The simulator found it: a lease node made after its guard's
// node was deleted, beside the lease node of the next guard holder, both
// granted on the same listing's token.)
//
// The waiter's connection is cut the moment it is granted the guard, so
// its lease node cannot be made before the guard is lost; it is healed
// once the guard is lost, long before the server could expire the session
// (lost 1s after the server last heard from it, expired after 6s).
func TestSemaphoreWaiterComesBackThroughTheGuardAfterALapse(t *testing.T) {
	ctx := context.Background()
	var p netfault.Partition
	path := lockRoot(t) + "/sem"
	guards := path + "/locks"
	var firstGuard atomic.Value // the guard node the waiter was first granted
	guardLost := make(chan struct{})
	var cut, lost sync.Once
	a := startEngine(t, engine.Config{SessionTimeout: 6 * time.Second, LostMargin: 5 * time.Second, Dialer: p.Dial,
		Observer: func(r events.Report) {
			switch {
			case r.Kind == events.Granted && r.Path == guards:
				cut.Do(func() {
					firstGuard.Store(r.Node)
					p.Cut()
				})
			case r.Kind == events.Lost && r.Path == guards:
				lost.Do(func() { close(guardLost) })
			}
		}})
	b := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	held, err := lock.NewSemaphoreMutex(b, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := a.SessionID()
	waiting := lock.NewSemaphoreMutex(a, path).Acquire(ctx)
	select {
	case <-guardLost:
	case <-time.After(time.Minute):
		t.Fatal("the waiter's guard was never lost")
	}
	p.Heal()
	eventually(t, "a waits with a lease node, holding a guard granted after the lost one", func() bool {
		guard, _, err := conn.Children(guards)
		if err != nil || len(guard) != 1 || guard[0] == firstGuard.Load() {
			return false
		}
		return lockNodes(t, conn, path+"/leases") == 2
	})
	if a.SessionID() != old {
		t.Logf("the session expired after all (a slow machine): the expiry's path was taken, not the lapse's")
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("waiter after the lapse: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, path) == 0 })
}

// With Config.FailOnExpiry, a semaphore waiter fails with engine.ErrSessionExpired
// instead, and leaves no node.
func TestSemaphoreWaiterFailsOnExpiryWhenAsked(t *testing.T) {
	ctx := context.Background()
	var p netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial, FailOnExpiry: true})
	b := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	path := lockRoot(t) + "/sem"
	held, err := lock.NewSemaphoreMutex(b, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	waiting := lock.NewSemaphoreMutex(a, path).Acquire(ctx)
	eventually(t, "a waits with a lease node", func() bool { return lockNodes(t, conn, path+"/leases") == 2 })
	p.Cut()
	eventually(t, "a's nodes removed by the expiry", func() bool { return lockNodes(t, conn, path) == 1 })
	p.Heal()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := waiting.Wait(wctx); !errors.Is(err, engine.ErrSessionExpired) {
		t.Fatalf("waiter: %v, want ErrSessionExpired", err)
	}
	if n := lockNodes(t, conn, path); n != 1 {
		t.Fatalf("%d lock nodes after the failed waiter, want only the holder's", n)
	}
}
