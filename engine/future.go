package engine

import "github.com/turnstile-go/turnstile/internal/future"

// Future is a value that becomes available later: the outcome of an
// acquisition, a release, or anything else the engine does
// asynchronously. It is resolved exactly once. Only the engine and its
// recipes (lock, election) make and resolve futures; a caller reads one
// with its four methods (it is an alias, so go doc lists them here):
//
//   - Done() <-chan struct{}: closed once the future is resolved.
//   - Wait(ctx) (T, error): blocks until the future resolves or ctx ends.
//     When ctx ends first it returns context.Cause(ctx), and the future may
//     still resolve later: to give up an acquisition, cancel the context
//     given to Acquire instead, which resolves the future and removes the
//     waiter's node. A nil ctx fails at once with ErrInvalidRequest.
//   - Result() (v T, resolved bool, err error): the outcome without
//     blocking; resolved is false while the future is unresolved.
//   - Then(fn func(T, error)): fn runs once with the outcome, on a
//     goroutine of its own, never on the engine's loop (a slow callback
//     stalls no lock) nor on the caller's; fn may call anything of the
//     engine, Close included. Close does not wait for callbacks: a caller
//     that needs its callbacks finished waits for them itself. A nil fn
//     is no callback.
//
// A nil *Future reports ErrInvalidRequest from Wait and Result, and Done
// is closed.
type Future[T any] = future.Future[T]
