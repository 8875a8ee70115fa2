package engine

import "github.com/turnstile-go/turnstile/internal/future"

// Future is a value that becomes available later: the outcome of an
// acquisition, a release, or anything else the engine does
// asynchronously. It is resolved exactly once. Done, Wait, Result and
// Then read it; Then's callbacks run on goroutines of their own, never on
// the engine's loop. Only the engine and its recipes (lock, election)
// make and resolve futures (package internal/future holds the type).
type Future[T any] = future.Future[T]
