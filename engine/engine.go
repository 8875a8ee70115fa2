// Package engine is turnstile's asynchronous lock engine: one ZooKeeper
// session, one event-loop goroutine that steps a pure state machine per
// contender, and a bounded executor that turns the machines' effects into
// pipelined ZooKeeper requests. Acquisitions resolve through futures;
// nothing blocks a goroutine per waiter.
//
// Users normally reach it through package lock, which supplies the recipes
// (mutex, read-write lock, semaphore) as Deciders.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/batch"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/engine/internal/serverconn"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// Decider is a recipe: from one listing of the lock path, does self hold,
// and if not, which one child must it wait for. self is the contender's own
// node name.
//
// The engine parses and sorts each listing once, into l, and hands the same
// l to every contender that waited for it: thousands on a busy path. A
// Decider runs on the loop goroutine, so it must be quick, O(log n) at most
// (l's predicates are), and must neither change l nor keep it.
type Decider func(l *queue.Listing, self string) queue.Decision

// Request describes one acquisition.
type Request struct {
	Path    string     // the lock path; its children are the contenders
	Kind    queue.Kind // the kind of node to make: what Decide sees it as
	Decide  Decider    // the recipe
	Data    []byte     // the node's data, e.g. who the holder is
	TryOnly bool       // fail with ErrWouldBlock instead of waiting
	// Seq, when not empty, makes the node non-sequential with this
	// ten-digit number after the kind's marker: a downgraded read lock
	// takes its writer's place in the queue this way.
	Seq string
	// Revocable: while held, watch the node's data for a revocation request
	// (lock.Revoke writes it) and close the lease's Revoked channel when one comes.
	Revocable bool
	// FailOnExpiry: fail with ErrSessionExpired, rather than queue again
	// under the new session, when the session expires before the grant,
	// whatever Config.FailOnExpiry says. A recipe whose node may only be
	// made under a guard it held in the old session (a semaphore's lease)
	// sets it and starts again from the guard.
	FailOnExpiry bool
	// Cohort lets the lease pass, without a request, among acquisitions of
	// this engine that wait for the same lock: those with Cohort set and
	// the same Path, Kind, Data and FailOnExpiry (lock cohorting; see
	// CohortConfig). Passing an exclusive lease from one holder to the next
	// keeps one holder, whatever the recipe, so it is allowed for exclusive
	// kinds of node only (a mutex's, a writer's), and every Request with
	// Cohort set and a given Path and Kind must be of one recipe. It is
	// ignored for TryOnly, Seq, Revocable requests, and when the engine's
	// Config.Cohort.StrictFIFO is set.
	Cohort bool
}

// Engine runs acquisitions on one ZooKeeper session: one goroutine, its
// loop, takes every request, reply and watch event of every lock and
// decides what to send next, so that a waiter costs a node, a watch and a
// future, not a goroutine. A nil *Engine, or one Start did not return, is
// closed: its calls report ErrInvalidRequest, its counters zero.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	conn  zkConn
	rt    runtime
	inbox *inbox
	count counters
	batch *batch.Sender // sends batches and cold ops as multis (engine/internal/batch)

	states   *stateWatch  // the state followers see (see state.go)
	watchdog *watchdog    // until when the server cannot have expired the session
	lastZxid atomic.Int64 // the greatest zxid seen in a reply header
	gauges   gauges       // for monitoring; see gauges.go
	// servers are the connections to the servers, which feed trust
	// (engine/internal/serverconn).
	servers *serverconn.Conns

	// wg counts the goroutines of the engine's own work, but the loop:
	// requests and direct reads. Users' callbacks are not counted (see
	// Close). Every Add happens before the loop exits, or under mu while
	// not closed, so never concurrently with Close's Wait.
	wg           sync.WaitGroup
	loopDone     chan struct{}
	firstSession chan struct{} // closed at the first session
	closeOnce    sync.Once

	mu     sync.Mutex // orders user commands against the loop's exit
	closed bool

	// Owned by the loop goroutine.
	core   *core.Core
	timers map[uint64]timer // armed for the core, by its ids
	// What the core's decisions are about, by acquisition id (the core
	// names acquisitions): the leases admitted and not yet dropped, the
	// releases waiting for their outcome. An acquisition not yet resolved
	// is the core's to keep: its Ref, the command, comes back in its
	// NoteAcquired, and a million waiting cost no map here.
	leases    map[uint64]*Lease
	releasing map[uint64]*releaseCmd
	// cancels names the acquisitions' cancel groups by their contexts,
	// and follows those the core follows.
	cancels cancelContexts
	// cohortStats is what lock cohorting did, as the loop last read it
	// from the core, before it carried out what the core decided (see
	// CohortStats).
	cohortStats cohortGauges
}

