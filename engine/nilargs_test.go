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
