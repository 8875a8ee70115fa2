package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
)

// Lead takes turns at leading, as Curator's LeaderSelector with requeueing
// does: it campaigns with value, runs fn once elected, resigns when fn
// returns, and campaigns again, at the back of the election, so that every
// candidate gets its turn. It returns only when ctx ends (with
// context.Cause(ctx)), when fn returns an error of its own, or when a
// campaign fails for good (engine.ErrClosed, an invalid path, ErrNoAuth).
//
// fn's context ends when ctx does and when the term does (lost, or the
// engine closed): fn must then stop acting as the leader and return. An
// error fn returns because its term was lost is not its own: Lead
// campaigns again. A campaign that fails because the session expired
// (WithFailOnExpiry) is made again too.
func (e *Election) Lead(ctx context.Context, value []byte, fn func(ctx context.Context, l *Leadership) error) error {
	switch {
	case e == nil:
		return errNilElection
	case ctx == nil:
		return fmt.Errorf("%w: Lead with a nil context.Context", engine.ErrInvalidRequest)
	case fn == nil:
		return fmt.Errorf("%w: Lead with a nil func", engine.ErrInvalidRequest)
	}
	for {
		// Not Wait(ctx): the future resolves when ctx ends, and a grant at
		// that moment must be given back, not dropped.
		f := e.Campaign(ctx, value)
		<-f.Done()
		l, _, err := f.Result()
		switch {
		case ctx.Err() != nil:
			if l != nil {
				l.ReleaseAsync()
			}
			return context.Cause(ctx)
		case errors.Is(err, engine.ErrSessionExpired):
			continue
		case err != nil:
			return err
		}
		err = e.turn(ctx, l, fn)
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil && l.Err() == nil:
			return err
		}
	}
}

// turn runs fn for one term and resigns it when fn returns. fn's context
// ends with ctx and with the term.
func (e *Election) turn(ctx context.Context, l *Leadership, fn func(context.Context, *Leadership) error) error {
	termCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })
	defer stop()
	err := fn(termCtx, l)
	// Resign whatever ctx says: the next candidate waits for this node to
	// go. A lost term reports its loss, which fn was told of already.
	l.Resign(context.WithoutCancel(ctx))
	return err
}
