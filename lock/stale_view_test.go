package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// TestTryAcquireAfterAnotherClientLeft: an engine that cycles on a lock
// path pins it and decides its creates on what it knows of the path, with
// no listing (the engine's listing-free cycle). Another client's node,
// seen by a try that it rightly kept out, is then part of what the engine
// knows; that client's delete does not move the path's count of creates,
// so the next create still meets the prediction. Once the other client's
// delete is acknowledged, no node is in the way: the very next try must be
// granted, for every recipe whose try is built on a pinnable path.
func TestTryAcquireAfterAnotherClientLeft(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// setup returns a cycle (an acquisition and its release), a try,
		// and the path and kind of the node another client holds to keep
		// the try out.
		setup func(e *engine.Engine, path string) (cycle func() error, try func() (*lock.Lease, error), on string, k queue.Kind)
	}{
		{"mutex", func(e *engine.Engine, path string) (func() error, func() (*lock.Lease, error), string, queue.Kind) {
			m := lock.NewMutex(e, path)
			return func() error { return lockRelease(ctx, m.Lock) },
				func() (*lock.Lease, error) { return m.TryAcquire(ctx) }, path, queue.KindMutex
		}},
		{"reentrant", func(e *engine.Engine, path string) (func() error, func() (*lock.Lease, error), string, queue.Kind) {
			r := lock.NewReentrantMutex(e, path)
			owner := "owner"
			return func() error {
					if _, err := r.Lock(ctx, owner); err != nil {
						return err
					}
					return r.Release(ctx, owner)
				},
				func() (*lock.Lease, error) { return r.TryAcquire(ctx, owner) }, path, queue.KindMutex
		}},
		{"writer", func(e *engine.Engine, path string) (func() error, func() (*lock.Lease, error), string, queue.Kind) {
			w := lock.NewRWMutex(e, path).Writer()
			return func() error { return lockRelease(ctx, w.Lock) },
				func() (*lock.Lease, error) { return w.TryAcquire(ctx) }, path, queue.KindRead
		}},
		{"reader", func(e *engine.Engine, path string) (func() error, func() (*lock.Lease, error), string, queue.Kind) {
			r := lock.NewRWMutex(e, path).Reader()
			return func() error { return lockRelease(ctx, r.Lock) },
				func() (*lock.Lease, error) { return r.TryAcquire(ctx) }, path, queue.KindWrite
		}},
		{"semaphore", func(e *engine.Engine, path string) (func() error, func() (*lock.Lease, error), string, queue.Kind) {
			s, err := lock.NewSemaphore(e, path, 2)
			if err != nil {
				t.Fatal(err)
			}
			// Another client keeps the semaphore's guard, as a Curator
			// acquirer does while it makes its lease.
			return func() error { return lockRelease(ctx, s.Lock) },
				func() (*lock.Lease, error) { return s.TryAcquire(ctx) }, path + "/locks", queue.KindMutex
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := startEngine(t, engine.Config{})
			b := inspect(t, shared.Addr())
			path := lockRoot(t) + "/L"
			cycle, try, on, kind := tc.setup(a, path)
			// Made before, by another client: a path the engine makes for
			// its node goes with its last node, and is predicted on only
			// once pinned.
			mkdirs(t, b, on)

			// Cycle until a create is decided with no listing: the path is
			// pinned and its children known.
			for i := 0; a.Stats().Predicted == 0; i++ {
				if i == 20 {
					t.Fatalf("no listing-free cycle after %d cycles: %+v", i, a.Stats())
				}
				if err := cycle(); err != nil {
					t.Fatal(err)
				}
			}

			node, err := b.Create(on+"/"+nodename.Protected(nodename.NewID(), kind), nil,
				zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			if l, err := try(); !errors.Is(err, engine.ErrWouldBlock) {
				t.Fatalf("try beside another client's node %s: lease %v, err %v; want ErrWouldBlock", node, l, err)
			}
			if err := b.Delete(node, -1); err != nil {
				t.Fatal(err)
			}

			// Nothing is in the way now: the next try holds.
			l, err := try()
			if err != nil {
				refused := 1
				for ; refused < 10; refused++ {
					if l, err := try(); err == nil {
						_ = l.Release(ctx)
						break
					}
				}
				t.Fatalf("try after the other client's node %s was deleted: %v (%d in a row of at most 10 refused)", node, err, refused)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// lockRelease takes a lease with lock and releases it.
func lockRelease(ctx context.Context, lock func(context.Context) (*lock.Lease, error)) error {
	l, err := lock(ctx)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}
