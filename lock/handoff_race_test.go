package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A local handoff racing the waiter's cancellation: the holder lets go and
// the waiter's context ends at the same moment. Whichever the loop (or,
// with cohorting, the cohort) takes first, the waiter ends exactly one way,
// and no node is left behind: a granted waiter holds a lease that works, a
// cancelled one has no node.
func TestHandoffRacingCancelEndsOneWay(t *testing.T) {
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) { handoffRacingCancel(t, mode.cfg) })
	}
}

func handoffRacingCancel(t *testing.T, cfg engine.Config) {
	eng := startEngine(t, cfg)
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	ctx := context.Background()
	var granted, cancelled int
	for i := range 20 {
		m := lock.NewMutex(eng, root+"/L")
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := eng.Stats()
		wctx, cancel := context.WithCancel(ctx)
		w := m.Acquire(wctx)
		queued(t, eng, before, 1)

		// The cancellation goes out a little later each round, so that
		// the loop sees it now before the delete's reply, now after.
		released := h.ReleaseAsync()
		time.Sleep(time.Duration(i%5) * 500 * time.Microsecond)
		cancel()
		if _, err := released.Wait(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
		l, err := w.Wait(ctx)
		switch {
		case err == nil:
			granted++
			if !l.Held() {
				t.Fatalf("granted a lease that is not held: %v", l.Err())
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release of the handed-over lease: %v", err)
			}
		case errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("waiter: %v, want a lease or context.Canceled", err)
		}
		eventually(t, "no node left", func() bool { return lockNodes(t, conn, root) == 0 })
	}
	t.Logf("%d granted, %d cancelled", granted, cancelled)
}

// Close while a local handoff is pending: the holder's release is in
// flight and a waiter of the same engine is next. Close returns, the
// waiter ends (cancelled, or granted and then lost with the engine), the
// release ends, and no node is left.
func TestCloseWhileAHandoffIsPending(t *testing.T) {
	for _, mode := range queueModes {
		t.Run(mode.name, func(t *testing.T) { closeWhileHandoffPending(t, mode.cfg) })
	}
}

func closeWhileHandoffPending(t *testing.T, cfg engine.Config) {
	conn := inspect(t, shared.Addr())
	root := lockRoot(t)
	ctx := context.Background()
	cfg.Servers = zkServers()
	for range 10 {
		eng, err := engine.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := lock.NewMutex(eng, root+"/L")
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := eng.Stats()
		w := m.Acquire(ctx)
		queued(t, eng, before, 1)

		released := h.ReleaseAsync()
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := released.Result(); !ok {
			t.Fatal("release unresolved after Close")
		} else if err != nil && !errors.Is(err, engine.ErrLost) {
			t.Fatalf("release: %v", err)
		}
		l, ok, err := w.Result()
		switch {
		case !ok:
			t.Fatal("waiter unresolved after Close")
		case err == nil && l.Held():
			t.Fatal("a lease handed over during Close outlives the engine")
		case err != nil && !errors.Is(err, engine.ErrClosed):
			t.Fatalf("waiter: %v, want ErrClosed", err)
		}
		if n := lockNodes(t, conn, root); n != 0 {
			t.Fatalf("%d nodes left after Close", n)
		}
	}
}
