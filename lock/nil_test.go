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
	sem, err := lock.NewSemaphore(nil, p, 2)
	if err != nil {
		t.Fatal(err)
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
		{"NewSemaphore(nil)", "nil *engine.Engine", func() error { _, err := sem.Lock(ctx); return err }},
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
