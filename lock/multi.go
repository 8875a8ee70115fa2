package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
)

// ErrMultiLock is returned by NewMultiLock for an empty list, a nil lock or
// two locks on one path (errors.Is finds engine.ErrInvalidRequest too).
var ErrMultiLock = errors.New("turnstile: invalid multi-lock")

// ErrNoTry is returned by MultiLock.TryAcquire when a part has no
// TryAcquire.
var ErrNoTry = errors.New("turnstile: a part of the multi-lock cannot try")

// MultiLock holds several locks as one, like Curator's
// InterProcessMultiLock: all or none. Its parts may be of any recipe. They
// are acquired one after another in one canonical order (by path), so two
// multi-locks over overlapping sets never deadlock each other; if a part
// fails, or the context ends, the parts already taken are released and the
// acquisition fails.
type MultiLock struct {
	parts []Acquirer
}

// NewMultiLock combines locks, which must be on distinct paths.
func NewMultiLock(locks ...Acquirer) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, invalid(ErrMultiLock, "no locks")
	}
	parts := slices.Clone(locks)
	for _, p := range parts {
		if isNil(p) {
			return nil, invalid(ErrMultiLock, "a nil lock")
		}
	}
	slices.SortFunc(parts, func(a, b Acquirer) int { return cmp.Compare(a.Path(), b.Path()) })
	for i := 1; i < len(parts); i++ {
		if parts[i].Path() == parts[i-1].Path() {
			return nil, invalid(ErrMultiLock, "%s twice", parts[i].Path())
		}
	}
	return &MultiLock{parts: parts}, nil
}

// Paths are the parts' paths in the order they are acquired.
func (m *MultiLock) Paths() []string {
	if m == nil {
		return nil
	}
	paths := make([]string, len(m.parts))
	for i, p := range m.parts {
		paths[i] = p.Path()
	}
	return paths
}

// Acquire asks for every part and returns at once; the future resolves
// when all are held, or with the first failure once what was taken is
// released.
func (m *MultiLock) Acquire(ctx context.Context) *engine.Future[*MultiLease] {
	f, resolve := newFuture[*MultiLease]()
	if err := m.check(ctx); err != nil {
		resolve(nil, err)
		return f
	}
	m.next(ctx, nil, func(p Acquirer) *engine.Future[*Lease] { return p.Acquire(ctx) }, resolve)
	return f
}

// Lock blocks until every part is held or the acquisition fails.
func (m *MultiLock) Lock(ctx context.Context) (*MultiLease, error) {
	return wait(m.Acquire(ctx))
}

type tryAcquirer interface {
	TryAcquire(ctx context.Context) (*Lease, error)
}

// TryAcquire takes every part with its TryAcquire, or none: it fails with
// engine.ErrWouldBlock if any part would have to wait.
func (m *MultiLock) TryAcquire(ctx context.Context) (*MultiLease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	for _, p := range m.parts {
		if _, ok := p.(tryAcquirer); !ok {
			return nil, fmt.Errorf("%w: %T on %s", ErrNoTry, p, p.Path())
		}
	}
	f, resolve := newFuture[*MultiLease]()
	m.next(ctx, nil, func(p Acquirer) *engine.Future[*Lease] {
		g, set := newFuture[*Lease]()
		set(p.(tryAcquirer).TryAcquire(ctx))
		return g
	}, resolve)
	return wait(f)
}

// check refuses a nil MultiLock, one no constructor made (no parts: it
// would be granted at once, holding nothing) and a nil ctx.
func (m *MultiLock) check(ctx context.Context) error {
	switch {
	case m == nil:
		return errNil("MultiLock")
	case len(m.parts) == 0:
		return invalid(ErrMultiLock, "no locks (a MultiLock not made by NewMultiLock)")
	case ctx == nil:
		return errNilContext
	}
	return nil
}

// next acquires part len(taken), then the rest; on a failure it releases
// what was taken.
func (m *MultiLock) next(ctx context.Context, taken []*Lease, get func(Acquirer) *engine.Future[*Lease], resolve func(*MultiLease, error) bool) {
	if len(taken) == len(m.parts) {
		resolve(&MultiLease{leases: taken, released: make(chan struct{})}, nil)
		return
	}
	part := m.parts[len(taken)]
	get(part).Then(func(l *Lease, err error) {
		if err != nil {
			for _, t := range taken {
				t.ReleaseAsync()
			}
			resolve(nil, fmt.Errorf("turnstile: multi-lock part %s: %w", part.Path(), err))
			return
		}
		m.next(ctx, append(taken, l), get, resolve)
	})
}

// MultiLease is every part of a MultiLock, held; or the leases of one
// Semaphore.AcquireN.
type MultiLease struct {
	leases []*Lease

	once     sync.Once
	lost     chan struct{}
	released chan struct{}
	stop     sync.Once
}

// Leases are the parts' leases (or a semaphore's), in the order they were
// acquired.
func (ml *MultiLease) Leases() []*Lease {
	if ml == nil {
		return nil
	}
	return slices.Clone(ml.leases)
}

// Release releases every part, last acquired first, and returns every
// failure, joined (errors.Is finds each). A second call reports engine.ErrNotHeld
// for each part. A nil ctx, or a nil MultiLease, is refused before any part
// is released.
func (ml *MultiLease) Release(ctx context.Context) error {
	switch {
	case ml == nil:
		return errNil("MultiLease")
	case ctx == nil:
		return errNilContext
	case ml.released == nil:
		return invalid(ErrMultiLock, "a MultiLease no acquisition made")
	}
	ml.stop.Do(func() { close(ml.released) })
	var errs []error
	for i := len(ml.leases) - 1; i >= 0; i-- {
		if err := ml.leases[i].Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ml.leases[i].Path(), err))
		}
	}
	return errors.Join(errs...)
}

// Lost is closed when any part is lost: the holder must stop at once. The
// first call starts one goroutine that follows the parts until the
// MultiLease is released, or each part has ended (released one by one
// through Leases, or lost).
func (ml *MultiLease) Lost() <-chan struct{} {
	if ml == nil || ml.released == nil {
		return closedLost // no acquisition made it: nothing held to trust
	}
	ml.once.Do(func() {
		ml.lost = make(chan struct{})
		// A part's context ends when the part does, lost or released: the
		// watch drops a part released on its own and goes on with the
		// others, so it ends however the parts end.
		parts := slices.Clone(ml.leases)
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ml.released)}}
		for _, l := range parts {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.Context().Done())})
		}
		go func() {
			for len(cases) > 1 {
				i, _, _ := reflect.Select(cases)
				if i == 0 {
					return
				}
				// A lost lease's Err is set before its context ends.
				if parts[i-1].Err() != nil {
					close(ml.lost)
					return
				}
				cases = slices.Delete(cases, i, i+1)
				parts = slices.Delete(parts, i-1, i)
			}
		}()
	})
	return ml.lost
}

func isNil(a Acquirer) bool {
	if a == nil {
		return true
	}
	switch v := reflect.ValueOf(a); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// closedLost is the Lost of a MultiLease no acquisition made.
var closedLost = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
