package engine

import (
	"context"

	"github.com/turnstile-go/turnstile/internal/future"
)

// Future is a value that becomes available later: the outcome of an
// acquisition, a release, or anything else the engine does
// asynchronously. It is resolved exactly once. Only the engine and its
// recipes (lock, election) make and resolve futures; a caller reads one.
// A nil *Future is resolved with an error wrapping ErrInvalidRequest, and
// its Done is closed.
type Future[T any] future.Future[T]

// Done is closed once the future is resolved.
func (f *Future[T]) Done() <-chan struct{} { return f.impl().Done() }

// Wait blocks until the future resolves or ctx ends. When ctx ends first it
// returns context.Cause(ctx) (ctx.Err() when ctx was cancelled without a
// cause), and the future may still resolve later: to give up an
// acquisition, cancel the context given to Acquire instead, which resolves
// the future and removes the waiter's node. A nil ctx fails at once with
// an error wrapping ErrInvalidRequest, resolved or not.
func (f *Future[T]) Wait(ctx context.Context) (T, error) { return f.impl().Wait(ctx) }

// Result returns the outcome without blocking: resolved is false, and v
// and err zero, while the future is unresolved.
func (f *Future[T]) Result() (v T, resolved bool, err error) { return f.impl().Result() }

// Then arranges for fn to run once with the outcome, on a goroutine of its
// own: never on the engine's loop goroutine, so a slow callback stalls no
// lock, and never on the caller's. fn may call anything of the engine,
// Close included. Close does not wait for callbacks, which may still be
// running, or about to start (with ErrClosed when Close resolved their
// futures), when it returns: a caller that needs its callbacks finished
// waits for them itself, e.g. with a sync.WaitGroup. A nil fn is no
// callback.
func (f *Future[T]) Then(fn func(T, error)) { f.impl().Then(fn) }

func (f *Future[T]) impl() *future.Future[T] { return (*future.Future[T])(f) }

// The engine's own ways to make and resolve its futures (internal/future's,
// on the engine's type).

func newFuture[T any]() *Future[T] { return (*Future[T])(future.Make[T]()) }

func resolvedFuture[T any](v T, err error) *Future[T] {
	return (*Future[T])(future.Resolved(v, err))
}

// both is resolved once a and b are (see future.Both).
func both[T any](a, b *Future[T]) *Future[T] {
	return (*Future[T])(future.Both(a.impl(), b.impl()))
}

func resolveFuture[T any](f *Future[T], v T, err error) bool {
	return future.Resolve(f.impl(), v, err)
}
