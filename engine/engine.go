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
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/semaphore"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/queue"
)

// Decision is a recipe's verdict on one listing of the lock path.
type Decision struct {
	Holds   bool   // self holds the lock
	Watch   string // when !Holds: the one child whose departure may let self in
	Missing bool   // self is not among the children
	// Next: when !Holds, self holds as soon as Watch, having held the lock,
	// is gone: Watch is exclusive, so whatever was ahead of it was gone
	// when it was granted, and every node of this listing between Watch
	// and self lets self by (see queue.Decision.Next). When Watch is a
	// holder of this same engine releasing its lock, self is then granted
	// on the deletion's reply, without listing again: the local handoff.
	//
	// The engine hands over only when, besides Next, two things hold, and
	// lists again otherwise (listing again is always safe):
	//   - the departing node is of an exclusive kind by its name (a mutex
	//     or write node, kazoo's "__lock__" included), never a read node,
	//     whose fellow readers may still hold;
	//   - no contender of this engine with a borrowed sequence number
	//     (Request.Seq: a downgrade's read node) is alive on the path. Such
	//     a node takes a number at or below its writer's, so it can sit
	//     ahead of self without self's listing showing it: its create may
	//     have been queued, in flight, or sent after that listing.
	// A Decider sets Next only if it knows that, by its recipe and the
	// departing node's, nothing else can keep self out; when in doubt it
	// leaves it false.
	Next bool
	// WatchChildren: when !Holds, any child's departure may let self in, so
	// watch the lock path's children instead of one node. Only for recipes
	// where a single waiter watches at a time (a semaphore's lease path,
	// guarded by its mutex), or it would wake a herd.
	WatchChildren bool
}

// Decider is a recipe: from one listing of the lock path, does self hold,
// and if not, which one child must it wait for. self is the contender's own
// node name.
//
// The engine parses and sorts each listing once, into l, and hands the same
// l to every contender that waited for it: thousands on a busy path. A
// Decider runs on the loop goroutine, so it must be quick, O(log n) at most
// (l's predicates are), and must neither change l nor keep it.
type Decider func(l *queue.Listing, self string) Decision

// Request describes one acquisition.
type Request struct {
	Path    string  // the lock path; its children are the contenders
	Prefix  string  // node name after the protected id, e.g. "lock-"
	Decide  Decider // the recipe
	Data    []byte  // the node's data, e.g. who the holder is
	TryOnly bool    // fail with ErrWouldBlock instead of waiting
	// Seq, when not empty, makes the node non-sequential with this
	// ten-digit number after the prefix: a downgraded read lock takes its
	// writer's place in the queue this way.
	Seq string
	// Revocable: while held, watch the node's data for a revocation request
	// (RevokeData) and close the lease's Revoked channel when one comes.
	Revocable bool
	// FailOnExpiry: fail with ErrSessionExpired, rather than queue again
	// under the new session, when the session expires before the grant,
	// whatever Config.FailOnExpiry says. A recipe whose node may only be
	// made under a guard it held in the old session (a semaphore's lease)
	// sets it and starts again from the guard.
	FailOnExpiry bool
	// Cohort lets the lease pass, without a request, among acquisitions of
	// this engine that wait for the same lock: those with Cohort set and
	// the same Path, Prefix, Data and FailOnExpiry (lock cohorting; see
	// CohortConfig). Passing an exclusive lease from one holder to the next
	// keeps one holder, whatever the recipe, so it is allowed for exclusive
	// kinds of node only (a mutex's, a writer's), and every Request with
	// Cohort set and a given Path and Prefix must be of one recipe. It is
	// ignored for TryOnly, Seq, Revocable requests, and when the engine's
	// Config.Cohort.StrictFIFO is set.
	Cohort bool
}

// RevokeData is what a revoker writes into a holder's node to ask it to
// let go: the same bytes Curator's Revoker writes, so Java and Go holders
// and revokers understand each other.
var RevokeData = []byte("__REVOKE__")

