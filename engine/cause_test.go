package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// An acquisition whose context ends resolves with the context's cause,
// whether the context ended while it waited or before it began, and so
// does a Wait whose own context ends.
func TestAcquisitionEndsWithContextCause(t *testing.T) {
	ctx := boundedCtx(t)
	eng := startEngine(t, engine.Config{})
	m := lock.NewMutex(eng, testRoot(t)+"/l")
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	shutdown := errors.New("shutting down")

	wctx, cancel := context.WithCancelCause(ctx)
	waiting := m.Acquire(wctx)
	eventually(t, "the waiter queued", func() bool { // in the lock's cohort, or behind a node of its own
		return eng.CohortStats().Waiting > 0 || eng.Stats().Watches+eng.Stats().LocalWatches > 0
	})
	cancel(shutdown)
	if _, err := waiting.Wait(ctx); !errors.Is(err, shutdown) {
		t.Errorf("cancelled while waiting: %v, want the cause", err)
	}

	if _, err := m.Acquire(wctx).Wait(ctx); !errors.Is(err, shutdown) {
		t.Errorf("acquired with an ended context: %v, want the cause", err)
	}

	pending := m.Acquire(ctx)
	if _, err := pending.Wait(wctx); !errors.Is(err, shutdown) {
		t.Errorf("Wait with an ended context: %v, want the cause", err)
	}

	plain, cancelPlain := context.WithCancel(ctx)
	cancelPlain()
	if _, err := m.Acquire(plain).Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("context cancelled without a cause: %v, want context.Canceled", err)
	}
}
