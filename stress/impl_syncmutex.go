package main

import (
	"context"
	"sync"
)

// syncMutexImpl is the in-process limit of a lock: a sync.Mutex (for rw a
// sync.RWMutex, for a semaphore a buffered channel) per lock path, shared
// by every client of one run, with no server and no request. Unlike none
// it excludes, so the checkers apply to it; a run with it says how fast a
// hot lock can be passed among the goroutines of one process at all.
type syncMutexImpl struct{}

func (syncMutexImpl) Name() string         { return "syncmutex" }
func (syncMutexImpl) Excludes() bool       { return true }
func (syncMutexImpl) Backend() backendKind { return noBackend }

func (syncMutexImpl) Supports(workload string, faults faultSet) error {
	switch workload {
	case "uncontended", "contended", "paths", "rw", "semaphore":
	default:
		return unsupported("syncmutex", "-workload "+workload, "it is a lock of one process with no server: no queue of nodes, no election, no second process")
	}
	if len(faults) > 0 {
		return unsupported("syncmutex", "-faults "+faults.String(), "it has no server, connection or session to fault")
	}
	return nil
}

// syncLocks are the run's locks by path: every client opened in one
// process shares them, as every client of a lock service shares its
// server.
var syncLocks struct {
	sync.Mutex
	mu  map[string]*syncMutexLocker
	rw  map[string]*sync.RWMutex
	sem map[string]chan struct{}
}

func (syncMutexImpl) Open(context.Context, openOptions) (client, error) {
	return syncMutexClient{}, nil
}

type syncMutexClient struct{}

func (syncMutexClient) Mutex(path string) (locker, error) {
	return syncLock(&syncLocks.mu, path, func() *syncMutexLocker { return &syncMutexLocker{} }), nil
}

func (syncMutexClient) RWMutex(path string) (rwLocker, error) {
	return syncRW{syncLock(&syncLocks.rw, path, func() *sync.RWMutex { return &sync.RWMutex{} })}, nil
}

func (syncMutexClient) Semaphore(path string, n int) (locker, error) {
	return syncSemaphore(syncLock(&syncLocks.sem, path, func() chan struct{} { return make(chan struct{}, n) })), nil
}

// syncLock is the lock of path in m, made by mk the first time.
func syncLock[T any](m *map[string]T, path string, mk func() T) T {
	syncLocks.Lock()
	defer syncLocks.Unlock()
	if *m == nil {
		*m = map[string]T{}
	}
	l, ok := (*m)[path]
	if !ok {
		l = mk()
		(*m)[path] = l
	}
	return l
}

func (syncMutexClient) Requests() int64 { return 0 }
func (syncMutexClient) Close() error    { return nil }

// syncMutexLocker is a sync.Mutex; its Acquire does not heed a context
// that ends while it waits (sync.Mutex cannot), but a holder's hold is
// bounded by the workload, so a waiter is never left for long.
type syncMutexLocker struct{ mu sync.Mutex }

func (l *syncMutexLocker) Acquire(ctx context.Context) (held, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	return syncHeld{l.mu.Unlock}, nil
}

type syncRW struct{ m *sync.RWMutex }

func (s syncRW) Reader() locker { return syncLockFunc{s.m.RLock, s.m.RUnlock} }
func (s syncRW) Writer() locker { return syncLockFunc{s.m.Lock, s.m.Unlock} }

type syncLockFunc struct{ lock, unlock func() }

func (l syncLockFunc) Acquire(ctx context.Context) (held, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.lock()
	return syncHeld{l.unlock}, nil
}

// syncSemaphore is a buffered channel: a send takes a lease, a receive
// gives one back.
type syncSemaphore chan struct{}

func (s syncSemaphore) Acquire(ctx context.Context) (held, error) {
	select {
	case s <- struct{}{}:
		return syncHeld{func() { <-s }}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type syncHeld struct{ unlock func() }

func (syncHeld) Token() (int64, bool)  { return 0, false }
func (syncHeld) Lost() <-chan struct{} { return nil }
func (h syncHeld) Release(context.Context) error {
	h.unlock()
	return nil
}