// Engine runs acquisitions on one ZooKeeper session.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	conn  zkConn
	rt    runtime
	inbox *events.Inbox
	sem   *semaphore.Weighted
	count counters
	// cohorts are the acquisitions that pass leases among themselves
	// (cohort.go); not the loop's: it never touches them.
	cohorts cohorts

	states   *stateWatch   // the state followers see (see state.go)
	trust    *sessionTrust // until when the server cannot have expired the session
	lastZxid atomic.Int64  // the greatest zxid seen in a reply header
	gauges   gauges        // for monitoring; see gauges.go

	// wg counts the goroutines of the engine's own work, but the loop:
	// requests and direct reads. Users' callbacks are not counted (see
	// Close). Every Add happens before the loop exits, or under mu while
	// not closed, so never concurrently with Close's Wait.
	wg        sync.WaitGroup
	loopDone  chan struct{}
	ready     chan struct{} // closed at the first session
	closeOnce sync.Once

	mu     sync.Mutex // orders user commands against the loop's exit
	closed bool

	// Owned by the loop goroutine.
	nextID     uint64
	contenders map[uint64]*entry
	watchers   map[string][]uint64 // node path → contenders watching it
	cancels    map[<-chan struct{}]*cancelGroup
	listings   map[string]*listing // lock path → shared listing
	parents    map[string][]uint64 // lock path → contenders awaiting its creation
	revokers   map[string]uint64   // held node path → its revocable contender
	nodes      map[string]uint64   // our own nodes' paths → their contenders
	localWatch map[string][]uint64 // our node path → our contenders waiting for it to go
	deleted    deletion            // the delete reply being handled
	backlog    []op
	writes     []op // creates and deletes waiting to be sent
	writing    int  // write requests in flight
	timers     map[uint64]timer
	nextTimer  uint64
	closeTimer uint64
	session    int64
	connected  bool
	// untrusted: the watchdog (trust) last said the server may have
	// expired the session; contenders are told so as they are made.
	untrusted bool
	everReady bool
	closing   bool
	retryAt   map[uint64]uint64 // timer id → contender to retry
	// Revocable holders whose revocation watch failed on a connection loss.
	retryRevoke []uint64
	// borrowed counts, per lock path, the live contenders whose node has a
	// borrowed sequence number (Request.Seq): while there is one, no local
	// handoff happens on the path (see Decision.Next).
	borrowed map[string]int
	// wrapLogged holds the lock paths whose wrapped sequence numbers were
	// logged (see parseListing); made on first use.
	wrapLogged map[string]struct{}
	// foreignLogged holds the children of lock paths, no lock node, that
	// were logged (see noteForeign); made on first use.
	foreignLogged map[string]struct{}
}

// entry is the loop's record of one contender.
//
// Thousands of waiters each keep one, so its size is watched: 256 bytes
// (a size class) with the contender inside.
type entry struct {
	id       uint64
	c        contender
	data     []byte // the node's data
	acquired *Future[*Lease]
	lease    *Lease
	released *Future[struct{}]
	cancelOn <-chan struct{} // the acquisition context's Done, while watched
	watching string
	attempts uint16 // consecutive parks, for backoff
	// revocable: a held lease watches its node for revocation requests;
	// revokeWatch: such a watch is registered in revokers.
	revocable, revokeWatch bool
	local                  bool // watching is one of our own nodes (see localWatch)
}

// listing coalesces getChildren requests per lock path: while one is in
// flight, contenders that need a fresher view wait for the next one, which
// is sent when the current one returns.
type listing struct {
	current []uint64
	next    []uint64
}

type acquireCmd struct {
	ctx context.Context
	req Request
	fut *Future[*Lease]
	id  uint64
}

// cancelCmd: the contexts whose Done channel is done have ended.
type cancelCmd struct {
	done <-chan struct{}
}

// cancelGroup is every live acquisition whose context ends when one Done
// channel closes: one context.AfterFunc per context, however many
// acquisitions share it (a pipeline issuing thousands under one context
// pays for one).
type cancelGroup struct {
	ctx  context.Context
	ids  map[uint64]struct{}
	stop func() bool
}

type releaseCmd struct {
	lease *Lease
	fut   *Future[struct{}]
}

type closeCmd struct{}

// trustChanged: the watchdog found that the server may have expired the
// session (lapsed), or that it answers the same session again.
type trustChanged struct{ lapsed bool }

