package election

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

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
	el *Election

	// proclaiming lets one Proclaim write at a time, so that the last to
	// return wrote the node's value, and Value is that value.
	proclaiming sync.Mutex
	// version is the data version of the leader's node as this term last
	// wrote it (0: as created), under proclaiming: Proclaim writes only
	// over its own value.
	version int32
	mu      sync.Mutex
	value   []byte
}

// lease is the term's lease, or nil for a nil *Leadership: a nil
// *engine.Lease answers every method as a lease that was never made, so a
// nil Leadership answers the same rather than panicking on its field.
func (l *Leadership) lease() *engine.Lease {
	if l == nil {
		return nil
	}
	return l.Lease
}

// The Lease methods are declared again here, each the embedded lease's, so
// that they read with the type in go doc and a nil *Leadership answers
// them (as an unmade lease) instead of panicking.

// Path is the election's path (engine.Lease.Path).
func (l *Leadership) Path() string { return l.lease().Path() }

// Engine is the engine the term was won on (engine.Lease.Engine).
func (l *Leadership) Engine() *engine.Engine { return l.lease().Engine() }

// Node is the leader's node (engine.Lease.Node).
func (l *Leadership) Node() string { return l.lease().Node() }

// Token is the term's fencing token (engine.Lease.Token).
func (l *Leadership) Token() int64 { return l.lease().Token() }

// TrustedUntil is when the term will have seen Lost if it is to be lost
// (engine.Lease.TrustedUntil).
func (l *Leadership) TrustedUntil() time.Time { return l.lease().TrustedUntil() }

// Lost closes when the leader must stop acting as one (engine.Lease.Lost).
func (l *Leadership) Lost() <-chan struct{} { return l.lease().Lost() }

// Err says why the term ended, nil while it holds (engine.Lease.Err).
func (l *Leadership) Err() error { return l.lease().Err() }

// Suspended closes while the connection is down (engine.Lease.Suspended).
func (l *Leadership) Suspended() <-chan struct{} { return l.lease().Suspended() }

// Context ends with the term (engine.Lease.Context).
func (l *Leadership) Context() context.Context { return l.lease().Context() }

// Held reports whether the term still leads (engine.Lease.Held).
func (l *Leadership) Held() bool { return l.lease().Held() }

// Revoked is the lease's (engine.Lease.Revoked): a candidate campaigns
// without revocation, so it never closes.
func (l *Leadership) Revoked() <-chan struct{} { return l.lease().Revoked() }

// Guarded writes ops only while the term holds (engine.Lease.Guarded).
func (l *Leadership) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return l.lease().Guarded(ctx, ops...)
}

// Release ends the term, as Resign does (engine.Lease.Release).
func (l *Leadership) Release(ctx context.Context) error { return l.lease().Release(ctx) }

// ReleaseAsync ends the term without waiting (engine.Lease.ReleaseAsync).
func (l *Leadership) ReleaseAsync() *engine.Future[struct{}] { return l.lease().ReleaseAsync() }

// Value is the leader's value: the one it campaigned with, or the last one
// Proclaim wrote. It must not be modified.
func (l *Leadership) Value() []byte {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Proclaim makes value the leader's value without a new election: it is
// written as the data of the leader's node, where Leader and every
// observer (Observe) read it, and observers are told the leader again with
// it. It returns once the node is written, or with context.Cause(ctx) when
// ctx ends first (the write may still happen).
//
// The node is this term's own (its sequence number is never used again).
// The write is the lease's guarded write (engine.Lease.Guarded): one multi
// that applies only while the node exists, so before any other candidate
// can be elected, and only over the version this term last wrote, so it
// never overwrites a value it did not write (such a write fails wrapping
// zk.ErrBadVersion, and changes nothing). A term known to be over fails
// before sending: with its loss (engine.ErrLost), or engine.ErrNotHeld
// after Resign; a node found gone fails with engine.ErrLost. A term that
// ends while the write is in flight fails with its loss too (wrapping as
// well the write's own error, if it failed): the value may then have been
// written, but only while the node still existed. A value
// over engine.MaxDataLen fails with engine.ErrInvalidRequest.
func (l *Leadership) Proclaim(ctx context.Context, value []byte) error {
	if l == nil || l.Lease == nil {
		return fmt.Errorf("%w: Proclaim of a nil *election.Leadership", engine.ErrInvalidRequest)
	}
	if len(value) > engine.MaxDataLen {
		return fmt.Errorf("%w: a value of %d bytes, over %d", engine.ErrInvalidRequest, len(value), engine.MaxDataLen)
	}
	value = bytes.Clone(value)
	l.proclaiming.Lock()
	defer l.proclaiming.Unlock()
	if err := l.ended(); err != nil {
		return err
	}
	node := l.Node()
	res, err := l.Guarded(ctx, &zk.SetDataRequest{Path: node, Data: value, Version: l.version})
	if errors.Is(err, engine.ErrLost) || errors.Is(err, engine.ErrNotHeld) {
		if ended := l.ended(); ended != nil {
			return ended
		}
		return fmt.Errorf("%w: the leader's node %s is gone", engine.ErrLost, node)
	}
	if errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("turnstile: the leader's node %s was written by another since this term's last write; not overwritten: %w", node, err)
	}
	if err != nil {
		if ended := l.ended(); ended != nil {
			// The term ended with the write in flight (a lapse drops the
			// connection): its loss is the news, the write's fate unknown.
			return fmt.Errorf("%w; the write's outcome is unknown: %w", ended, err)
		}
		return err
	}
	if len(res) == 1 && res[0].Stat != nil {
		l.version = res[0].Stat.Version
	} else {
		l.version++
	}
	l.mu.Lock()
	l.value = value
	l.mu.Unlock()
	if l.el != nil {
		l.el.obs.changed(node)
	}
	// Written while the node existed; but if the term ended meanwhile, the
	// caller must hear of it rather than a success.
	return l.ended()
}

// ended reports why the term is over, or nil while it is held.
func (l *Leadership) ended() error {
	if l.Held() {
		return nil
	}
	if err := l.Err(); err != nil {
		return err
	}
	return engine.ErrNotHeld
}

// Resign ends the term and deletes the leader's node, so the next candidate
// is elected: the lease's Release. It returns once the node is deleted, or
// with context.Cause(ctx) when ctx ends first (the deletion goes on
// regardless). A lost leadership reports its loss (engine.ErrLost); a
// second call returns engine.ErrNotHeld.
func (l *Leadership) Resign(ctx context.Context) error {
	if l == nil {
		return fmt.Errorf("%w: Resign of a nil *election.Leadership", engine.ErrInvalidRequest)
	}
	return l.Lease.Release(ctx)
}
