package contender

import (
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// The errors a machine resolves an acquisition, a release or a lease with.
// Package engine re-exports each as the same value (engine.ErrLost is
// ErrLost), and documents it there, so that errors.Is finds the engine's
// sentinel in what the machine returned.
var (
	ErrClosed          = errors.New("turnstile: engine closed")
	ErrLost            = errors.New("turnstile: lease lost")
	ErrSessionExpired  = errors.New("turnstile: session expired")
	ErrWouldBlock      = errors.New("turnstile: lock is held")
	ErrBadDecision     = errors.New("turnstile: the Decider contradicts the listing")
	ErrSequenceWrapped = errors.New("turnstile: the lock path's sequence numbers wrapped")
	ErrNoAuth          = errors.New("turnstile: not authorised")
)

// errBorrowedPlaceGone fails a contender whose node has a borrowed
// sequence number (Config.Seq) when that node is gone, or may never have
// been made at a moment it could be: such a node is made once, never again.
var errBorrowedPlaceGone = fmt.Errorf("%w: the node holding its place in the queue is gone", ErrLost)

// refused is the error of an operation on path the server refused (in,
// its reply): it wraps ErrNoAuth too when rights were missing, so that
// errors.Is finds the cause a caller can act on.
func refused(op, path string, in Input) error {
	if in.Outcome == input.NoAuth {
		return fmt.Errorf("%w: %s %s: %w", ErrNoAuth, op, path, in.Err)
	}
	return fmt.Errorf("turnstile: %s %s: %w", op, path, in.Err)
}
