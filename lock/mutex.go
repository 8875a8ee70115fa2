package lock

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Mutex is a fair, non-reentrant distributed mutex: Curator's
// InterProcessMutex on the wire (nodes "_c_<uuid>-lock-<seq>"). Contenders
// are granted in the order their nodes were created; each waiter watches
// only the node just before it.
type Mutex struct {
	eng  *engine.Engine
	path string
	opts options
	data []byte
}

// NewMutex returns the mutex on path. It does no I/O: an invalid path is
// reported by the first acquisition, with engine.ErrInvalidPath.
func NewMutex(eng *engine.Engine, path string, opts ...Option) *Mutex {
	o := buildOptions(opts)
	return &Mutex{eng: eng, path: path, opts: o, data: o.data()}
}

// Path is the lock path.
func (m *Mutex) Path() string {
	if m == nil {
		return ""
	}
	return m.path
}

func (m *Mutex) request(try bool) engine.Request {
	return m.opts.request(m.path, queue.KindMutex, decideMutex, m.data, try)
}

// Acquire asks for the lock and returns at once. The future resolves with a
// lease when the lock is granted. Cancelling ctx before that resolves it
// with context.Cause(ctx) and removes this contender's node.
func (m *Mutex) Acquire(ctx context.Context) *engine.Future[*Lease] {
	return m.acquire(ctx, false)
}

// Lock blocks until the lock is granted or ctx ends.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return wait(m.acquire(ctx, false))
}

// TryAcquire takes the lock only if no other contender holds it or waits
// ahead; otherwise it fails with engine.ErrWouldBlock, leaving no node behind.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return wait(m.acquire(ctx, true))
}

func (m *Mutex) acquire(ctx context.Context, try bool) *engine.Future[*Lease] {
	if m == nil {
		return failed(errNil("Mutex"))
	}
	return m.eng.Acquire(ctx, m.request(try))
}
