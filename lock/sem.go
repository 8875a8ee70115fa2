package lock

import (
	"context"
	"errors"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/queue"
)

// ErrInvalidLeases is returned by NewSemaphore for fewer than one lease,
// and by AcquireN for fewer than one or more than the semaphore has
// (errors.Is finds engine.ErrInvalidRequest too).
var ErrInvalidLeases = errors.New("turnstile: a semaphore needs at least one lease")

// Semaphore hands out at most N leases on one path, on Curator's
// InterProcessSemaphoreV2 layout, so a Curator semaphore with the same N
// shares it:
//
//	<path>/locks/_c_<uuid>-lock-<seq>    a mutex taken while acquiring
//	<path>/leases/_c_<uuid>-lease-<seq>  one node per lease held
//
// An acquirer takes the mutex, creates its lease node, and holds the lease
// as soon as the lease path has at most N nodes; until then it watches the
// lease path's children, so it is granted when any holder lets go. Only the
// mutex holder ever waits there, so a release wakes one watcher, not a herd;
// the other acquirers queue, fairly, on the mutex. The mutex is released
// once the lease is granted (or the acquisition fails). An acquirer whose
// session expires before its grant starts again from the mutex, behind
// whoever took it meanwhile (or fails with engine.ErrSessionExpired when the
// engine's Config.FailOnExpiry is set).
//
// A lease may be released by any goroutine that has it.
type Semaphore struct {
	eng   *engine.Engine
	path  string
	n     int
	opts  options
	data  []byte
	locks string
	lease string
}

var _ Acquirer = (*Semaphore)(nil)

// NewSemaphore returns the semaphore of n leases on path. It does no I/O.
// A nil eng is refused here, as it has an error to return (errors.Is
// finds engine.ErrInvalidRequest).
func NewSemaphore(eng *engine.Engine, path string, n int, opts ...Option) (*Semaphore, error) {
	switch {
	case eng == nil:
		return nil, errNilEngine
	case n < 1:
		return nil, invalid(ErrInvalidLeases, "%d", n)
	}
	return newSemaphore(eng, path, n, opts), nil
}

func newSemaphore(eng *engine.Engine, path string, n int, opts []Option) *Semaphore {
	o := buildOptions(opts)
	return &Semaphore{eng: eng, path: path, n: n, opts: o, data: o.data(),
		locks: path + "/locks", lease: path + "/leases"}
}

// NewSemaphoreMutex is a Semaphore of one lease: Curator's
// InterProcessSemaphoreMutex. Unlike Mutex, its lease is not tied to an
// owner and its nodes follow the semaphore layout.
//
// It has no error to return: a nil eng is reported by each acquisition.
func NewSemaphoreMutex(eng *engine.Engine, path string, opts ...Option) *Semaphore {
	return newSemaphore(eng, path, 1, opts)
}

// Path is the semaphore's path.
func (s *Semaphore) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// Acquire asks for a lease and returns at once. Cancelling ctx before the
// grant resolves the future with context.Cause(ctx) and leaves no node
// behind.
func (s *Semaphore) Acquire(ctx context.Context) *engine.Future[*Lease] {
	return s.acquire(ctx, false)
}

// Lock blocks until a lease is granted or ctx ends.
func (s *Semaphore) Lock(ctx context.Context) (*Lease, error) { return wait(s.acquire(ctx, false)) }

// TryAcquire takes a lease only if one is free and no one else is
// acquiring; otherwise it fails at once with engine.ErrWouldBlock, leaving no node.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return wait(s.acquire(ctx, true))
}

func (s *Semaphore) acquire(ctx context.Context, try bool) *engine.Future[*Lease] {
	if s == nil {
		return failed(errNil("Semaphore"))
	}
	f, resolve := newFuture[*Lease]()
	s.attempt(ctx, try, 1, func(leases []*Lease, err error) {
		if err != nil {
			resolve(nil, err)
			return
		}
		resolve(leases[0], nil)
	})
	return f
}

// AcquireN asks for n leases at once, all or none (Curator's
// acquire(qty)), and returns at once; Wait on the future to block. It
// resolves with the n leases held together once there is room for all of
// them; on a failure, or when ctx ends first, it takes none (a lease
// already made is given back). n must be between 1 and Leases(), or it
// fails with ErrInvalidLeases.
//
// The acquirer holds the semaphore's mutex from the first lease to the
// last, so no other acquirer takes a lease in between: two acquirers that
// each want more than half the leases are served one after the other,
// never each holding some and waiting for the rest. While it waits it
// holds no lease: its first lease node is admitted only once it is among
// the first Leases()-n+1, and the others are made then, each admitted at
// once.
func (s *Semaphore) AcquireN(ctx context.Context, n int) *engine.Future[*MultiLease] {
	f, resolve := newFuture[*MultiLease]()
	switch {
	case s == nil:
		resolve(nil, errNil("Semaphore"))
		return f
	case n < 1 || n > s.n:
		resolve(nil, invalid(ErrInvalidLeases, "%d at once of %d", n, s.n))
		return f
	}
	s.attempt(ctx, false, n, func(leases []*Lease, err error) {
		if err != nil {
			resolve(nil, err)
			return
		}
		resolve(&MultiLease{leases: leases, released: make(chan struct{})}, nil)
	})
	return f
}

