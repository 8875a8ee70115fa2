package engine

import (
	"context"
	"fmt"
)

// A nil engine or context is a mistake in the calling code, not a fault of
// the moment: the engine's entry points report it as an invalid request
// naming what was nil, rather than die on a nil pointer somewhere inside.
var (
	errNilEngine  = fmt.Errorf("%w: nil *engine.Engine, or one Start did not return", ErrInvalidRequest)
	errNilContext = fmt.Errorf("%w: nil context.Context", ErrInvalidRequest)
	// A nil lease is released most often by a deferred Release placed
	// before the acquisition's error was checked.
	errNilLease   = fmt.Errorf("%w: Release of a nil *engine.Lease", ErrInvalidRequest)
	errNilLeaseOf = fmt.Errorf("%w: a nil *engine.Lease, or one no acquisition made", ErrInvalidRequest)
)

// unstarted reports an engine Start did not return: nil, or a zero one.
func (e *Engine) unstarted() bool { return e == nil || e.inbox == nil }

// or is e, or for an unstarted engine a stand-in: closed, counting nothing.
func (e *Engine) or() *Engine {
	if e.unstarted() {
		return stoppedEngine
	}
	return e
}

var stoppedEngine = &Engine{states: &stateWatch{state: StateClosed}}

// unmade reports a lease no acquisition made: nil, or a zero Lease.
func (l *Lease) unmade() bool { return l == nil || l.eng == nil }

// or is l, or for a nil lease a stand-in: no path, node or token, not held,
// lost at once with errNilLeaseOf (Err, and Context's cause). A zero Lease
// is not held, and the engine's own tests use it as a lease of no engine.
func (l *Lease) or() *Lease {
	if l == nil {
		return unmadeLease
	}
	return l
}

var unmadeLease = func() *Lease {
	l := &Lease{eng: stoppedEngine, lostErr: errNilLeaseOf, ended: errNilLeaseOf}
	l.lost.Fire()
	return l
}()

// checkCall reports a nil engine or context.
func checkCall(e *Engine, ctx context.Context) error {
	switch {
	case e.unstarted():
		return errNilEngine
	case ctx == nil:
		return errNilContext
	}
	return nil
}