// Start connects to ZooKeeper and starts the loop. It returns once a session
// is established, or fails with ErrUnreachable when no server answers
// within cfg.ConnectTimeout (or ctx ends).
func Start(ctx context.Context, cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := newEngine(cfg)
	conn, zkEv, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithEventCallback(e.onZKEvent),
		zk.WithDialer(e.dial),
		zk.WithLogger(zkLogger{e}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	e.conn = conn
	e.rt = runtime{
		newID:     queue.NewID,
		goroutine: func(f func()) { e.wg.Add(1); go func() { defer e.wg.Done(); f() }() },
		afterFunc: realAfterFunc,
		afterDone: context.AfterFunc,
		closeConn: func() {
			conn.Close()
			// The client's goroutines have exited once its event channel closes.
			for range zkEv {
			}
		},
	}
	go e.loop()

	timer := time.NewTimer(cfg.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-e.ready:
		if err = e.authenticate(ctx); err == nil {
			return e, nil
		}
	case <-timer.C:
		err = fmt.Errorf("%w: no session with %v within %v", ErrUnreachable, cfg.Servers, cfg.ConnectTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("%w: %w", ErrUnreachable, context.Cause(ctx))
	}
	e.Close()
	return nil, err
}

// newEngine makes an engine with its loop's state, not yet connected.
func newEngine(cfg Config) *Engine {
	e := &Engine{
		cfg:        cfg,
		log:        cfg.Logger,
		inbox:      events.NewInbox(),
		sem:        semaphore.NewWeighted(int64(cfg.MaxInFlight)),
		states:     newStateWatch(),
		loopDone:   make(chan struct{}),
		ready:      make(chan struct{}),
		contenders: make(map[uint64]*entry),
		watchers:   make(map[string][]uint64),
		cancels:    make(map[<-chan struct{}]*cancelGroup),
		listings:   make(map[string]*listing),
		parents:    make(map[string][]uint64),
		revokers:   make(map[string]uint64),
		nodes:      make(map[string]uint64),
		localWatch: make(map[string][]uint64),
		borrowed:   make(map[string]int),
		timers:     make(map[uint64]timer),
		retryAt:    make(map[uint64]uint64),
		untrusted:  true, // until the first session's handshake is answered
	}
	e.trust = newSessionTrust(monotonicClock(), cfg.SessionTimeout, cfg.LostMargin, func(lapsed bool) {
		e.inbox.Put(events.Command{Payload: trustChanged{lapsed: lapsed}})
	})
	e.rt.newID = queue.NewID
	return e
}

// Stats returns the number of requests sent so far, by kind.
func (e *Engine) Stats() Stats { return e.count.snapshot() }

// SessionID is the current ZooKeeper session's id.
func (e *Engine) SessionID() int64 { return e.conn.SessionID() }

// FailsOnExpiry reports Config.FailOnExpiry: whether acquisitions not yet
// granted fail when the session expires, rather than queue again. Recipes
// made of several acquisitions read it to do the same as a whole.
func (e *Engine) FailsOnExpiry() bool { return e.cfg.FailOnExpiry }

// Acquire asks for a lock and returns at once; the future resolves with a
// Lease once the recipe admits this contender, or with an error. req.Path
// is a path under Config.Root. Cancelling ctx before the grant resolves the
// future with context.Cause(ctx) (ctx.Err() when ctx was cancelled
// without a cause: errors.Is finds context.Canceled or
// context.DeadlineExceeded) and removes the
// contender's node; after the grant it has no effect on the lease. A
// request that cannot work resolves the future at once, before anything is
// sent, with an error wrapping ErrInvalidPath or ErrInvalidRequest.
func (e *Engine) Acquire(ctx context.Context, req Request) *Future[*Lease] {
	cohort := e.cohorts.admits(e, req)
	if cohort && req.Decide != nil && ctx.Err() == nil {
		if f := e.cohorts.acquire(e, ctx, req.Path, req, false); f != nil {
			return f // joined a cohort of requests the same as req
		}
	}
	if err := req.validate(); err != nil {
		return resolvedFuture[*Lease](nil, err)
	}
	path := req.Path
	full, err := e.serverPath(req.Path)
	if err != nil {
		return resolvedFuture[*Lease](nil, err)
	}
	req.Path = full
	if ctx.Err() != nil {
		return resolvedFuture[*Lease](nil, context.Cause(ctx))
	}
	if req.Seq != "" {
		// A node with a borrowed number takes the place of a held one of
		// this engine (a downgrade): that node may not pass on.
		e.cohorts.seal(path)
	}
	if cohort {
		return e.cohorts.acquire(e, ctx, path, req, true)
	}
	fut := newFuture[*Lease]()
	e.acquire(ctx, req, fut)
	return fut
}

// acquire hands the loop an acquisition, with a valid request on the
// server's path, whose outcome resolves fut.
func (e *Engine) acquire(ctx context.Context, req Request, fut *Future[*Lease]) {
	if !e.post(acquireCmd{ctx: ctx, req: req, fut: fut}) {
		fut.resolve(nil, ErrClosed)
	}
}

func (e *Engine) release(l *Lease) *Future[struct{}] {
	fut := newFuture[struct{}]()
	if !e.post(releaseCmd{lease: l, fut: fut}) {
		fut.resolve(struct{}{}, l.Err())
	}
	return fut
}

// post hands a command to the loop; false once the engine is closed.
func (e *Engine) post(cmd any) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.inbox.Put(events.Command{Payload: cmd})
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
	e.closeOnce.Do(func() { e.post(closeCmd{}) })
	<-e.loopDone
	e.wg.Wait()
	return nil
}

// onZKEvent runs on the client's receive goroutine: it must never block.
func (e *Engine) onZKEvent(ev zk.Event) {
	now := time.Now()
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			e.inbox.Put(events.SessionChanged{State: events.Connected, At: now})
		case zk.StateDisconnected:
			e.inbox.Put(events.SessionChanged{State: events.Disconnected, At: now})
		case zk.StateExpired:
			e.inbox.Put(events.SessionChanged{State: events.Expired, At: now})
		}
	case zk.EventNodeDeleted:
		e.inbox.Put(events.WatchFired{Type: events.NodeDeleted, Path: ev.Path})
	case zk.EventNodeDataChanged:
		e.inbox.Put(events.WatchFired{Type: events.NodeDataChanged, Path: ev.Path})
	case zk.EventNodeCreated:
		e.inbox.Put(events.WatchFired{Type: events.NodeCreated, Path: ev.Path})
	case zk.EventNodeChildrenChanged:
		e.inbox.Put(events.WatchFired{Type: events.NodeChildrenChanged, Path: ev.Path})
	case zk.EventNotWatching:
		e.inbox.Put(events.WatchFired{Type: events.NotWatching, Path: ev.Path})
	}
}

