package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// A released lease's context is cancelled by the time Release returns,
// with ErrNotHeld as its cause; one asked for after the release is born
// cancelled. It is the same context on every call.
func TestLeaseContextEndsWithRelease(t *testing.T) {
	ctx := boundedCtx(t)
	eng := startEngine(t, engine.Config{})
	l := lockOwn(ctx, t, eng, "/l")
	lctx := l.Context()
	if lctx != l.Context() {
		t.Error("a second call made another context")
	}
	if err := lctx.Err(); err != nil {
		t.Fatalf("held lease's context: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("after Release: Err %v, want context.Canceled", err)
	}
	if cause := context.Cause(lctx); !errors.Is(cause, engine.ErrNotHeld) {
		t.Errorf("after Release: cause %v, want ErrNotHeld", cause)
	}

	l2 := lockOwn(ctx, t, eng, "/late")
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(l2.Context()); !errors.Is(cause, engine.ErrNotHeld) {
		t.Errorf("context asked for after the release: cause %v, want ErrNotHeld", cause)
	}
}

// A lost lease's context is cancelled with the loss as its cause, no
// later than Lost closes is observed, without the lease being released.
func TestLeaseContextEndsWithLoss(t *testing.T) {
	ctx := boundedCtx(t)
	var p netfault.Partition
	eng := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	l := lockOwn(ctx, t, eng, "/l")
	lctx := l.Context()
	p.Cut()
	defer p.Heal()
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("never lost")
	}
	select {
	case <-lctx.Done():
	default:
		t.Fatal("Lost closed, the lease's context not cancelled")
	}
	if cause := context.Cause(lctx); !errors.Is(cause, engine.ErrLost) || cause != l.Err() {
		t.Errorf("cause %v, want the lease's loss %v", cause, l.Err())
	}
}

// Close loses what is held: the context ends with the loss, ErrClosed.
func TestLeaseContextEndsWithClose(t *testing.T) {
	ctx := boundedCtx(t)
	eng := startEngine(t, engine.Config{})
	l := lockOwn(ctx, t, eng, "/l")
	lctx := l.Context()
	eng.Close()
	if cause := context.Cause(lctx); !errors.Is(cause, engine.ErrLost) || !errors.Is(cause, engine.ErrClosed) {
		t.Errorf("cause after Close: %v, want ErrLost and ErrClosed", cause)
	}
}

// lockOwn locks a mutex at name under the test's own root, or fails the
// test.
func lockOwn(ctx context.Context, t *testing.T, eng *engine.Engine, name string) *lock.Lease {
	t.Helper()
	l, err := lock.NewMutex(eng, testRoot(t)+name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
