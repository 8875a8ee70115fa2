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

// A nil or zero Engine, and a nil or zero Lease, answer every method
// without a nil dereference: errors wrap ErrInvalidRequest, accessors
// return zero values, a lease no acquisition made is not held, and a nil
// one is lost at once. (Failing first: each method below died with "invalid memory
// address or nil pointer dereference".)
func TestNilAndZeroReceivers(t *testing.T) {
	ctx := context.Background()
	for name, e := range map[string]*engine.Engine{"nil": nil, "zero": new(engine.Engine)} {
		if err := e.Close(); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%s engine Close: %v", name, err)
		}
		if _, err := e.Acquire(ctx, engine.Request{}).Wait(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%s engine Acquire: %v", name, err)
		}
		if e.State() != engine.StateClosed || e.SessionID() != 0 || e.InFlight() != 0 ||
			e.Stats() != (engine.Stats{}) || e.Sessions() != (engine.SessionStats{}) || e.CohortStats() != (engine.CohortStats{}) {
			t.Errorf("%s engine: not closed, or counts that are not zero", name)
		}
		var states []engine.State
		for s := range e.StateChanges(ctx) {
			states = append(states, s)
		}
		if len(states) != 1 || states[0] != engine.StateClosed {
			t.Errorf("%s engine StateChanges: %v, want [closed]", name, states)
		}
	}
	var nilCtx context.Context
	if s := startEngine(t, engine.Config{}).StateChanges(nilCtx); len(s) != 1 {
		t.Error("StateChanges(nil ctx) holds no state")
	}
	for name, l := range map[string]*engine.Lease{"nil": nil, "zero": new(engine.Lease)} {
		if l.Path() != "" || l.Node() != "" || l.Token() != 0 || l.Held() {
			t.Errorf("%s lease: a path, node or token, or held", name)
		}
		select {
		case <-l.Suspended():
			t.Errorf("%s lease: Suspended closed", name)
		case <-l.Revoked():
			t.Errorf("%s lease: Revoked closed", name)
		default:
		}
		select {
		case <-l.Lost():
		default:
			if l == nil {
				t.Errorf("%s lease: Lost not closed", name)
			}
		}
		if l == nil && (!errors.Is(l.Err(), engine.ErrInvalidRequest) || !errors.Is(context.Cause(l.Context()), engine.ErrInvalidRequest)) {
			t.Errorf("%s lease: Err %v, Context's cause %v", name, l.Err(), context.Cause(l.Context()))
		}
		if err := l.Release(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%s lease Release: %v", name, err)
		}
		if _, err := l.Guarded(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%s lease Guarded: %v", name, err)
		}
	}
	if (*engine.Lease)(nil).Engine() != nil {
		t.Error("a nil lease's engine")
	}
}

// A nil future is resolved with an error wrapping ErrInvalidRequest; Wait
// with a nil context fails at once, resolved or not; Then with a nil
// callback does nothing. (Failing first: the nil future's methods and
// Wait(nil) died of nil dereferences, Then(nil) on a goroutine of its own,
// which took the process down.)
func TestNilFutureAndCallback(t *testing.T) {
	ctx := context.Background()
	var f *engine.Future[*engine.Lease]
	<-f.Done()
	if _, resolved, err := f.Result(); !resolved || !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil future Result: %v, %v", resolved, err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil future Wait: %v", err)
	}
	got := make(chan error, 1)
	f.Then(func(_ *engine.Lease, err error) { got <- err })
	if err := <-got; !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("nil future Then: %v", err)
	}
	var nilCtx context.Context
	released := (*engine.Lease)(nil).ReleaseAsync()
	if _, err := released.Wait(nilCtx); !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil context.Context") {
		t.Errorf("Wait(nil ctx): %v", err)
	}
	released.Then(nil)
	eng := startEngine(t, engine.Config{})
	fut := eng.Acquire(ctx, engine.Request{Path: testRoot(t) + "/then", Kind: queue.KindMutex,
		Decide: func(l *queue.Listing, self string) queue.Decision { return l.Mutex(self) }})
	fut.Then(nil) // before the grant: kept among the callbacks until then
	l, err := fut.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Error(err)
	}
}