// loop is the one goroutine that owns every contender.
func (e *Engine) loop() {
	defer close(e.loopDone)
	var batch []events.Event
	for {
		<-e.inbox.Ready()
		batch = e.inbox.Drain(batch)
		if e.turn(batch) {
			return
		}
	}
}

// turn is one pass of the loop: it handles a batch of events, sends what
// they decided, and shuts the engine down once it is closing and nothing is
// left; true then. It reaches the world only through e.conn and e.rt, so
// the simulator drives it as it is.
func (e *Engine) turn(batch []events.Event) (exited bool) {
	for _, ev := range batch {
		e.handle(ev)
	}
	e.pump()
	if e.closing && len(e.contenders) == 0 {
		e.shutdown()
		return true
	}
	return false
}

func (e *Engine) handle(ev events.Event) {
	switch ev := ev.(type) {
	case events.Command:
		e.handleCommand(ev.Payload)
	case events.OpDone:
		e.handleOpDone(ev)
	case events.WatchFired:
		if id, ok := e.revokers[ev.Path]; ok {
			delete(e.revokers, ev.Path)
			if en := e.contenders[id]; en != nil && ev.Type == events.NodeDataChanged {
				e.watchRevoke(en)
			}
		}
		ids := e.watchers[ev.Path]
		delete(e.watchers, ev.Path)
		for _, id := range ids {
			if en := e.contenders[id]; en != nil {
				en.watching = ""
				e.step(en, input{kind: inWatchFired})
			}
		}
	case events.SessionChanged:
		e.handleSession(ev)
	case events.TimerFired:
		e.handleTimer(ev.ID)
	}
}

func (e *Engine) handleCommand(cmd any) {
	switch cmd := cmd.(type) {
	case acquireCmd:
		if e.closing {
			cmd.fut.resolve(nil, ErrClosed)
			return
		}
		e.nextID++
		en := &entry{id: e.nextID, data: cmd.req.Data, revocable: cmd.req.Revocable, acquired: cmd.fut,
			c: *newContender(cmd.req.Path, cmd.req.Prefix, cmd.req.Decide, e.rt.newID)}
		en.c.fixedSeq = cmd.req.Seq
		if en.c.fixedSeq != "" {
			e.borrowed[en.c.lockPath]++
		}
		en.c.tryOnly = cmd.req.TryOnly
		en.c.failExp = e.cfg.FailOnExpiry || cmd.req.FailOnExpiry
		en.c.connected = e.connected
		en.c.untrusted = e.untrusted
		e.contenders[en.id] = en
		e.report(en, events.Report{Kind: events.Acquiring, Path: cmd.req.Path})
		e.attach(en, cmd.ctx)
		e.step(en, input{kind: inStart})
	case cancelCmd:
		g := e.cancels[cmd.done]
		if g == nil {
			return
		}
		delete(e.cancels, cmd.done)
		err := context.Cause(g.ctx)
		for _, id := range slices.Sorted(maps.Keys(g.ids)) {
			if en := e.contenders[id]; en != nil {
				en.cancelOn = nil
				e.step(en, input{kind: inCancel, err: err})
			}
		}
	case releaseCmd:
		en := e.contenders[cmd.lease.id]
		if en == nil || en.lease != cmd.lease || en.c.phase != phaseHeld {
			err := cmd.lease.Err()
			if err == nil {
				err = ErrNotHeld
			}
			cmd.fut.resolve(struct{}{}, err)
			return
		}
		en.released = cmd.fut
		e.step(en, input{kind: inRelease})
	case writeDone:
		e.writing--
	case trustChanged:
		e.handleTrust(cmd)
	case closeCmd:
		e.closing = true
		e.closeTimer = e.after(e.cfg.CloseTimeout)
		for _, en := range e.byID() {
			e.step(en, input{kind: inCancel, err: ErrClosed, closing: true})
		}
	}
}

