package election

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
)

// Leadership is one term of a candidate that was elected: proof, while it
// is neither resigned nor lost, that this candidate leads.
//
// It is the candidate's lease on the election path, with its methods:
// Lost closes when the leader must stop acting as one at once (its
// session expired, or went unanswered long enough that the server may
// expire it and elect another candidate; or the engine closed), before
// another candidate can be elected; Err says why; Suspended closes while
// the connection is down and it may still lead; Held reports whether this
// term still leads; Token is the term's fencing token, increasing from
// leader to leader, for a resource that must refuse a deposed leader's
// late writes; Node is the candidate's node; Context ends with the term.
type Leadership struct {
	*engine.Lease
	value []byte
}

// Value is the value the leader campaigned with. It must not be modified.
func (l *Leadership) Value() []byte { return l.value }

// Resign ends the term and deletes the leader's node, so the next candidate
// is elected: the lease's Release. It returns once the node is deleted, or
// with context.Cause(ctx) when ctx ends first (the deletion goes on
// regardless). A lost leadership reports its loss (engine.ErrLost); a
// second call returns engine.ErrNotHeld.
func (l *Leadership) Resign(ctx context.Context) error { return l.Release(ctx) }
