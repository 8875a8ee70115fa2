package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// An impl is one lock library under test. An in-process impl (inProcess)
// runs behind the small interfaces below, so that every workload, checker
// and fault runs the same way for each; a spawned impl (spawner, see
// impl_peers.go) runs the workload's cycles in a process of its own and
// reports them. A recipe an impl does not have is reported as an
// *UnsupportedError (exit code 2), never a panic.
type impl interface {
	Name() string
	// Excludes is false for an impl that takes no lock on purpose (rawzk):
	// the exclusion checkers do not apply to it.
	Excludes() bool
	// Backend is the server the impl talks to.
	Backend() backendKind
	// Supports reports, before anything starts, whether the impl can run
	// this workload under these faults.
	Supports(workload string, faults faultSet) error
}

// inProcess is an impl whose workers are goroutines of the harness.
type inProcess interface {
	impl
	// Open connects one client to servers (which may be fault proxies).
	Open(ctx context.Context, o openOptions) (client, error)
}

// backendKind names the server an impl needs.
type backendKind int

const (
	noBackend        backendKind = iota // none and syncmutex: no server
	zookeeperBackend                    // ZooKeeper, embedded or -servers
	redisBackend                        // a redis-server the harness starts
)

type openOptions struct {
	Servers        []string
	SessionTimeout time.Duration
	MaxInFlight    int
	Linger         time.Duration // turnstile: Cohort.Linger
	Marker         []byte        // written into every lock node, so orphans are recognisable as ours
	Logger         *slog.Logger
	Workers        int           // concurrent callers; Redis opens a connection each
	RedisTTL       time.Duration // the Redis lock's lease
	RedisRetry     time.Duration // how long a Redis waiter sleeps between tries
	Cold           bool          // the keys workload: every lock path is new (rawzk makes it a container first)
}

// nodeCounter is a client that knows how many lock nodes a holder and
// its waiters make on one path: a client whose waiters of one lock queue
// inside it, behind a node of its own (turnstile's lock cohorting), makes
// fewer than one each.
type nodeCounter interface {
	NodesFor(waiters int) int
}

// cohortReporter is a client that passes locks among its own waiters
// (turnstile's lock cohorting) and says how it went.
type cohortReporter interface {
	Cohort() string
}

// waitCounter is a client that counts the waits it has armed, whether or
// not each one asked the server for a watch (turnstile waits on its own
// nodes without one). The waiters workload reads it for its plateau.
type waitCounter interface {
	Waits() int64
}

type client interface {
	Mutex(path string) (locker, error)
	RWMutex(path string) (rwLocker, error)
	Semaphore(path string, n int) (locker, error)
	// Requests is the number of ZooKeeper requests the client counted itself
	// sending, or -1 when it does not count them.
	Requests() int64
	Close() error
}

// locker acquires one kind of hold on one lock path. It is safe for
// concurrent use by many workers.
type locker interface {
	// Acquire blocks until the hold is granted, ctx ends, or it fails.
	Acquire(ctx context.Context) (held, error)
}

// asyncLocker is implemented by lockers that can queue a waiter without a
// goroutine of the caller's: the waiters workload then holds thousands of
// waiters with none. cb runs once, on a goroutine that is not the caller's.
type asyncLocker interface {
	AcquireAsync(ctx context.Context, cb func(held, error))
}

type rwLocker interface {
	Reader() locker
	Writer() locker
}

// held is a granted hold.
type held interface {
	// Token is the fencing token of the grant; ok is false when the impl has
	// none.
	Token() (token int64, ok bool)
	// Lost is closed when the holder must stop touching the resource; nil
	// when the impl cannot tell.
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// UnsupportedError says that an impl cannot run a workload or fault. The
// command exits with code 2 when the only impl asked for reports one.
type UnsupportedError struct {
	Impl, What, Why string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s does not support %s: %s", e.Impl, e.What, e.Why)
}

func unsupported(impl, what, why string) error {
	return &UnsupportedError{Impl: impl, What: what, Why: why}
}

func isUnsupported(err error) bool {
	var u *UnsupportedError
	return errors.As(err, &u)
}

// implByName knows every impl -impl names, including the hidden "none".
func implByName(name string) (impl, error) {
	switch name {
	case "turnstile":
		return turnstileImpl{}, nil
	case "turnstile-fifo":
		return turnstileImpl{strictFIFO: true}, nil
	case "turnstile-delpaths":
		return turnstileImpl{deletePaths: true}, nil
	case "turnstile-sqlfence":
		return turnstileImpl{sqlFence: true}, nil
	case "gozk":
		return gozkImpl{}, nil
	case "rawzk":
		return rawzkImpl{}, nil
	case "redis":
		return redisImpl{}, nil
	case "curator":
		return curatorImpl{}, nil
	case "kazoo":
		return kazooImpl{}, nil
	case "syncmutex":
		return syncMutexImpl{}, nil
	case "none":
		return noneImpl{}, nil
	}
	return nil, fmt.Errorf("unknown -impl %q (want %s, all, or a comma-separated list)", name, strings.Join(allImpls, ", "))
}

// allImpls is what -impl all runs, in order; turnstile first so the ratios
// can be printed against it.
var allImpls = []string{"turnstile", "gozk", "curator", "kazoo", "redis", "rawzk"}

// closedChan reports whether c is closed, without blocking; a nil channel
// is never closed.
func closedChan(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}
