package engine

import (
	"errors"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/internal/future"
)

// Errors the engine returns. Each is a sentinel that errors.Is finds in a
// wrapped error.
var (
	// ErrClosed: the engine is closed or closing. Waiters' futures resolve
	// with it; leases still held at Close are lost with it.
	ErrClosed = contender.ErrClosed
	// ErrNotHeld: the lease was already released.
	ErrNotHeld = errors.New("turnstile: lease not held")
	// ErrLost: the lease can no longer be trusted: the session expired, or
	// no server answered it for so long that it may have expired.
	ErrLost = contender.ErrLost
	// ErrSessionExpired: the ZooKeeper session expired. Leases lost to an
	// expiry report it together with ErrLost; waiters fail with it when
	// Config.FailOnExpiry is set.
	ErrSessionExpired = contender.ErrSessionExpired
	// ErrInvalidPath: the lock path is not a valid ZooKeeper path for a lock.
	ErrInvalidPath = errors.New("turnstile: invalid lock path")
	// ErrWouldBlock: a try-acquisition found the lock held or waited for.
	ErrWouldBlock = contender.ErrWouldBlock
	// ErrUnreachable: no ZooKeeper server answered in time.
	ErrUnreachable = errors.New("turnstile: ZooKeeper unreachable")
	// ErrInvalidConfig: the engine's configuration cannot work.
	ErrInvalidConfig = errors.New("turnstile: invalid config")
	// ErrInvalidRequest: a Request cannot be acquired as it is (no Decider,
	// a Prefix that makes names no recipe reads, a malformed Seq, Data
	// over MaxDataLen). A bad Path reports ErrInvalidPath instead.
	ErrInvalidRequest = future.ErrInvalidRequest
	// ErrBadDecision: the request's Decider contradicted the listing it was
	// given: it reported the contender's node missing while the listing
	// holds it. Creating another node would leave that one behind, once
	// per listing, so the acquisition fails once its node is deleted.
	ErrBadDecision = contender.ErrBadDecision
	// ErrSequenceWrapped: the lock path's sequence numbers wrapped past
	// 2^31-1 while nodes created before the wrap remained, so their order
	// is not the order of creation (see queue.Listing.Wrapped). Nothing is
	// granted on such a listing: acquisitions fail, and their nodes are
	// deleted, until the nodes from before the wrap are gone.
	ErrSequenceWrapped = contender.ErrSequenceWrapped
)

// lostError reports a lost lease: errors.Is finds both ErrLost and the cause.
type lostError struct{ cause error }

func (e *lostError) Error() string {
	if e.cause == nil || e.cause == ErrLost {
		return ErrLost.Error()
	}
	return ErrLost.Error() + ": " + e.cause.Error()
}

func (e *lostError) Is(target error) bool { return target == ErrLost }

func (e *lostError) Unwrap() error { return e.cause }
