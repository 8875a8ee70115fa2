package lock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// nilCall runs call and returns its error, or the error its panic carries
// when the panic is a runtime error (a bare nil dereference): a test of a
// nil argument demands an error wrapping engine.ErrInvalidRequest that
// names what was nil.
func nilCall(t *testing.T, call func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			if re, ok := p.(runtime.Error); ok {
				err = re
				return
			}
			t.Fatalf("panic: %v", p)
		}
	}()
	return call()
}

func checkNilError(t *testing.T, err error, names string) {
	t.Helper()
	if !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), names) {
		t.Errorf("got %v, want an error wrapping ErrInvalidRequest naming %q", err, names)
	}
}

// A nil engine, a nil recipe, a nil context or a nil lease fail with
// engine.ErrInvalidRequest naming what was nil, never with a nil
// dereference. (Failing first: before, each of these died with "invalid
// memory address or nil pointer dereference".)
func TestNilArguments(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, engine.Config{})
	p := lockRoot(t) + "/nil"
	// NewSemaphore has an error to return: it refuses a nil engine itself.
	if _, err := lock.NewSemaphore(nil, p, 2); !errors.Is(err, engine.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil *engine.Engine") {
		t.Errorf("NewSemaphore(nil): %v", err)
	}
	var nilCtx context.Context
	ml, err := lock.NewMultiLock(lock.NewMutex(eng, p+"/a"), lock.NewMutex(eng, p+"/b"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := lock.NewMutex(eng, p+"/c").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, names string
		call        func() error
	}{
		{"NewMutex(nil).Lock", "nil *engine.Engine", func() error { _, err := lock.NewMutex(nil, p).Lock(ctx); return err }},
		{"NewMutex(nil).Acquire", "nil *engine.Engine", func() error { _, err := lock.NewMutex(nil, p).Acquire(ctx).Wait(ctx); return err }},
		{"NewMutex(nil).TryAcquire", "nil *engine.Engine", func() error { _, err := lock.NewMutex(nil, p).TryAcquire(ctx); return err }},
		{"NewRWMutex(nil) read", "nil *engine.Engine", func() error { _, err := lock.NewRWMutex(nil, p).Reader().Lock(ctx); return err }},
		{"NewRWMutex(nil) write", "nil *engine.Engine", func() error { _, err := lock.NewRWMutex(nil, p).Writer().Lock(ctx); return err }},
		{"NewReentrantMutex(nil)", "nil *engine.Engine", func() error { _, err := lock.NewReentrantMutex(nil, p).Lock(ctx, 1); return err }},
		{"NewSemaphoreMutex(nil)", "nil *engine.Engine", func() error { _, err := lock.NewSemaphoreMutex(nil, p).TryAcquire(ctx); return err }},
		{"Participants(nil)", "nil *engine.Engine", func() error { _, err := lock.Participants(ctx, nil, p); return err }},
		{"Revoke(nil)", "nil *engine.Engine", func() error { return lock.Revoke(ctx, nil, p+"/x") }},
		{"nil Mutex", "nil *lock.Mutex", func() error { _, err := (*lock.Mutex)(nil).Lock(ctx); return err }},
		{"nil Mutex try", "nil *lock.Mutex", func() error { _, err := (*lock.Mutex)(nil).TryAcquire(ctx); return err }},
		{"nil RWMutex reader", "nil *lock.ReadLock", func() error { _, err := (*lock.RWMutex)(nil).Reader().Lock(ctx); return err }},
		{"nil RWMutex writer", "nil *lock.WriteLock", func() error { _, err := (*lock.RWMutex)(nil).Writer().Lock(ctx); return err }},
		{"nil ReadLock", "nil *lock.ReadLock", func() error { _, err := (*lock.ReadLock)(nil).TryAcquire(ctx); return err }},
		{"nil WriteLock", "nil *lock.WriteLock", func() error { _, err := (*lock.WriteLock)(nil).Acquire(ctx).Wait(ctx); return err }},
		{"nil RWMutex downgrade", "nil *lock.RWMutex", func() error { _, err := (*lock.RWMutex)(nil).Downgrade(ctx, nil).Wait(ctx); return err }},
		{"nil ReentrantMutex", "nil *lock.ReentrantMutex", func() error { _, err := (*lock.ReentrantMutex)(nil).Lock(ctx, 1); return err }},
		{"nil ReentrantMutex release", "nil *lock.ReentrantMutex", func() error { return (*lock.ReentrantMutex)(nil).Release(ctx, 1) }},
		{"nil Semaphore", "nil *lock.Semaphore", func() error { _, err := (*lock.Semaphore)(nil).Lock(ctx); return err }},
		{"nil MultiLock", "nil *lock.MultiLock", func() error { _, err := (*lock.MultiLock)(nil).Lock(ctx); return err }},
		{"nil MultiLock try", "nil *lock.MultiLock", func() error { _, err := (*lock.MultiLock)(nil).TryAcquire(ctx); return err }},
		{"nil Lease", "nil *engine.Lease", func() error { return (*lock.Lease)(nil).Release(ctx) }},
		{"Lock(nil ctx)", "nil context.Context", func() error { _, err := lock.NewMutex(eng, p).Lock(nilCtx); return err }},
		{"strict Lock(nil ctx)", "nil context.Context", func() error { _, err := lock.NewMutex(eng, p, lock.WithStrictFIFO()).Lock(nilCtx); return err }},
		{"Reader Lock(nil ctx)", "nil context.Context", func() error { _, err := lock.NewRWMutex(eng, p).Reader().Lock(nilCtx); return err }},
		{"Semaphore Lock(nil ctx)", "nil context.Context", func() error { _, err := lock.NewSemaphoreMutex(eng, p).Lock(nilCtx); return err }},
		{"Participants(nil ctx)", "nil context.Context", func() error { _, err := lock.Participants(nilCtx, eng, p); return err }},
		{"Lease Release(nil ctx)", "nil context.Context", func() error { return lease.Release(nilCtx) }},
		{"MultiLease Release(nil ctx)", "nil context.Context", func() error { return held.Release(nilCtx) }},
		{"nil MultiLease", "nil *lock.MultiLease", func() error { return (*lock.MultiLease)(nil).Release(ctx) }},
	} {
		t.Run(c.name, func(t *testing.T) { checkNilError(t, nilCall(t, c.call), c.names) })
	}
	// A Release refused for its nil context leaves every lease held.
	for _, l := range append(held.Leases(), lease) {
		if !l.Held() {
			t.Errorf("%s no longer held after a Release with a nil context", l.Path())
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Errorf("MultiLease Release after the refused one: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Errorf("Lease Release after the refused one: %v", err)
	}
	if got := (*lock.ReentrantMutex)(nil).Count(1); got != 0 {
		t.Errorf("Count on a nil ReentrantMutex: %d", got)
	}
	if got := (*lock.RWMutex)(nil).Owner(); got != nil {
		t.Errorf("Owner of a nil RWMutex: %v", got)
	}
}

// The rest of the recipes' edges: a nil option sets nothing; Path on a nil
// recipe is ""; the package's own refusals (ErrInvalidOwner,
// ErrInvalidLeases, ErrMultiLock) wrap engine.ErrInvalidRequest too;
// Downgrade, a ReentrantMutex and a MultiLock refuse a nil context or
// lease, and zero values fail or report nothing held instead of dying.
// (Failing first: the nil option, the Paths, the zero values and
// ReentrantMutex's zero value died of nil dereferences or a close of a nil
// channel; the refusals did not wrap ErrInvalidRequest, and Downgrade
// reported ErrNotWriteLease for a nil context.)
func TestNilOptionsAndZeroValues(t *testing.T) {
	ctx := context.Background()
	eng := startEngine(t, engine.Config{})
	p := lockRoot(t)
	var nilCtx context.Context
	l, err := lock.NewMutex(eng, p+"/opt", nil, lock.WithOwner("o"), nil).Lock(ctx)
	if err != nil {
		t.Fatalf("a Mutex with nil options: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Error(err)
	}
	for _, a := range []interface{ Path() string }{(*lock.Mutex)(nil), (*lock.RWMutex)(nil), (*lock.ReadLock)(nil),
		(*lock.WriteLock)(nil), (*lock.ReentrantMutex)(nil), new(lock.ReentrantMutex), (*lock.Semaphore)(nil)} {
		if got := a.Path(); got != "" {
			t.Errorf("Path of a nil %T: %q", a, got)
		}
	}
	if (*lock.MultiLock)(nil).Paths() != nil || (*lock.MultiLease)(nil).Leases() != nil {
		t.Error("a nil MultiLock's paths or MultiLease's leases")
	}
	sem, err := lock.NewSemaphore(eng, p+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	_, semErr := lock.NewSemaphore(eng, p+"/sem", 0)
	_, nErr := sem.AcquireN(ctx, 3).Wait(ctx)
	_, multiErr := lock.NewMultiLock()
	_, ownerErr := lock.NewReentrantMutex(eng, p+"/re").Lock(ctx, nil)
	for _, c := range []struct {
		err, sentinel error
	}{{semErr, lock.ErrInvalidLeases}, {nErr, lock.ErrInvalidLeases}, {multiErr, lock.ErrMultiLock}, {ownerErr, lock.ErrInvalidOwner}} {
		if !errors.Is(c.err, c.sentinel) || !errors.Is(c.err, engine.ErrInvalidRequest) {
			t.Errorf("got %v, want %v wrapping ErrInvalidRequest too", c.err, c.sentinel)
		}
	}
	rw := lock.NewRWMutex(eng, p+"/rw")
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	re := lock.NewReentrantMutex(eng, p+"/re")
	if _, err := re.Lock(ctx, 1); err != nil {
		t.Fatal(err)
	}
	defer re.Release(ctx, 1)
	for _, c := range []struct {
		name, names string
		call        func() error
	}{
		{"Downgrade(nil ctx)", "nil context.Context", func() error { _, err := rw.Downgrade(nilCtx, w).Wait(ctx); return err }},
		{"Downgrade(nil lease)", "nil *engine.Lease", func() error { _, err := rw.Downgrade(ctx, nil).Wait(ctx); return err }},
		{"ReentrantMutex held, Lock(nil ctx)", "nil context.Context", func() error { _, err := re.Lock(nilCtx, 1); return err }},
		{"ReentrantMutex Release(nil ctx)", "nil context.Context", func() error { return re.Release(nilCtx, 1) }},
		{"zero ReentrantMutex", "nil *lock.ReentrantMutex", func() error { _, err := new(lock.ReentrantMutex).Lock(ctx, 1); return err }},
		{"zero MultiLock", "no locks", func() error { _, err := new(lock.MultiLock).Lock(ctx); return err }},
		{"zero MultiLease", "no acquisition", func() error { return new(lock.MultiLease).Release(ctx) }},
		{"MultiLock Lock(nil ctx)", "nil context.Context", func() error {
			ml, err := lock.NewMultiLock(lock.NewMutex(eng, p+"/m1"))
			if err != nil {
				return err
			}
			_, err = ml.Lock(nilCtx)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) { checkNilError(t, nilCall(t, c.call), c.names) })
	}
	if re.Count(1) != 1 || !w.Held() {
		t.Error("a refused call changed what is held")
	}
	select {
	case <-new(lock.MultiLease).Lost():
	default:
		t.Error("a zero MultiLease's Lost is open")
	}
}