// acquireCmd and releaseCmd are the users' commands as posted to the
// loop: the core's command, and what the runtime keeps for it. The loop
// hands the core a pointer into them (see step).
type acquireCmd struct {
	ctx context.Context
	req core.Acquire
	// fut is the acquisition's future: the command and its future are
	// one allocation, read together at the grant.
	fut Future[*Lease]
}

type releaseCmd struct {
	lease *Lease
	fut   *Future[struct{}]
	req   core.Release
}

// Start connects to ZooKeeper and starts the loop. It returns once a session
// is established, or fails with ErrUnreachable when no server answers
// within cfg.ConnectTimeout (or ctx ends).
func Start(ctx context.Context, cfg Config) (*Engine, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := newEngine(cfg)
	conn, zkEv, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithEventCallback(e.onZKEvent),
		zk.WithDialer(e.servers.Dial),
		zk.WithHostProvider(e.servers.Hosts()),
		zk.WithLogger(serverconn.Logger(e.log)),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	e.conn = conn
	e.rt = runtime{
		newID:     nodename.NewID,
		goroutine: func(f func()) { e.wg.Add(1); go func() { defer e.wg.Done(); f() }() },
		afterFunc: realAfterFunc,
		afterDone: context.AfterFunc,
		closeConn: func() {
			conn.Close()
			// The client's goroutines have exited once its event channel closes.
			for range zkEv {
			}
			e.servers.Close()
		},
	}
	go e.loop()

	timer := time.NewTimer(cfg.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-e.firstSession:
		if err = e.authenticate(ctx); err == nil {
			e.servers.CheckTick(conn.Server(), e.watchdog.marginNow())
			return e, nil
		}
	case <-timer.C:
		err = fmt.Errorf("%w: no session with %v within %v", ErrUnreachable, cfg.Servers, cfg.ConnectTimeout)
		if last := e.servers.DialErr(); last != nil {
			err = fmt.Errorf("%w: last dial: %w", err, last)
		}
	case <-ctx.Done():
		err = fmt.Errorf("%w: %w", ErrUnreachable, context.Cause(ctx))
	}
	e.Close()
	return nil, err
}

// newEngine makes an engine with its core, not yet connected.
func newEngine(cfg Config) *Engine {
	e := &Engine{
		cfg:          cfg,
		log:          cfg.Logger,
		inbox:        newInbox(),
		states:       newStateWatch(),
		loopDone:     make(chan struct{}),
		firstSession: make(chan struct{}),
		timers:       make(map[uint64]timer),
		leases:       make(map[uint64]*Lease),
		releasing:    make(map[uint64]*releaseCmd),
	}
	e.watchdog = newWatchdog(monotonicClock(), cfg.SessionTimeout, cfg.LostMargin, func(lapsed, expired bool, margin time.Duration) {
		e.inbox.Put(input.TrustChanged{Lapsed: lapsed, Expired: expired, Margin: margin})
	})
	e.servers = serverconn.New(serverconn.Config{Servers: cfg.Servers, Dialer: cfg.Dialer, DialTimeout: cfg.dialTimeout,
		ProbeGrace: cfg.probeGrace, Log: cfg.Logger, Trust: e.watchdog, Zxid: &e.lastZxid})
	e.rt.newID = nodename.NewID
	e.batch = batch.New(batch.Config{Exec: e.exec, ACL: e.cfg.aclOf, Zxid: &e.lastZxid, Ops: &e.count.n,
		Containers: &e.count.containers, Multis: &e.count.multis, Batched: &e.count.batched})
	e.core = core.New(core.Config{
		CloseTimeout: cfg.CloseTimeout,
		MaxInFlight:  cfg.MaxInFlight,
		ACLBytes:     func(p string) int { return aclSize(cfg.aclOf(p)) },
		FailOnExpiry: cfg.FailOnExpiry,
		NoPin:        cfg.NoPin,
		Prune:        cfg.DeleteLockPaths,
		PinIdle:      core.DefaultPinIdle,
		Observe:      cfg.Observer != nil,
		Root:         cfg.Root,
		NewID:        func() string { return e.rt.newID() },
		Debug:        func() bool { return e.log.Enabled(context.Background(), slog.LevelDebug) },
		CancelErrs:   []error{context.Canceled, context.DeadlineExceeded},
		Cohort: core.CohortConfig{StrictFIFO: cfg.Cohort.StrictFIFO, MaxPasses: cfg.Cohort.MaxPasses, MaxHold: cfg.Cohort.MaxHold,
			Linger: cfg.Cohort.Linger, YieldToOthers: cfg.Cohort.YieldToOthers},
	}, watchdogAdmitter{e})
	return e
}

