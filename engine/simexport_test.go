package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// What the simulator's workload and checker (simload_test.go,
// simcheck_test.go, package engine_test) ask of the engine's inside,
// beside the seams of export_test.go.

// MarkTries turns every queued acquisition whose context isTry accepts
// into a try-lock, as the recipe's TryAcquire would have made it.
//
// A recipe's TryAcquire blocks until the engine answers, which a
// single-threaded simulator cannot do; so the workload acquires with
// Acquire, asynchronously, under a context it marks, and the world marks
// what is queued before each turn of the loop. That reaches every
// acquisition a recipe makes for it, including those the recipe makes
// later on its own, from a callback (a semaphore's lease once its guard is
// held, a multi-lock's next part), each of which TryAcquire makes a try.
func (e *Engine) MarkTries(isTry func(context.Context) bool) {
	batch := e.inbox.Drain(nil)
	for _, ev := range batch {
		cmd, ok := ev.(input.Command)
		if !ok {
			continue
		}
		if a, ok := cmd.Payload.(*acquireCmd); ok && !a.req.TryOnly && isTry(a.ctx) {
			a.req.TryOnly = true
		}
	}
	for _, ev := range batch {
		e.inbox.Put(ev)
	}
}

// TryCreates calls f with the id of every live try contender and the path
// its create names (CreatePath): the lock path and the protected id that
// the names of its nodes start with. The simulator's checker keeps them to
// tell a try's own nodes from those that may have kept it out.
func (e *Engine) TryCreates(f func(id uint64, createPath string)) {
	e.core.EachContender(func(id uint64, m *contender.Machine) {
		if m.TryOnly() && m.Phase() != contender.Unstarted {
			f(id, m.CreatePath())
		}
	})
}

// Leases are the leases the loop keeps, in the order their acquisitions
// were made: every lease of the engine that may still be held, whichever
// recipe (or part of one: a semaphore's guard, a multi-lock's part) it
// was granted to, a cohort's nodes and the leases passed on them
// included.
func (e *Engine) Leases() []*Lease {
	var leases []*Lease
	for _, id := range slices.Sorted(maps.Keys(e.leases)) {
		leases = append(leases, e.leases[id])
	}
	return leases
}

// Carrier is the lease that holds the node of a lease passed inside a
// cohort, while that lease holds it; nil for any other lease.
func (l *Lease) Carrier() *Lease { return l.nodeLease }

// ChildrenInPlace and DataInPlace are Children and Data made on the calling
// goroutine: the simulator calls them from a coroutine, whose client calls
// it answers itself, where Children and Data would wait for a goroutine of
// their own.
func (e *Engine) ChildrenInPlace(ctx context.Context, path string) ([]string, error) {
	return inPlace(ctx, e, path, func(p string) ([]string, error) {
		children, _, err := e.conn.Children(p)
		return children, err
	})
}

func (e *Engine) DataInPlace(ctx context.Context, path string) ([]byte, error) {
	return inPlace(ctx, e, path, func(p string) ([]byte, error) {
		data, _, err := e.conn.Get(p)
		return data, err
	})
}

// inPlace is direct without its goroutine.
func inPlace[T any](ctx context.Context, e *Engine, path string, call func(string) (T, error)) (T, error) {
	var zero T
	path, err := e.serverPath(path)
	if err != nil {
		return zero, err
	}
	if ctx.Err() != nil {
		return zero, context.Cause(ctx)
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return zero, ErrClosed
	}
	v, err := call(path)
	return v, zkErr(err)
}