// attempt takes the guard, then k leases, and resolves with the leases.
//
// A lease node may only be made while the guard is held: Curator admits a
// lease node when at most N exist, turnstile when it is among the first N,
// and the two agree only because every lease node is created, under the
// guard, after every other one still there. So a lease acquisition fails
// rather than queue again when the session expires (the guard went with
// it), and the attempt starts over from the guard, behind whoever took it
// meanwhile; unless the engine is configured to fail waiters on expiry.
//
// The guard can also be lost without an expiry: the session lapses (the
// engine can no longer tell that the server has not expired it), comes
// back, and the engine deletes the lost guard's node. The lease
// acquisition then abandons its node at its next listing (see
// underGuard), which follows every creation of it, and the attempt starts
// over from the guard in the same way.
func (s *Semaphore) attempt(ctx context.Context, try bool, k int, resolve func([]*Lease, error)) {
	// The engine checks the paths of the semaphore's nodes, below s.path:
	// "" would make them "/locks" and "/leases", valid paths of a
	// semaphore on no path at all. A nil engine or ctx is named first, as
	// the engine names them before a path.
	err := engine.ValidatePath(s.path)
	switch {
	case s.eng == nil:
		err = errNilEngine
	case ctx == nil:
		err = errNilContext
	}
	if err != nil {
		resolve(nil, err)
		return
	}
	guardReq := s.opts.request(s.locks, queue.KindMutex, decideMutex, s.data, try)
	guardReq.Revocable = false
	s.eng.Acquire(ctx, guardReq).Then(func(guard *Lease, err error) {
		if err != nil {
			resolve(nil, err)
			return
		}
		s.leases(ctx, try, k, guard, nil, func(leases []*Lease, err error) {
			guard.ReleaseAsync() // its outcome does not change the leases'
			expired := errors.Is(err, engine.ErrSessionExpired) && !seam.FailsOnExpiry(s.eng)
			if expired || errors.Is(err, errGuardLost) && ctx.Err() == nil {
				s.attempt(ctx, try, k, resolve)
				return
			}
			resolve(leases, err)
		})
	})
}

// leases takes lease len(taken)+1 of k under guard, then the rest, and
// calls done with all k; on a failure it gives back those taken and calls
// done with the error. The first lease is admitted only with room for all
// k (among the first N-k+1 lease nodes); since no one else makes a lease
// node while the guard is held, each later one is then among the first N
// as soon as it is made.
func (s *Semaphore) leases(ctx context.Context, try bool, k int, guard *Lease, taken []*Lease, done func([]*Lease, error)) {
	if len(taken) == k {
		done(taken, nil)
		return
	}
	room := s.n
	if len(taken) == 0 {
		room = s.n - k + 1
	}
	leaseCtx, abandon := context.WithCancelCause(ctx)
	leaseReq := s.opts.request(s.lease, queue.KindLease, s.underGuard(guard, abandon, room), s.data, try)
	leaseReq.FailOnExpiry = true
	s.eng.Acquire(leaseCtx, leaseReq).Then(func(l *Lease, err error) {
		abandon(nil)
		if err != nil {
			for _, t := range taken {
				t.ReleaseAsync()
			}
			done(nil, err)
			return
		}
		s.leases(ctx, try, k, guard, append(taken, l), done)
	})
}

// errGuardLost is why a lease acquisition is abandoned when its guard was
// lost before the grant. It never reaches the caller: the attempt starts
// over from the guard.
var errGuardLost = errors.New("turnstile: the semaphore's guard was lost before the lease was granted")

// underGuard decides for a lease acquisition under guard: as decideLease while
// the guard is held; once it is lost, never holds and abandons the
// acquisition (its node is deleted, the attempt starts over). A lease node
// made without the guard may queue behind the one the next guard holder
// made meanwhile, where a Curator acquirer (admitting by count) and this
// one (by position) would wait for each other for ever; and two lease
// nodes made at once may be granted on one listing, with one token.
//
// Abandoning from here, on the engine's loop, is cancelling a context: it
// returns at once, and the engine hears of it like any cancellation.
func (s *Semaphore) underGuard(guard *Lease, abandon context.CancelCauseFunc, room int) engine.Decider {
	return func(l *queue.Listing, self string) queue.Decision {
		if guard.Err() != nil {
			abandon(errGuardLost)
			return queue.Decision{WatchChildren: true}
		}
		return decideLease(l, self, room)
	}
}

// decideLease admits self while the lease path has at most room lease
// nodes (N, or fewer for the first of several leases taken at once).
// Every other lease node was granted before self was created (acquirers
// are serialised by the mutex), so self is the newest, and that is self
// being among the first room. Otherwise any holder's release may free a
// slot: watch the children.
func decideLease(l *queue.Listing, self string, room int) queue.Decision {
	d := l.Semaphore(self, room)
	if d.Holds || d.Missing {
		return d
	}
	return queue.Decision{WatchChildren: true}
}