func (e *Engine) handleOpDone(d events.OpDone) {
	in := input{outcome: classify(d.Err), err: d.Err}
	switch d.Op {
	case events.OpList:
		e.listed(d, in)
		return
	case events.OpCreate:
		in.kind, in.name = inCreated, d.Name
	case events.OpCreateParents:
		// One creation serves every contender that found the path missing.
		in.kind = inParents
		waiting := e.parents[d.Path]
		delete(e.parents, d.Path)
		for _, id := range waiting {
			if en := e.contenders[id]; en != nil {
				e.step(en, in)
			}
		}
		return
	case events.OpRecover:
		in.kind, in.children, in.pzxid, in.name, in.foreign = inListed, d.Children, d.Pzxid, d.Name, d.Foreign
	case events.OpWatch:
		in.kind = inWatchSet
	case events.OpWatchChildren:
		in.kind, in.children, in.pzxid, in.childWatch = inWatchSet, d.Children, d.Pzxid, true
		in.listing = e.parseListing(d.Path, d.Children)
	case events.OpRevokeWatch:
		e.revokeWatchDone(d)
		return
	case events.OpDelete:
		in.kind = inDeleted
	}
	if d.Op == events.OpDelete {
		// A holder's node deleted by our own request: the waiter next in
		// line behind it, if ours, is granted on this reply (see gone).
		en := e.contenders[d.Contender]
		e.deleted = deletion{path: d.Path, ok: in.outcome == outOK,
			held: en != nil && en.c.granted && en.c.full == d.Path, zxid: d.Zxid}
		defer func() { e.deleted = deletion{} }()
	}
	if en := e.contenders[d.Contender]; en != nil {
		e.step(en, in)
	}
}

// deletion is the delete reply the loop is handling, if any.
type deletion struct {
	path string
	ok   bool  // the request deleted the node
	held bool  // the node was a holder's
	zxid int64 // the greatest zxid read once the reply came
}

// gone tells the contenders of this engine that wait on node, a node of
// this engine, that it is gone (or no longer known). A waiter whose Decider
// found it Next behind a holder whose release deleted the node is granted
// at once, if the handoff rule allows (see Decision.Next): its token is the
// greatest zxid read so far, which is at least the deletion's (greater than
// any token the previous holder had) and less than the zxid of this
// waiter's own deletion, not yet made (so less than the next holder's).
// Every other waiter lists again.
func (e *Engine) gone(node string) {
	delete(e.nodes, node)
	ids := e.localWatch[node]
	delete(e.localWatch, node)
	if len(ids) == 0 {
		return
	}
	handoff := e.deleted.path == node && e.deleted.ok && e.deleted.held && e.mayHandOff(node)
	for _, id := range ids {
		en := e.contenders[id]
		if en == nil {
			continue
		}
		en.watching, en.local = "", false
		if handoff && en.c.next && en.c.phase == phaseWaiting {
			e.step(en, input{kind: inHandoff, pzxid: e.deleted.zxid})
			continue
		}
		e.step(en, input{kind: inWatchFired})
	}
}

// mayHandOff reports whether the departure of node, a holder's, may grant
// a waiter that is Next behind it without listing again: node is of an
// exclusive kind (a mutex, a writer, or an election's leader: one latch
// node leads at a time), and no node with a borrowed number of this engine
// may sit beside it unseen (see Decision.Next).
func (e *Engine) mayHandOff(node string) bool {
	i := strings.LastIndexByte(node, '/')
	if i < 0 {
		return false
	}
	n, ok := queue.Parse(node[i+1:])
	exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch
	return ok && exclusive && e.borrowed[node[:i]] == 0
}

// listed hands one listing to every contender that waited for it, then
// sends the next listing if more contenders asked meanwhile. The listing is
// parsed and sorted here, once, for all of them.
func (e *Engine) listed(d events.OpDone, in input) {
	l := e.listings[d.Path]
	if l == nil {
		return
	}
	in.kind, in.children, in.pzxid = inListed, d.Children, d.Pzxid
	in.listing = e.parseListing(d.Path, d.Children)
	waiting := l.current
	l.current, l.next = l.next, nil
	if len(l.current) > 0 {
		e.submit(op{kind: events.OpList, path: d.Path})
	} else {
		delete(e.listings, d.Path)
	}
	for _, id := range waiting {
		if en := e.contenders[id]; en != nil {
			e.step(en, in)
		}
	}
}

// parseListing parses one listing of path for every contender it is
// handed to, logs the children no recipe reads (see noteForeign), and
// logs, once per path, a listing whose sequence numbers wrapped: the
// contenders fail on it with ErrSequenceWrapped.
func (e *Engine) parseListing(path string, children []string) *queue.Listing {
	l := queue.NewListing(children)
	e.noteForeign(path, l)
	if !l.Wrapped() {
		return l
	}
	if _, logged := e.wrapLogged[path]; !logged && len(e.wrapLogged) < maxWrapLogged {
		if e.wrapLogged == nil {
			e.wrapLogged = make(map[string]struct{})
		}
		e.wrapLogged[path] = struct{}{}
		nodes := l.Nodes()
		e.log.Error("lock path's sequence numbers wrapped: nothing is granted on it until the nodes created before the wrap are gone",
			"path", path, "lowest", nodes[0].Name, "highest", nodes[len(nodes)-1].Name)
	}
	return l
}

// maxWrapLogged bounds the paths whose wrap the engine remembers having
// logged: a wrap takes 2^31 changes of one path, so a handful is already
// more than any deployment sees.
const maxWrapLogged = 1024

