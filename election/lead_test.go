package election_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
)

// Two candidates on two engines take turns: each term's fn runs alone, and
// since a candidate that resigns campaigns again at the back, the turns
// alternate. Each stops after three turns by ending its own context, and
// Lead then returns its cause.
func TestLeadTakesTurns(t *testing.T) {
	ctx := bounded(t)
	conn := inspect(t)
	path := electionPath(t)
	both := make(chan struct{}) // both candidates are queued
	var (
		mu      sync.Mutex
		turns   []string
		leading int
	)
	stopped := errors.New("three turns taken")
	lead := func(eng *engine.Engine, name string) error {
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		taken := 0
		return election.New(eng, path).Lead(lctx, []byte(name), func(tctx context.Context, l *election.Leadership) error {
			mu.Lock()
			leading++
			if leading != 1 {
				t.Errorf("%s leads beside another", name)
			}
			turns = append(turns, name)
			mu.Unlock()
			select {
			case <-both:
			case <-tctx.Done():
				t.Errorf("%s's term ended before the other candidate queued: %v", name, context.Cause(tctx))
			}
			if string(l.Value()) != name || !l.Held() {
				t.Errorf("%s's term: value %q, held %v", name, l.Value(), l.Held())
			}
			mu.Lock()
			leading--
			mu.Unlock()
			if taken++; taken == 3 {
				cancel(stopped)
			}
			return nil
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lead(startEngine(t, engine.Config{}), "a") }()
	eventually(t, "a campaigning", func() bool { return len(children(t, conn, path)) == 1 })
	go func() { errs <- lead(startEngine(t, engine.Config{}), "b") }()
	eventually(t, "b campaigning", func() bool { return len(children(t, conn, path)) == 2 })
	close(both)
	for range 2 {
		if err := <-errs; !errors.Is(err, stopped) {
			t.Errorf("Lead returned %v, want its context's cause", err)
		}
	}
	if got := strings.Join(turns, ","); got != "a,b,a,b,a,b" {
		t.Errorf("turns %s, want a,b,a,b,a,b", got)
	}
	eventually(t, "no candidate left", func() bool { return len(children(t, conn, path)) == 0 })
}

// An error of fn's own ends Lead with it, the term resigned; a term that
// ends under fn (here the engine closes) ends fn's context, and Lead then
// returns the campaign's failure.
func TestLeadErrorsAndLoss(t *testing.T) {
	ctx := bounded(t)
	conn := inspect(t)
	path := electionPath(t)
	eng := startEngine(t, engine.Config{})
	boom := errors.New("boom")
	err := election.New(eng, path).Lead(ctx, []byte("x"), func(context.Context, *election.Leadership) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Lead with a failing fn: %v, want boom", err)
	}
	eventually(t, "the term resigned", func() bool { return len(children(t, conn, path)) == 0 })

	doomed := startEngine(t, engine.Config{})
	var cause error
	done := make(chan error, 1)
	go func() {
		done <- election.New(doomed, path).Lead(ctx, []byte("y"), func(tctx context.Context, l *election.Leadership) error {
			doomed.Close()
			<-tctx.Done()
			cause = context.Cause(tctx)
			return tctx.Err()
		})
	}()
	if err := <-done; !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Lead after its engine closed: %v, want ErrClosed", err)
	}
	if !errors.Is(cause, engine.ErrClosed) {
		t.Errorf("fn's context ended with %v, want the term's end (ErrClosed)", cause)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"nil Election", (*election.Election)(nil).Lead(ctx, nil, func(context.Context, *election.Leadership) error { return nil })},
		{"nil func", election.New(eng, path).Lead(ctx, nil, nil)},
		{"nil context", election.New(eng, path).Lead(nilContext(), nil, func(context.Context, *election.Leadership) error { return nil })},
	} {
		if !errors.Is(c.err, engine.ErrInvalidRequest) {
			t.Errorf("Lead with a %s: %v, want ErrInvalidRequest", c.name, c.err)
		}
	}
}

// nilContext is a nil context.Context, as a caller's mistake passes one.
func nilContext() context.Context { return nil }
