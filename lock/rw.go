package lock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// ErrUpgrade is returned when a handle that holds a read lease asks for the
// write lock: the writer would wait for the handle's own reader forever.
// Release the read lease first. (Downgrading, write to read, is allowed:
// see RWMutex.Downgrade.)
var ErrUpgrade = errors.New("turnstile: a read lease cannot be upgraded to a write lease")

// ErrNotWriteLease is returned by Downgrade for a lease that is not a held
// write lease of the same RWMutex path.
var ErrNotWriteLease = errors.New("turnstile: not a held write lease of this lock")

// RWMutex is a fair read-write lock: Curator's InterProcessReadWriteLock on
// the wire ("_c_<uuid>-__READ__<seq>" and "_c_<uuid>-__WRIT__<seq>" nodes
// under one path, ordered together by sequence). Readers share; a writer
// excludes everyone; everyone is served in queue order, so a reader queued
// behind a waiting writer waits for it and writers never starve. A reader
// waits only for writers queued ahead of it, and watches only the nearest
// one.
//
// An RWMutex value is one owner, as a thread is in Curator (Go has no thread
// identity): while a read lease taken through it is held, its Writer fails
// at once with ErrUpgrade instead of waiting for its own reader forever.
// Goroutines that read and write independently each use their own value
// (NewRWMutex is cheap and does no I/O); values on one path share the lock.
type RWMutex struct {
	eng  *engine.Engine
	path string
	opts options
	data []byte

	mu    sync.Mutex
	reads []*Lease // read leases taken through this handle, pruned when no longer held
}

// NewRWMutex returns the read-write lock on path. It does no I/O.
func NewRWMutex(eng *engine.Engine, path string, opts ...Option) *RWMutex {
	o := buildOptions(opts)
	return &RWMutex{eng: eng, path: path, opts: o, data: o.data()}
}

// Path is the lock path.
func (rw *RWMutex) Path() string {
	if rw == nil {
		return ""
	}
	return rw.path
}

// Owner returns another owner of the same lock, with the same options: a
// handle of its own for the upgrade rule, at no cost.
func (rw *RWMutex) Owner() *RWMutex {
	if rw == nil {
		return nil
	}
	return &RWMutex{eng: rw.eng, path: rw.path, opts: rw.opts, data: rw.data}
}

// Reader is the shared side.
func (rw *RWMutex) Reader() *ReadLock { return &ReadLock{rw} }

// Writer is the exclusive side.
func (rw *RWMutex) Writer() *WriteLock { return &WriteLock{rw} }

// ReadLock is the read side of an RWMutex.
type ReadLock struct{ rw *RWMutex }

// WriteLock is the write side of an RWMutex.
type WriteLock struct{ rw *RWMutex }

var (
	_ Acquirer = (*ReadLock)(nil)
	_ Acquirer = (*WriteLock)(nil)
)

// Path is the lock path.
func (r *ReadLock) Path() string {
	if r == nil {
		return ""
	}
	return r.rw.Path()
}

// Acquire asks for a read lease and returns at once.
func (r *ReadLock) Acquire(ctx context.Context) *engine.Future[*Lease] {
	return r.acquire(ctx, false)
}

// Lock blocks until a read lease is granted or ctx ends.
func (r *ReadLock) Lock(ctx context.Context) (*Lease, error) { return wait(r.Acquire(ctx)) }

// TryAcquire takes a read lease only if no writer holds or waits ahead.
func (r *ReadLock) TryAcquire(ctx context.Context) (*Lease, error) {
	return wait(r.acquire(ctx, true))
}

func (r *ReadLock) acquire(ctx context.Context, try bool) *engine.Future[*Lease] {
	if r == nil || r.rw == nil {
		return failed(errNil("ReadLock"))
	}
	return r.rw.acquireRead(ctx, r.rw.opts.request(r.rw.path, queue.KindRead, decideRead, r.rw.data, try))
}

// Path is the lock path.
func (w *WriteLock) Path() string {
	if w == nil {
		return ""
	}
	return w.rw.Path()
}

// Acquire asks for the write lease and returns at once.
func (w *WriteLock) Acquire(ctx context.Context) *engine.Future[*Lease] {
	return w.acquire(ctx, false)
}

// Lock blocks until the write lease is granted or ctx ends.
func (w *WriteLock) Lock(ctx context.Context) (*Lease, error) { return wait(w.Acquire(ctx)) }

// TryAcquire takes the write lease only if nobody holds or waits ahead.
func (w *WriteLock) TryAcquire(ctx context.Context) (*Lease, error) {
	return wait(w.acquire(ctx, true))
}

func (w *WriteLock) acquire(ctx context.Context, try bool) *engine.Future[*Lease] {
	if w == nil {
		return failed(errNil("WriteLock"))
	}
	return w.rw.acquireWrite(ctx, try)
}

func (rw *RWMutex) acquireWrite(ctx context.Context, try bool) *engine.Future[*Lease] {
	if rw == nil {
		return failed(errNil("WriteLock"))
	}
	if rw.holdsRead() {
		return failed(fmt.Errorf("%w (lock %s)", ErrUpgrade, rw.path))
	}
	return rw.eng.Acquire(ctx, rw.opts.request(rw.path, queue.KindWrite, decideWrite, rw.data, try))
}

// acquireRead records the read lease in the handle before its future
// resolves, so that a Writer asked right after Lock returns sees it.
func (rw *RWMutex) acquireRead(ctx context.Context, req engine.Request) *engine.Future[*Lease] {
	f, resolve := newFuture[*Lease]()
	rw.eng.Acquire(ctx, req).Then(func(l *Lease, err error) {
		if err == nil {
			rw.mu.Lock()
			rw.reads = append(slices.DeleteFunc(rw.reads, released), l)
			rw.mu.Unlock()
		}
		resolve(l, err)
	})
	return f
}

func (rw *RWMutex) holdsRead() bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.reads = slices.DeleteFunc(rw.reads, released)
	return len(rw.reads) > 0
}

func released(l *Lease) bool { return !l.Held() }

// Downgrade takes a read lease in the place of w, a held write lease of this
// lock, as Curator 5.5 does (CURATOR-621): the read node is created with the
// writer's own sequence number, so when the caller then releases w, writers
// queued behind still wait for the read lease. The caller must release w
// once the read lease is granted; until then both are held.
func (rw *RWMutex) Downgrade(ctx context.Context, w *Lease) *engine.Future[*Lease] {
	switch {
	case rw == nil:
		return failed(errNil("RWMutex"))
	case rw.eng == nil:
		return failed(errNilEngine)
	case ctx == nil:
		return failed(errNilContext)
	case w == nil:
		return failed(invalid(ErrNotWriteLease, "a nil *engine.Lease"))
	}
	if !w.Held() || w.Path() != rw.path || w.Engine() != rw.eng {
		// Another engine's lease lives in another session, which may
		// expire on its own and leave the read node without its place.
		return failed(ErrNotWriteLease)
	}
	n, ok := queue.Parse(path.Base(w.Node()))
	if !ok || n.Kind != queue.KindWrite {
		return failed(ErrNotWriteLease)
	}
	req := rw.opts.request(rw.path, queue.KindRead, decideRead, rw.data, false)
	req.Seq = nodename.FormatSeq(n.Seq)
	return rw.acquireRead(ctx, req)
}
