// Package future is the implementation of the futures turnstile's packages
// hand their callers. engine.Future is a type defined on this Future, whose
// methods call these by conversion: the recipes (lock, election) make and
// resolve futures of their own here and hand them out as engine.Futures,
// which a program using the module cannot make or resolve: only Done,
// Wait, Result and Then are its to call, documented on engine.Future.
package future

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrInvalidRequest is engine.ErrInvalidRequest, declared here so that a
// nil future can report it without an import of the engine.
var ErrInvalidRequest = errors.New("turnstile: invalid request")

// errNilFuture is the outcome of a nil future: a pointer that no call
// returned (a future is never nil), so a mistake in the calling code.
var errNilFuture = fmt.Errorf("%w: nil *engine.Future", ErrInvalidRequest)

// errNilContext is what Wait with a nil context reports, as the engine's
// calls do.
var errNilContext = fmt.Errorf("%w: nil context.Context", ErrInvalidRequest)

// Future is a value that becomes available later, resolved exactly once;
// see engine.Future.
type Future[T any] struct {
	mu       sync.Mutex
	done     chan struct{} // made on the first Done; most callers use Then
	val      T
	err      error
	resolved bool
	// then is the callbacks given so far, in one function that runs them
	// in order: most futures get one, so a slice would cost a word or two
	// and an allocation of its own in each (a million queued waiters hold
	// a future each).
	then func(T, error)
}

// Make returns an unresolved future; Resolve resolves it.
func Make[T any]() *Future[T] { return &Future[T]{} }

// New returns an unresolved future and the function that resolves it (see
// Resolve). Recipes built from several acquisitions use it to hand their
// caller one future.
func New[T any]() (*Future[T], func(T, error) bool) {
	f := Make[T]()
	return f, f.resolve
}

// Resolved returns a future resolved with v and err.
func Resolved[T any](v T, err error) *Future[T] {
	f := Make[T]()
	f.resolve(v, err)
	return f
}

// Both returns a future resolved, with no error, once a and b are
// resolved, whatever their outcomes (theirs to report); b itself when a is
// nil, so that a chain begins with nil.
func Both[T any](a, b *Future[T]) *Future[T] {
	if a == nil {
		return b
	}
	f := Make[T]()
	var left atomic.Int32
	left.Store(2)
	done := func(T, error) {
		if left.Add(-1) == 0 {
			var zero T
			f.resolve(zero, nil)
		}
	}
	a.Then(done)
	b.Then(done)
	return f
}

// Resolve sets f's outcome; the first call wins and later ones report
// false. Callbacks given to Then run on goroutines of their own.
func Resolve[T any](f *Future[T], v T, err error) bool { return f.resolve(v, err) }

// Await blocks until f resolves: for futures the caller knows will be.
func Await[T any](f *Future[T]) (T, error) { return f.wait() }

// RunCallbacksInPlace has every future run its callbacks at once on the
// resolving goroutine, until restore is called: the engine's simulator
// runs everything on its one goroutine, so that a run follows from its
// seed. Production never calls it.
func RunCallbacksInPlace() (restore func()) {
	inPlace := func(f func()) { f() }
	callbackRunner.Store(&inPlace)
	return func() { callbackRunner.Store(nil) }
}

func (f *Future[T]) resolve(v T, err error) bool {
	f.mu.Lock()
	if f.resolved {
		f.mu.Unlock()
		return false
	}
	f.val, f.err = v, err
	f.resolved = true
	then := f.then
	f.then = nil
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
	if then != nil {
		runCallbacks(func() { then(v, err) })
	}
	return true
}

// callbackRunner, when set, runs futures' callbacks in place of a goroutine
// of their own: the simulator runs them at once, on its one goroutine, so
// that a run follows from its seed. Production never sets it.
var callbackRunner atomic.Pointer[func(func())]

func runCallbacks(f func()) {
	if run := callbackRunner.Load(); run != nil {
		(*run)(f)
		return
	}
	go f()
}

// Done is closed once the future is resolved.
func (f *Future[T]) Done() <-chan struct{} {
	if f == nil {
		return closed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		if f.resolved {
			return closed
		}
		f.done = make(chan struct{})
	}
	return f.done
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Wait blocks until the future resolves or ctx is done (then it returns
// context.Cause(ctx)); a nil ctx fails at once, resolved or not, so that
// the mistake shows on the first call. See engine.Future.Wait.
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	if ctx == nil {
		var zero T
		return zero, errNilContext
	}
	if v, ok, err := f.Result(); ok {
		return v, err
	}
	select {
	case <-f.Done():
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// Result returns the outcome without blocking: resolved is false, and v
// and err zero, while the future is unresolved.
func (f *Future[T]) Result() (v T, resolved bool, err error) {
	if f == nil {
		return v, true, errNilFuture
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.resolved {
		return v, false, nil
	}
	return f.val, true, f.err
}

// Then arranges for fn to run once with the outcome, on a goroutine of its
// own (see engine.Future.Then; the engine does not count these
// goroutines). A nil fn is no callback: nothing runs. A nil future's fn
// runs with an error wrapping ErrInvalidRequest.
func (f *Future[T]) Then(fn func(T, error)) {
	if fn == nil {
		return
	}
	if f == nil {
		var zero T
		runCallbacks(func() { fn(zero, errNilFuture) })
		return
	}
	f.mu.Lock()
	if !f.resolved {
		if before, after := f.then, fn; before != nil {
			fn = func(v T, err error) { before(v, err); after(v, err) }
		}
		f.then = fn
		f.mu.Unlock()
		return
	}
	v, err := f.val, f.err
	f.mu.Unlock()
	runCallbacks(func() { fn(v, err) })
}

// wait blocks until resolved: for futures the engine guarantees to resolve.
func (f *Future[T]) wait() (T, error) {
	<-f.Done()
	return f.val, f.err
}
