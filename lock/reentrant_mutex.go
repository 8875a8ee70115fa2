package lock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
)

// ErrInvalidOwner is returned for an owner that is nil or not comparable
// (errors.Is finds engine.ErrInvalidRequest too).
var ErrInvalidOwner = errors.New("turnstile: a lock owner must be a non-nil comparable value")

// ReentrantMutex is Curator's InterProcessMutex with its reentrancy: an
// owner that holds the lock may acquire it again, and must release it as
// many times. Go has no thread identity, so the owner is explicit: any
// non-nil comparable value (a request id, a *Job, a worker number) that
// the caller passes to Acquire and Release. Different owners exclude each
// other like Mutex callers; the wire format is Mutex's.
//
// Re-acquiring costs no ZooKeeper request. The lock node goes at the last
// release. Release through the ReentrantMutex, not Lease.Release, which
// would drop the node at once whatever the count.
type ReentrantMutex struct {
	m *Mutex

	mu     sync.Mutex
	owners map[any]*hold
}

// hold is one owner's acquisition: pending or granted, and how many times
// the owner asked for it.
type hold struct {
	fut   *engine.Future[*Lease]
	count int
}

// NewReentrantMutex returns the reentrant mutex on path. It does no I/O.
func NewReentrantMutex(eng *engine.Engine, path string, opts ...Option) *ReentrantMutex {
	return &ReentrantMutex{m: NewMutex(eng, path, opts...), owners: make(map[any]*hold)}
}

// Path is the lock path.
func (r *ReentrantMutex) Path() string { return r.mutex().Path() }

// mutex is r's Mutex: nil for a nil ReentrantMutex or a zero one.
func (r *ReentrantMutex) mutex() *Mutex {
	if r == nil {
		return nil
	}
	return r.m
}

// Acquire asks for the lock on behalf of owner and returns at once. If owner
// holds it, the future is resolved already with the same lease and the
// count goes up. If owner's earlier acquisition is still pending, this one
// joins it: it resolves with it, or with context.Cause of its own ctx
// (giving its count back) if ctx ends first. Only the first acquisition's
// ctx cancels the acquisition itself.
func (r *ReentrantMutex) Acquire(ctx context.Context, owner any) *engine.Future[*Lease] {
	return r.acquire(ctx, owner, false)
}

// Lock blocks until owner holds the lock or ctx ends.
func (r *ReentrantMutex) Lock(ctx context.Context, owner any) (*Lease, error) {
	return wait(r.acquire(ctx, owner, false))
}

// TryAcquire takes the lock for owner if owner holds it already, or if no
// one else holds or waits; otherwise (owner's own acquisition still
// waiting included) it fails with engine.ErrWouldBlock.
func (r *ReentrantMutex) TryAcquire(ctx context.Context, owner any) (*Lease, error) {
	return wait(r.acquire(ctx, owner, true))
}

func (r *ReentrantMutex) acquire(ctx context.Context, owner any, try bool) *engine.Future[*Lease] {
	if err := r.check(ctx); err != nil {
		return failed(err)
	}
	if err := checkOwner(owner); err != nil {
		return failed(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.owners[owner]; h != nil {
		l, done, err := h.fut.Result()
		switch {
		case done && err == nil && l.Held():
			h.count++
			return h.fut
		case !done && try:
			return failed(engine.ErrWouldBlock) // the owner itself is still waiting
		case !done:
			return r.join(ctx, owner, h)
		}
		delete(r.owners, owner) // failed or lost: start again
	}
	fut := r.m.eng.Acquire(ctx, r.m.request(try))
	h := &hold{fut: fut, count: 1}
	r.owners[owner] = h
	fut.Then(func(_ *Lease, err error) {
		if err != nil {
			r.mu.Lock()
			if r.owners[owner] == h {
				delete(r.owners, owner)
			}
			r.mu.Unlock()
		}
	})
	return fut
}

// join counts one more acquisition on owner's pending one. It resolves with
// that one, or with context.Cause(ctx) when ctx ends first, giving its
// count back.
// Called with r.mu held.
func (r *ReentrantMutex) join(ctx context.Context, owner any, h *hold) *engine.Future[*Lease] {
	h.count++
	f, resolve := newFuture[*Lease]()
	stop := context.AfterFunc(ctx, func() {
		if resolve(nil, context.Cause(ctx)) {
			r.mu.Lock()
			if r.owners[owner] == h {
				h.count--
			}
			r.mu.Unlock()
		}
	})
	h.fut.Then(func(l *Lease, err error) {
		stop()
		resolve(l, err)
	})
	return f
}

// Release gives back one acquisition of owner; the last one releases the
// lock. Releasing more often than acquired, or before the grant, returns
// engine.ErrNotHeld. A lost lease reports its loss, and the count is dropped.
func (r *ReentrantMutex) Release(ctx context.Context, owner any) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	if err := checkOwner(owner); err != nil {
		return err
	}
	r.mu.Lock()
	h := r.owners[owner]
	if h == nil {
		r.mu.Unlock()
		return engine.ErrNotHeld
	}
	l, done, err := h.fut.Result()
	switch {
	case !done:
		r.mu.Unlock()
		return fmt.Errorf("%w: the acquisition is still pending", engine.ErrNotHeld)
	case err != nil:
		delete(r.owners, owner)
		r.mu.Unlock()
		return engine.ErrNotHeld
	case !l.Held():
		delete(r.owners, owner)
		r.mu.Unlock()
		if lost := l.Err(); lost != nil {
			return lost
		}
		return engine.ErrNotHeld
	}
	h.count--
	if h.count > 0 {
		r.mu.Unlock()
		return nil
	}
	delete(r.owners, owner)
	r.mu.Unlock()
	return l.Release(ctx)
}

// Count is how many times owner holds the lock now (0 if not at all).
func (r *ReentrantMutex) Count(owner any) int {
	if r == nil || checkOwner(owner) != nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.owners[owner]
	if h == nil {
		return 0
	}
	if l, done, err := h.fut.Result(); !done || err != nil || !l.Held() {
		return 0
	}
	return h.count
}

// check refuses a nil ReentrantMutex or one no constructor made, one on
// a nil engine, and a nil ctx, before the owners are looked at: an owner
// that holds the lock would otherwise be answered from the count.
func (r *ReentrantMutex) check(ctx context.Context) error {
	switch {
	case r == nil || r.m == nil || r.owners == nil:
		return errNil("ReentrantMutex")
	case r.m.eng == nil:
		return errNilEngine
	case ctx == nil:
		return errNilContext
	}
	return nil
}

func checkOwner(owner any) error {
	if owner == nil || !reflect.ValueOf(owner).Comparable() {
		return invalid(ErrInvalidOwner, "%T", owner)
	}
	return nil
}

func failed(err error) *engine.Future[*Lease] {
	f, resolve := newFuture[*Lease]()
	resolve(nil, err)
	return f
}