func (e *Engine) requestListing(path string, id uint64) {
	l := e.listings[path]
	if l == nil {
		e.listings[path] = &listing{current: []uint64{id}}
		e.submit(op{kind: events.OpList, path: path})
		return
	}
	l.next = append(l.next, id)
}

// byID returns the contenders in the order they were made. Steps that
// visit every contender go in this order, not the map's random one, so
// that the requests they send, and so a whole run, follow from the events
// alone (the simulator replays a run from its seed). It costs a sort on
// rare events: a session change, a lapse of trust, Close.
func (e *Engine) byID() []*entry {
	ids := slices.Sorted(maps.Keys(e.contenders))
	ens := make([]*entry, len(ids))
	for i, id := range ids {
		ens[i] = e.contenders[id]
	}
	return ens
}

// step feeds one input to a contender and carries out its effects.
func (e *Engine) step(en *entry, in input) {
	before := en.c.node
	effs := en.c.step(in)
	if after := en.c.node; after != before {
		// Keep the index of our own nodes, which waiters of this engine
		// watch without asking the server.
		if before != "" {
			e.gone(en.c.lockPath + "/" + before)
		}
		if after != "" && en.c.phase != phaseDone {
			e.nodes[en.c.nodePath()] = en.id
		}
	}
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("step", "id", en.id, "path", en.c.lockPath, "input", in.kind, "phase", en.c.phase, "effects", effs)
	}
	for _, ef := range effs {
		e.apply(en, ef)
	}
}

func (e *Engine) apply(en *entry, ef effect) {
	switch ef.kind {
	case effCreate:
		en.attempts = 0
		e.submit(op{kind: events.OpCreate, id: en.id, path: ef.path, data: en.data, fixed: en.c.fixedSeq != ""})
	case effCreateParents:
		waiting, inFlight := e.parents[ef.path]
		e.parents[ef.path] = append(waiting, en.id)
		if !inFlight {
			e.submit(op{kind: events.OpCreateParents, path: ef.path})
		}
	case effList:
		e.requestListing(ef.path, en.id)
	case effRecover:
		e.submit(op{kind: events.OpRecover, id: en.id, path: ef.path, find: ef.id})
	case effWatch:
		e.unwatch(en)
		en.watching = ef.path
		if owner, ok := e.nodes[ef.path]; ok && owner != en.id && !ef.children {
			// The node is our own: its owner tells us when it goes, so no
			// watch is asked of the server. The reply is made up here.
			// The owner's copy of the path is shared: a queue of thousands
			// keeps one string per node.
			if o := e.contenders[owner]; o != nil {
				en.c.watch, ef.path, en.watching = o.c.full, o.c.full, o.c.full
			}
			en.local = true
			e.localWatch[ef.path] = append(e.localWatch[ef.path], en.id)
			e.count.localWatches.Add(1)
			e.inbox.Put(events.OpDone{Op: events.OpWatch, Contender: en.id, Path: ef.path})
			return
		}
		e.watchers[ef.path] = append(e.watchers[ef.path], en.id)
		kind := events.OpWatch
		if ef.children {
			kind = events.OpWatchChildren
		}
		e.submit(op{kind: kind, id: en.id, path: ef.path})
	case effDelete:
		o := op{kind: events.OpDelete, id: en.id, path: ef.path}
		if en.c.granted && e.localWatch[ef.path] != nil {
			// A holder lets go and a waiter of ours is next: the lock is
			// idle until this delete is answered, so it waits for nothing.
			e.send(o)
			return
		}
		e.submit(o)
	case effGrant:
		en.attempts = 0
		lease := newLease(e, en.id, en.c.lockPath, en.c.full, ef.token)
		if !e.trust.admit(lease, e.session) {
			// The watchdog found the session untrusted after the loop last
			// heard from it, or follows a session the loop has not heard
			// of yet: no one may be granted now.
			e.step(en, input{kind: inRefused, sessionEnded: !e.trust.follows(e.session)})
			return
		}
		e.detach(en)
		en.lease = lease
		if !en.acquired.resolve(en.lease, nil) {
			// Unreachable: the machine resolves once. Give the node back.
			e.step(en, input{kind: inRelease})
			return
		}
		e.report(en, events.Report{Kind: events.Granted, Path: en.c.lockPath, Node: en.c.node, Token: ef.token})
		if ef.suspended {
			en.lease.setSuspended(true)
			e.report(en, events.Report{Kind: events.Suspended, Path: en.c.lockPath})
		}
		if en.revocable {
			e.watchRevoke(en)
		}
	case effFail:
		e.detach(en)
		en.acquired.resolve(nil, ef.err)
		kind := events.Failed
		if ef.err == context.Canceled || ef.err == context.DeadlineExceeded || ef.err == ErrClosed {
			kind = events.Cancelled
		}
		e.report(en, events.Report{Kind: kind, Path: en.c.lockPath, Err: ef.err})
	case effReleased:
		en.lease.end(ef.err)
		if en.released != nil {
			en.released.resolve(struct{}{}, ef.err)
		}
		e.report(en, events.Report{Kind: events.Released, Path: en.c.lockPath, Token: en.lease.token})
	case effSuspend:
		en.lease.setSuspended(true)
		e.report(en, events.Report{Kind: events.Suspended, Path: en.c.lockPath})
	case effResume:
		en.lease.setSuspended(false)
		e.report(en, events.Report{Kind: events.Resumed, Path: en.c.lockPath})
	case effLost:
		e.trust.forget(en.lease)
		en.lease.markLost(ef.err)
		if en.released != nil {
			en.released.resolve(struct{}{}, en.lease.Err())
		}
		e.report(en, events.Report{Kind: events.Lost, Path: en.c.lockPath, Token: en.lease.token, Err: ef.err})
	case effPark:
		if ef.err != nil {
			e.log.Warn("request refused; retrying", "path", en.c.lockPath, "err", ef.err)
		}
		e.park(en)
	case effDone:
		if ef.err != nil {
			e.log.Error("node left until the session ends", "path", en.c.lockPath, "err", ef.err)
		}
		e.unwatch(en)
		if en.c.node != "" {
			e.gone(en.c.nodePath()) // forgotten, whether or not it still exists
		}
		if en.revokeWatch {
			if node := en.lease.node; e.revokers[node] == en.id {
				delete(e.revokers, node)
			}
		}
		e.detach(en)
		if en.lease != nil {
			e.trust.forget(en.lease)
			en.lease.end(nil)
		}
		if en.released != nil {
			// A release that raced a loss ends with the loss.
			en.released.resolve(struct{}{}, en.lease.Err())
		}
		if en.c.fixedSeq != "" {
			if e.borrowed[en.c.lockPath]--; e.borrowed[en.c.lockPath] == 0 {
				delete(e.borrowed, en.c.lockPath)
			}
		}
		delete(e.contenders, en.id)
	}
}

