package engine

import (
	"context"
	"fmt"
)

// A nil engine or context is a mistake in the calling code, not a fault of
// the moment: the engine's entry points report it as an invalid request
// naming what was nil, rather than die on a nil pointer somewhere inside.
var (
	errNilEngine  = fmt.Errorf("%w: nil *engine.Engine", ErrInvalidRequest)
	errNilContext = fmt.Errorf("%w: nil context.Context", ErrInvalidRequest)
	// A nil lease is released most often by a deferred Release placed
	// before the acquisition's error was checked.
	errNilLease = fmt.Errorf("%w: Release of a nil *engine.Lease", ErrInvalidRequest)
	// An Engine or Lease declared rather than made (var e engine.Engine)
	// has none of what Start or an acquisition sets up.
	errUnstarted  = fmt.Errorf("%w: an engine.Engine not made by Start (nil fields)", ErrInvalidRequest)
	errNilLeaseOf = fmt.Errorf("%w: a nil *engine.Lease, or one not made by an acquisition", ErrInvalidRequest)
)

// unstarted reports an engine that Start did not return: nil, or a zero
// Engine. Its methods report ErrInvalidRequest or zero values.
func (e *Engine) unstarted() bool { return e == nil || e.inbox == nil }

// unmade reports a lease that no acquisition returned: nil, or a zero
// Lease. Its accessors return zero values, and it is not held.
func (l *Lease) unmade() bool { return l == nil || l.eng == nil }

// checkCall reports a nil engine or context.
func checkCall(e *Engine, ctx context.Context) error {
	switch {
	case e == nil:
		return errNilEngine
	case e.unstarted():
		return errUnstarted
	case ctx == nil:
		return errNilContext
	}
	return nil
}
