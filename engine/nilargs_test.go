package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Acquire on a nil engine, or with a nil context, resolves at once with an
// error wrapping ErrInvalidRequest that names what was nil. (Failing
// first: both died with a nil pointer dereference.)
func TestAcquireNilEngineOrContext(t *testing.T) {
	ctx := context.Background()
	decide := func(l *queue.Listing, self string) queue.Decision { return l.Mutex(self) }
	req := engine.Request{Path: "/nil", Kind: queue.KindMutex, Decide: decide, Cohort: true}
	var nilEngine *engine.Engine
	_, err := nilEngine.Acquire(ctx, req).Wait(ctx)
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil *engine.Engine") {
		t.Errorf("Acquire on a nil engine: %v", err)
	}
	eng := startEngine(t, engine.Config{})
	var nilCtx context.Context
	for _, cohort := range []bool{true, false} {
		req.Cohort = cohort
		_, err = eng.Acquire(nilCtx, req).Wait(ctx)
		if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil context.Context") {
			t.Errorf("Acquire (cohort %v) with a nil context: %v", cohort, err)
		}
	}
}

// Start with a nil context fails with ErrInvalidRequest naming it, before
// it dials anything; Release with a nil context likewise, and leaves the
// lease held, so that the caller's correct Release still works. (Failing
// first: Start died on ctx.Done() and Release in the future's Wait, the
// release already sent.)
func TestStartAndReleaseNilContext(t *testing.T) {
	var nilCtx context.Context
	eng, err := engine.Start(nilCtx, engine.Config{Servers: zkServers()})
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil context.Context") || eng != nil {
		t.Errorf("Start with a nil context: %v, %v", eng, err)
	}

	ctx := context.Background()
	decide := func(l *queue.Listing, self string) queue.Decision { return l.Mutex(self) }
	eng = startEngine(t, engine.Config{})
	l, err := eng.Acquire(ctx, engine.Request{Path: testRoot(t) + "/nil", Kind: queue.KindMutex, Decide: decide}).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(nilCtx); !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil context.Context") {
		t.Errorf("Release with a nil context: %v", err)
	}
	if !l.Held() {
		t.Error("Release with a nil context released the lease")
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release after the refused one: %v", err)
	}
	if err := (*engine.Lease)(nil).Release(nilCtx); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("Release of a nil lease with a nil context: %v", err)
	}
}