// Stats returns the number of requests sent so far, by kind.
func (e *Engine) Stats() Stats { return e.or().count.snapshot() }

// LostMargin is how long, at the least, after a lease's Lost() has closed
// (its trust deadline passed) the server can expire the session and grant
// its locks to another client: Config.LostMargin, scaled to the session
// timeout the server granted once a handshake has told it. It is the time
// a holder has to stop touching what its lease guards; see
// Lease.TrustedUntil. It is 0 for an engine Start did not return.
func (e *Engine) LostMargin() time.Duration {
	if e.unstarted() {
		return 0
	}
	return e.watchdog.marginNow()
}

// SessionID is the current ZooKeeper session's id.
func (e *Engine) SessionID() int64 {
	if e.unstarted() {
		return 0
	}
	return e.conn.SessionID()
}

// Acquire asks for a lock and returns at once; the future resolves with a
// Lease once the recipe admits this contender, or with an error. req.Path
// is a path under Config.Root. Cancelling ctx before the grant resolves the
// future with context.Cause(ctx) (ctx.Err() when ctx was cancelled
// without a cause: errors.Is finds context.Canceled or
// context.DeadlineExceeded) and removes the
// contender's node; after the grant it has no effect on the lease. A
// request that cannot work resolves the future at once, before anything is
// sent, with an error wrapping ErrInvalidPath or ErrInvalidRequest (a nil
// engine or ctx included).
func (e *Engine) Acquire(ctx context.Context, req Request) *Future[*Lease] {
	if err := checkCall(e, ctx); err != nil {
		return resolvedFuture[*Lease](nil, err)
	}
	if err := req.validate(); err != nil {
		return resolvedFuture[*Lease](nil, err)
	}
	full, err := e.serverPath(req.Path)
	if err != nil {
		return resolvedFuture[*Lease](nil, err)
	}
	req.Path = full
	if ctx.Err() != nil {
		return resolvedFuture[*Lease](nil, context.Cause(ctx))
	}
	cmd := &acquireCmd{ctx: ctx, req: core.Acquire{Path: req.Path, Kind: req.Kind,
		Decide: contender.Decider(req.Decide), Data: req.Data, Seq: req.Seq, TryOnly: req.TryOnly, Revocable: req.Revocable,
		FailOnExpiry: req.FailOnExpiry, Cohort: req.Cohort}}
	if !e.post(cmd) {
		e.acquired(cmd, nil, ErrClosed)
	}
	return &cmd.fut
}

// acquired resolves an acquisition, on the loop (or on the caller's
// goroutine, refused as the engine closes).
func (e *Engine) acquired(cmd *acquireCmd, l *Lease, err error) {
	resolveFuture(&cmd.fut, l, err)
}

// release hands the loop the release of r.lease, a lease it granted.
func (e *Engine) release(r *releaseCmd) *Future[struct{}] {
	if err := r.lease.Err(); err != nil {
		e.released(r, err)
	} else if !e.post(r) {
		e.released(r, r.lease.Err())
	}
	return r.fut
}

// released resolves a release with err.
func (e *Engine) released(r *releaseCmd, err error) {
	resolveFuture(r.fut, struct{}{}, err)
}

// post hands a command to the loop; false once the engine is closed.
func (e *Engine) post(cmd any) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.inbox.Put(input.Command{Payload: cmd})
	return true
}

// Close cancels every waiter (their futures resolve with ErrClosed), loses
// and releases every held lease, deletes their nodes, closes the session and
// returns once every goroutine the engine runs for its own work (the loop,
// requests, reads) has exited. It is safe to call more than once, from
// several goroutines at once, and from a Then callback.
//
// Close does not wait for the callbacks given to Future.Then: they are the
// caller's code, on goroutines of their own, and waiting for them would
// hang a callback that calls Close (it would wait for itself). Callbacks of
// the futures Close resolves may run after it returns. It must not be
// called from the Observer, which runs on the loop Close waits for.
//
// Close always returns nil; the error result makes an Engine an
// io.Closer. Nothing it leaves undone is the caller's to act on: a node
// whose deletion was not answered within CloseTimeout goes with the
// session, which Close ends (or, with no server reachable, which the
// server expires), and how each acquisition and lease ended is told by
// its own future, Lost channel and Err.
func (e *Engine) Close() error {
	if e.unstarted() {
		return errNilEngine
	}
	e.closeOnce.Do(func() { e.post(&core.Close{}) })
	<-e.loopDone
	e.wg.Wait()
	return nil
}
