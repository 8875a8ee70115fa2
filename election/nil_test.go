package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
)

// panicOf runs f and returns what it panicked with, nil if it returned.
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// A nil engine, Election, Leadership or context fails with an error
// wrapping engine.ErrInvalidRequest that names what was nil; Observe,
// which has no error to return, closes its channel at once. None dies of a
// nil dereference. (Failing first: before, every case but the nil
// Leadership's Value died with "invalid memory address or nil pointer
// dereference"; a zero Election, a nil option and Observe's nil cases
// panicked.)
func TestNilArguments(t *testing.T) {
	ctx := bounded(t)
	eng := startEngine(t, engine.Config{})
	p := electionPath(t)
	var nilCtx context.Context
	for _, c := range []struct {
		name, names string
		call        func() error
	}{
		{"New(nil).Campaign", "nil *engine.Engine", func() error { _, err := election.New(nil, p).Campaign(ctx, nil).Wait(ctx); return err }},
		{"New(nil).Leader", "nil *engine.Engine", func() error { _, err := election.New(nil, p).Leader(ctx); return err }},
		{"nil Election Campaign", "nil *election.Election", func() error { _, err := (*election.Election)(nil).Campaign(ctx, nil).Wait(ctx); return err }},
		{"nil Election Leader", "nil *election.Election", func() error { _, err := (*election.Election)(nil).Leader(ctx); return err }},
		{"nil Leadership", "nil *election.Leadership", func() error { return (*election.Leadership)(nil).Resign(ctx) }},
		{"Campaign(nil ctx)", "nil context.Context", func() error { _, err := election.New(eng, p).Campaign(nilCtx, nil).Wait(ctx); return err }},
		{"Leader(nil ctx)", "nil context.Context", func() error { _, err := election.New(eng, p).Leader(nilCtx); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if p := panicOf(func() { err = c.call() }); p != nil {
				t.Fatalf("panic: %v", p)
			}
			if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), c.names) {
				t.Errorf("got %v, want an error wrapping ErrInvalidRequest naming %q", err, c.names)
			}
		})
	}
	if v := (*election.Leadership)(nil).Value(); v != nil {
		t.Errorf("Value of a nil Leadership: %q", v)
	}
	for name, observe := range map[string]func() <-chan election.Leader{
		"nil Election":     func() <-chan election.Leader { return (*election.Election)(nil).Observe(ctx) },
		"zero Election":    func() <-chan election.Leader { return new(election.Election).Observe(ctx) },
		"Observe(nil ctx)": func() <-chan election.Leader { return election.New(eng, p).Observe(nilCtx) },
	} {
		var ch <-chan election.Leader
		if p := panicOf(func() { ch = observe() }); p != nil {
			t.Errorf("%s: panic: %v", name, p)
			continue
		}
		for range ch {
			t.Errorf("%s: a leader observed", name)
		}
	}
	if _, err := new(election.Election).Leader(ctx); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("Leader of a zero Election: %v", err)
	}
	if l, err := election.New(eng, p, nil).Campaign(ctx, nil).Wait(ctx); err != nil {
		t.Errorf("Campaign with a nil option: %v", err)
	} else if err := l.Resign(ctx); err != nil {
		t.Error(err)
	}
	// An observer of an election on a nil engine is told nothing: its
	// channel closes.
	for range election.New(nil, p).Observe(ctx) {
		t.Error("a leader observed on a nil engine")
	}
}