// watchRevoke reads a revocable holder's node with a data watch; the
// reply, and every change after it, is checked for RevokeData.
func (e *Engine) watchRevoke(en *entry) {
	if en.c.phase != phaseHeld || en.lease.revokeRequested() {
		return
	}
	path := en.c.nodePath()
	en.revokeWatch = true
	e.revokers[path] = en.id
	e.submit(op{kind: events.OpRevokeWatch, id: en.id, path: path})
}

func (e *Engine) revokeWatchDone(d events.OpDone) {
	en := e.contenders[d.Contender]
	if en == nil || en.lease == nil || en.c.phase != phaseHeld || en.c.nodePath() != d.Path {
		return
	}
	switch {
	case d.Err == nil && bytes.Equal(d.Data, RevokeData):
		delete(e.revokers, d.Path)
		en.lease.markRevoked()
		e.report(en, events.Report{Kind: events.Revoked, Path: en.c.lockPath, Node: en.c.node})
	case d.Err != nil && classify(d.Err) == outConnLoss:
		// The watch may not be set; look again once connected.
		delete(e.revokers, d.Path)
		e.retryRevoke = append(e.retryRevoke, en.id)
	}
}

// attach has en cancelled when ctx ends.
func (e *Engine) attach(en *entry, ctx context.Context) {
	done := ctx.Done()
	if done == nil {
		return // never cancelled
	}
	g := e.cancels[done]
	if g == nil {
		g = &cancelGroup{ctx: ctx, ids: make(map[uint64]struct{})}
		e.cancels[done] = g
		g.stop = e.rt.afterDone(ctx, func() { e.post(cancelCmd{done: done}) })
	}
	g.ids[en.id] = struct{}{}
	en.cancelOn = done
}

// detach stops watching en's context: it was granted, or it ended.
func (e *Engine) detach(en *entry) {
	if en.cancelOn == nil {
		return
	}
	if g := e.cancels[en.cancelOn]; g != nil {
		delete(g.ids, en.id)
		if len(g.ids) == 0 {
			g.stop()
			delete(e.cancels, en.cancelOn)
		}
	}
	en.cancelOn = nil
}

func (e *Engine) unwatch(en *entry) {
	if en.watching == "" {
		return
	}
	watchers := e.watchers
	if en.local {
		watchers = e.localWatch
	}
	ids := slices.DeleteFunc(watchers[en.watching], func(id uint64) bool { return id == en.id })
	if len(ids) == 0 {
		delete(watchers, en.watching)
	} else {
		watchers[en.watching] = ids
	}
	en.watching, en.local = "", false
}

// park schedules a retry: at the next reconnect, or after a backoff when
// the connection seems up (the loss may not have been reported yet, or the
// server moved the session).
func (e *Engine) park(en *entry) {
	if e.closing && !e.connected {
		// Nothing can be sent; closing the session removes the node.
		e.forceEnd(en, ErrClosed)
		return
	}
	if !e.connected {
		return // handleSession retries every parked contender
	}
	if en.attempts < 20 {
		en.attempts++
	}
	backoff := time.Duration(en.attempts) * 50 * time.Millisecond
	if backoff > time.Second {
		backoff = time.Second
	}
	e.retryAt[e.after(backoff)] = en.id
}

