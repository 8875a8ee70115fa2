package interop_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// turnstile's Semaphore and Curator's InterProcessSemaphoreV2 with the same
// N share one path: never more than N holders in all.
func TestTurnstileWithCuratorSemaphore(t *testing.T) {
	const leases = 2
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "semaphore", Leases: leases, Workers: 2, Iterations: 20, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		s, err := lock.NewSemaphore(eng, path, leases)
		if err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
			l, err := s.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}
	})
}

// InterProcessSemaphoreMutex is the same layout with one lease.
func TestTurnstileWithCuratorSemaphoreMutex(t *testing.T) {
	mixed(t, curatorStarter(t), interop.PeerConfig{
		Recipe: "semaphore-mutex", Workers: 2, Iterations: 15, Hold: 2 * time.Millisecond,
	}, func(eng *engine.Engine, path string) interop.Acquirer {
		s := lock.NewSemaphoreMutex(eng, path)
		return func(ctx context.Context, _ int, _ bool) (func(context.Context) error, error) {
			l, err := s.Lock(ctx)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}
	})
}

// A turnstile acquirer whose session expires while it holds the guard and
// waits for a lease must go back through the guard. Curator admits a lease
// node by count (at most N lease nodes), turnstile by position (among the
// first N): if turnstile queued a new lease node without the guard, after
// the lease node of a Curator acquirer that took the guard meanwhile, then
// with one lease and [curator, turnstile] left, each would wait for the
// other for ever. Both must hold in turn, never together.
func TestTurnstileSemaphoreExpiryBesideCurator(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	path := lockPath(t)
	guard, leases := path+"/locks", path+"/leases"
	w, err := interop.NewWitness(filepath.Join(t.TempDir(), "witness"))
	if err != nil {
		t.Fatal(err)
	}
	zc := inspect(t)
	var p netfault.Partition
	a := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	b := turnstileEngine(t)
	const workerA, workerB = 1, 2 // witness files of this process

	lb, err := lock.NewSemaphoreMutex(b, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.EnterSemaphore(workerB, 1); err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewSemaphoreMutex(a, path).Acquire(ctx)
	eventually(t, ctx, "a holds the guard and waits with a lease node", func() bool {
		return len(owners(t, zc, leases)) == 2
	})
	peer, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: zookeeper(t), Path: path, Recipe: "semaphore", Leases: 1, Workers: 1, Iterations: 1,
		Hold: 100 * time.Millisecond, Witness: w.Path, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Kill)
	eventually(t, ctx, "Curator queues on the guard", func() bool { return len(owners(t, zc, guard)) == 2 })

	old := a.SessionID()
	p.Cut()
	eventually(t, ctx, "a's session expired; Curator took the guard and waits with a lease node", func() bool {
		o := owners(t, zc, leases)
		return len(o) == 2 && !slices.Contains(o, old) && !slices.Contains(owners(t, zc, guard), old)
	})
	p.Heal()
	// a is back under a new session: queued on the guard behind Curator, or
	// (the fault) with a lease node behind Curator's.
	eventually(t, ctx, "a queues again under a new session", func() bool {
		return len(owners(t, zc, guard)) == 2 || len(owners(t, zc, leases)) == 3
	})
	t.Logf("after the expiry: guard owners %x, lease owners %x (a's old session %x)",
		owners(t, zc, guard), owners(t, zc, leases), old)
	if err := w.ExitSemaphore(workerB); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("turnstile acquirer after its session expired beside Curator: %v (guard owners %x, lease owners %x)",
			err, owners(t, zc, guard), owners(t, zc, leases))
	}
	if err := w.EnterSemaphore(workerA, 1); err != nil {
		t.Error(err)
	}
	if err := w.ExitSemaphore(workerA); err != nil {
		t.Error(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	results := waitAll(t, peer)
	checkAll(t, []*interop.Peer{peer}, results, 1)
	eventually(t, ctx, "no lease or guard node left", func() bool {
		return len(owners(t, zc, guard))+len(owners(t, zc, leases)) == 0
	})
}
