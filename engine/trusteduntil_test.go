package engine_test

import (
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
)

// A held lease's TrustedUntil is ahead, by no more than the session
// timeout less the margin; once the server is cut off Lost() closes, and
// from then on it is the zero Time. LostMargin is the configured
// margin, scaled to the timeout the server granted (here what was asked).
func TestTrustedUntilBoundsLost(t *testing.T) {
	ctx := boundedCtx(t)
	var p netfault.Partition
	const timeout, margin = 4 * time.Second, 1 * time.Second
	eng := startEngine(t, engine.Config{SessionTimeout: timeout, LostMargin: margin, Dialer: p.Dial})
	l := lockOwn(ctx, t, eng, "/l")
	if got := eng.LostMargin(); got != margin {
		t.Errorf("LostMargin %v, want %v", got, margin)
	}
	before := time.Now()
	until := l.TrustedUntil()
	if !until.After(before) || until.After(before.Add(timeout-margin)) {
		t.Fatalf("TrustedUntil %v from now, want within (0, %v]", until.Sub(before), timeout-margin)
	}
	p.Cut()
	defer p.Heal()
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("never lost")
	}
	if got := l.TrustedUntil(); !got.IsZero() {
		t.Errorf("after Lost(): TrustedUntil %v, want the zero Time", got)
	}
}

// A released lease is trusted until nothing.
func TestTrustedUntilZeroOnceReleased(t *testing.T) {
	ctx := boundedCtx(t)
	eng := startEngine(t, engine.Config{})
	l := lockOwn(ctx, t, eng, "/l")
	if l.TrustedUntil().IsZero() {
		t.Fatal("a held lease is trusted until the zero Time")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.TrustedUntil(); !got.IsZero() {
		t.Errorf("after Release: TrustedUntil %v, want the zero Time", got)
	}
}