// forceEnd ends a contender without its machine: only when closing.
func (e *Engine) forceEnd(en *entry, err error) {
	if !en.c.resolved {
		en.c.resolved = true
		en.acquired.resolve(nil, err)
	}
	if en.lease != nil {
		en.lease.markLost(err)
	}
	en.c.phase = phaseDone
	e.apply(en, effect{kind: effDone})
}

// report tells the observer, if any, about contender en.
func (e *Engine) report(en *entry, r events.Report) {
	if e.cfg.Observer != nil {
		r.ID = en.id
		r.Path = e.namespacePath(r.Path)
		e.cfg.Observer(r)
	}
}

// after arms a timer that posts a TimerFired event, and returns its id.
func (e *Engine) after(d time.Duration) uint64 {
	e.nextTimer++
	id := e.nextTimer
	e.timers[id] = e.rt.afterFunc(d, func() { e.inbox.Put(events.TimerFired{ID: id}) })
	return id
}

func (e *Engine) handleTimer(id uint64) {
	if _, ok := e.timers[id]; !ok {
		return // cancelled
	}
	delete(e.timers, id)
	switch id {
	case e.closeTimer:
		e.closeTimer = 0
		for _, en := range e.byID() {
			e.forceEnd(en, ErrClosed)
		}
	default:
		cid, ok := e.retryAt[id]
		delete(e.retryAt, id)
		if en := e.contenders[cid]; ok && en != nil {
			e.step(en, input{kind: inRetry})
		}
	}
}

func (e *Engine) handleSession(ev events.SessionChanged) {
	defer e.publishState()
	switch ev.State {
	case events.Connected:
		id := e.conn.SessionID()
		expired := e.session != 0 && id != e.session
		e.session = id
		e.connected = true
		if e.everReady {
			e.gauges.reconnects.Add(1)
		}
		if !e.everReady {
			e.everReady = true
			e.publishState() // before Start returns
			close(e.ready)
		}
		e.log.Info("session connected", "session", fmt.Sprintf("%#x", id))
		if expired {
			e.expire()
		}
		for _, en := range e.byID() {
			e.step(en, input{kind: inReconnected})
		}
		for _, id := range e.retryRevoke {
			if en := e.contenders[id]; en != nil {
				e.watchRevoke(en)
			}
		}
		e.retryRevoke = e.retryRevoke[:0]
	case events.Disconnected:
		if !e.connected {
			return
		}
		e.connected = false
		e.gauges.disconnects.Add(1)
		e.log.Info("session disconnected", "session", fmt.Sprintf("%#x", e.session))
		for _, en := range e.byID() {
			e.step(en, input{kind: inDisconnected})
		}
	case events.Expired:
		e.connected = false
		if e.session != 0 {
			e.expire()
		}
		e.session = 0
	}
}

// expire tells every contender that the session, and its nodes, are gone.
func (e *Engine) expire() {
	e.log.Warn("session expired", "session", fmt.Sprintf("%#x", e.session))
	e.gauges.expirations.Add(1)
	e.session = 0
	// Watches died with the session; the client already dropped them. Our
	// nodes died too.
	clear(e.watchers)
	clear(e.localWatch)
	clear(e.nodes)
	for _, en := range e.byID() {
		en.watching, en.local = "", false
		e.step(en, input{kind: inExpired})
	}
}

// handleTrust steps every contender as the watchdog saw the session: when
// it lapsed, held leases are already lost (the watchdog closed their Lost
// channels) and their machines park the deletion of their nodes; no waiter
// is granted until answers resume.
func (e *Engine) handleTrust(c trustChanged) {
	defer e.publishState()
	e.untrusted = c.lapsed
	kind := inTrusted
	if c.lapsed {
		kind = inUntrusted
		e.gauges.untrusted.Add(1)
		e.log.Warn("session no longer trusted: leases lost", "session", fmt.Sprintf("%#x", e.session))
	} else if e.everReady {
		e.log.Info("session trusted again", "session", fmt.Sprintf("%#x", e.session))
	}
	for _, en := range e.byID() {
		e.step(en, input{kind: kind})
	}
}

// shutdown closes the session and stops every timer; the loop then exits.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.trust.stop()
	for id, t := range e.timers {
		t.Stop()
		delete(e.timers, id)
	}
	e.rt.closeConn()
	e.states.set(StateClosed)
	// Commands posted before closed was set still wait in the inbox.
	for _, ev := range e.inbox.Drain(nil) {
		cmd, ok := ev.(events.Command)
		if !ok {
			continue
		}
		switch cmd := cmd.Payload.(type) {
		case acquireCmd:
			cmd.fut.resolve(nil, ErrClosed)
		case releaseCmd:
			cmd.fut.resolve(struct{}{}, cmd.lease.Err())
		}
	}
}
