package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Multi-locks over the same paths, listed in opposite orders, from many
// goroutines on two engines: no deadlock, no overlap on any path.
func TestMultiLockNoDeadlockNoOverlap(t *testing.T) {
	a := startEngine(t, engine.Config{})
	b := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	paths := []string{root + "/x", root + "/y", root + "/z"}
	ctx := context.Background()
	var held [3]atomic.Int32
	var violations atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		eng := a
		order := slices.Clone(paths)
		if g%2 == 1 {
			eng = b
			slices.Reverse(order)
		}
		var parts []lock.Acquirer
		for _, p := range order {
			parts = append(parts, lock.NewMutex(eng, p))
		}
		m, err := lock.NewMultiLock(parts...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range 8 {
				ml, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range held {
					if held[i].Add(1) != 1 {
						violations.Add(1)
					}
				}
				time.Sleep(time.Millisecond)
				for i := range held {
					held[i].Add(-1)
				}
				if err := ml.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if violations.Load() != 0 {
		t.Fatalf("%d overlaps", violations.Load())
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestMultiLockAllOrNone(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	other := startEngine(t, engine.Config{})
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	ctx := context.Background()

	busy, err := lock.NewMutex(other, root+"/b").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sem, err := lock.NewSemaphore(eng, root+"/c", 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := lock.NewMultiLock(sem, lock.NewMutex(eng, root+"/b"), lock.NewRWMutex(eng, root+"/a").Writer())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Paths(); !slices.Equal(got, []string{root + "/a", root + "/b", root + "/c"}) {
		t.Fatalf("acquisition order %v, want sorted by path", got)
	}
	if _, err := m.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("try with one part busy: %v, want ErrWouldBlock", err)
	}
	eventually(t, "only the other holder's node", func() bool { return lockNodes(t, conn, root) == 1 })

	// Cancel while the first part is held and the second is awaited.
	cctx, cancel := context.WithCancel(ctx)
	before := eng.Stats()
	f := m.Acquire(cctx)
	eventually(t, "waiting for the busy part", func() bool { return eng.Stats().Watches > before.Watches })
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled multi-lock: %v, want context.Canceled", err)
	}
	eventually(t, "what was taken is given back", func() bool { return lockNodes(t, conn, root) == 1 })

	busy.Release(ctx)
	ml, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ml.Leases()); n != 3 {
		t.Fatalf("%d leases, want 3", n)
	}
	select {
	case <-ml.Lost():
		t.Fatal("lost at once")
	default:
	}
	if err := ml.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ml.Release(ctx); !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld for the parts", err)
	}
	eventually(t, "no lock node left", func() bool { return lockNodes(t, conn, root) == 0 })
}

func TestMultiLockRejectsBadInput(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	var nilMutex *lock.Mutex
	for name, parts := range map[string][]lock.Acquirer{
		"none":      nil,
		"nil":       {nilMutex},
		"same path": {lock.NewMutex(eng, root+"/p"), lock.NewRWMutex(eng, root+"/p").Reader()},
	} {
		if _, err := lock.NewMultiLock(parts...); !errors.Is(err, lock.ErrMultiLock) {
			t.Errorf("%s: %v, want ErrMultiLock", name, err)
		}
	}
}

func TestMultiLeaseLostOnExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, p := expiring(t)
	root := lockRoot(t)
	m, err := lock.NewMultiLock(lock.NewMutex(a, root+"/m1"), lock.NewMutex(a, root+"/m2"))
	if err != nil {
		t.Fatal(err)
	}
	ml, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := ml.Lost()
	lostBeforeOthersGet(t, p, ml.Leases()[1], func() (*lock.Lease, error) { return lock.NewMutex(b, root+"/m2").Lock(ctx) })
	waitClosed(t, "the multi-lease's Lost follows its part's", lost)
	if err := ml.Release(ctx); !errors.Is(err, engine.ErrLost) {
		t.Fatalf("release of a lost multi-lease: %v, want ErrLost", err)
	}
}

// A MultiLease whose parts are released one by one through Leases, not by
// its Release, leaves no goroutine behind: the watch behind Lost ends with
// the last part. Its Lost stays open, as no part was lost.
func TestMultiLeasePartsReleasedOneByOneLeakNothing(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, engine.Config{})
	root := lockRoot(t)
	m, err := lock.NewMultiLock(lock.NewMutex(eng, root+"/p1"), lock.NewMutex(eng, root+"/p2"))
	if err != nil {
		t.Fatal(err)
	}
	ml, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := goleak.IgnoreCurrent()
	lost := ml.Lost()
	for _, l := range ml.Leases() {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("after each part was released: %v", err)
	}
	select {
	case <-lost:
		t.Error("Lost closed, though no part was lost")
	default:
	}
}
