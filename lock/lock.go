// Package lock holds what users of turnstile hold: fair distributed locks on
// ZooKeeper, served asynchronously by an engine.Engine. Every recipe offers
// Acquire (a future, returned at once), Lock (blocking, bounded by its
// context) and TryAcquire (fails at once with engine.ErrWouldBlock when it would
// have to wait).
//
// Node names follow Apache Curator 5, so Curator (Java) and kazoo (Python)
// clients on the same lock path exclude turnstile's and are excluded by it.
package lock

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/future"
	"github.com/turnstile-go/turnstile/queue"
)

// Lease is a granted lock; see engine.Lease.
type Lease = engine.Lease

// Option configures a recipe.
type Option func(*options)

type options struct {
	owner      string
	revocable  bool
	strictFIFO bool
}

// WithOwner sets the caller-chosen id written into the lock node's data, next
// to the host name and process id, so that an operator reading the node in
// zkCli sees who holds or waits.
func WithOwner(id string) Option { return func(o *options) { o.owner = id } }

// nodeData is what turnstile writes into its lock nodes: who it is.
type nodeData struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Owner string `json:"owner,omitempty"`
}

// WithRevocation makes every lease of the recipe revocable: the holder's
// Lease.Revoked channel closes when someone asks it to let go (Revoke, or
// Curator's Revoker on the same node). Letting go stays the holder's choice.
// It costs one extra request per grant (a data watch on the holder's node).
func WithRevocation() Option { return func(o *options) { o.revocable = true } }

// WithStrictFIFO makes every acquisition of the recipe queue a node of its
// own on ZooKeeper, granted strictly in the order of the nodes across every
// client. Without it, the mutexes and write locks of one engine pass a
// granted lock among that engine's waiters without a request, a bounded
// number of times, before it goes back to the other clients (lock
// cohorting: see engine.CohortConfig, which also turns it off for a whole
// engine). Readers and semaphore leases always queue on ZooKeeper.
func WithStrictFIFO() Option { return func(o *options) { o.strictFIFO = true } }

// Acquirer is what every recipe offers, and what MultiLock combines.
type Acquirer interface {
	// Path is the lock path.
	Path() string
	// Acquire asks for the lock and returns at once.
	Acquire(ctx context.Context) *engine.Future[*Lease]
}

// request is the engine request of one acquisition of a recipe. The
// exclusive ones (a mutex, a semaphore's guard, a writer) may pass among
// the engine's waiters, unless WithStrictFIFO.
func (o options) request(path string, kind queue.Kind, decide engine.Decider, data []byte, try bool) engine.Request {
	exclusive := kind == queue.KindMutex || kind == queue.KindWrite
	return engine.Request{Path: path, Kind: kind, Decide: decide, Data: data, TryOnly: try, Revocable: o.revocable,
		Cohort: exclusive && !o.strictFIFO}
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil { // a nil option sets nothing
			opt(&o)
		}
	}
	return o
}

func (o options) data() []byte {
	host, _ := os.Hostname()
	b, _ := json.Marshal(nodeData{Host: host, PID: os.Getpid(), Owner: o.owner})
	return b
}

// wait blocks until f resolves. The engine resolves an acquisition's future
// when the context given to Acquire ends, so waiting on ctx as well would
// only risk dropping a lease granted at the same moment.
func wait[T any](f *engine.Future[T]) (T, error) {
	<-f.Done()
	v, _, err := f.Result()
	return v, err
}

// newFuture is an unresolved future and the function that resolves it.
func newFuture[T any]() (*engine.Future[T], func(T, error) bool) {
	f, resolve := future.New[T]()
	return (*engine.Future[T])(f), resolve
}

// errNil is what a call on a nil recipe returns: a pointer no constructor
// made, which names no lock to acquire. (A nil engine or context is
// reported by the engine the same way.)
func errNil(recipe string) error {
	return fmt.Errorf("%w: nil *lock.%s", engine.ErrInvalidRequest, recipe)
}

// The engine's own words for a nil engine or context, for the calls that
// refuse them before they reach it.
var (
	errNilEngine  = fmt.Errorf("%w: nil *engine.Engine", engine.ErrInvalidRequest)
	errNilContext = fmt.Errorf("%w: nil context.Context", engine.ErrInvalidRequest)
)

// invalidError is bad input refused with a sentinel of the package's own:
// errors.Is finds both the sentinel and engine.ErrInvalidRequest, and the
// message is the sentinel's with the detail.
type invalidError struct {
	sentinel error
	msg      string
}

func (e *invalidError) Error() string   { return e.msg }
func (e *invalidError) Unwrap() []error { return []error{e.sentinel, engine.ErrInvalidRequest} }

func invalid(sentinel error, format string, args ...any) error {
	return &invalidError{sentinel: sentinel, msg: sentinel.Error() + ": " + fmt.Sprintf(format, args...)}
}
