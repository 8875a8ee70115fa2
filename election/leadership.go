package election

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
)

// Leadership is one term of a candidate that was elected: proof, while it
// is neither resigned nor lost, that this candidate leads.
type Leadership struct {
	lease *engine.Lease
	value []byte
}

// Lost is closed when the leader must stop acting as one at once: its
// session expired, or was disconnected long enough that the server may
// expire it and elect another candidate (last contact + session timeout -
// the engine's margin), or the engine closed. It closes before another
// candidate can be elected.
func (l *Leadership) Lost() <-chan struct{} { return l.lease.Lost() }

// Err is nil while the leadership is not lost, and then why it was lost
// (errors.Is finds engine.ErrLost, and engine.ErrSessionExpired or engine.ErrClosed where they
// are the cause).
func (l *Leadership) Err() error { return l.lease.Err() }

// Suspended is closed while the connection to ZooKeeper is down and the
// leadership is not yet lost; call it again after a reconnect for the next
// suspension. A careful leader pauses what it does not want to redo.
func (l *Leadership) Suspended() <-chan struct{} { return l.lease.Suspended() }

// Leading reports whether the term is still on: neither resigned (or
// resigning) nor lost.
func (l *Leadership) Leading() bool { return l.lease.Held() }

// Token is the fencing token of this term: successive leaders of one
// election carry strictly increasing tokens, across sessions, reconnects
// and server restarts, so a resource the leader drives can refuse a
// deposed leader that is slow to notice. See engine.Lease.Token.
func (l *Leadership) Token() int64 { return l.lease.Token() }

// Value is the value the leader campaigned with. It must not be modified.
func (l *Leadership) Value() []byte { return l.value }

// Node is the path of the leader's node, relative to the engine's
// Config.Root.
func (l *Leadership) Node() string { return l.lease.Node() }

// Context is cancelled when the term ends: when the leadership is lost
// (the cause is Err, which errors.Is finds as engine.ErrLost) or once Resign has
// deleted the node (the cause is engine.ErrNotHeld). Hand it to the work
// only the leader may do. See engine.Lease.Context.
func (l *Leadership) Context() context.Context { return l.lease.Context() }

// Resign ends the term and deletes the leader's node, so the next candidate
// is elected. It returns once the node is deleted, or with
// context.Cause(ctx) when ctx ends first (the deletion goes on regardless).
// A lost leadership reports its loss (engine.ErrLost); a second call returns
// engine.ErrNotHeld.
func (l *Leadership) Resign(ctx context.Context) error { return l.lease.Release(ctx) }
