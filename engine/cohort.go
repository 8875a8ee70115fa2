package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// Lock cohorting (Dice, Marathe and Shavit, PPoPP 2012), on the engine's
// public side: when acquisitions of one engine queue for the same lock, one
// of them, the carrier, queues on ZooKeeper; the others wait here, in FIFO
// order, without a node. Once the carrier's node is granted, the lease
// passes from holder to holder among them, each pass a few memory
// operations and no request, until a bound is reached (passes, or time
// since the grant) or another client is seen waiting; then the node is
// deleted, and the next local waiter queues a node of its own, behind
// whoever came meanwhile, with the rest still waiting here behind it.
//
// Safety rests on three things:
//   - One holder. The ZooKeeper node admits one holder of the lock, the
//     cohort; the cohort holds one lease at a time, and passes it only in
//     the release of the one before, under its mutex.
//   - Trust. A pass happens only while the carrier (the lease of the node)
//     is held, not lost, and the watchdog still vouches for the session. A
//     carrier's loss (untrusted, expired, closed) is told to its cohort
//     from the carrier's markLost, so the current holder's Lost closes at
//     the same moment, before any other client can be granted, and no pass
//     follows.
//   - Tokens. Every lease of one grant has the node's zxid and a pass
//     number (see Lease.Token): strictly above the holder before, below any
//     later grant, whose zxid is at least the node's deletion's.
//
// Another client is known to wait from the listing that granted the node
// (the cohort's Decider sees it, on the loop) and, when that one showed
// nobody, from one getChildren with a watch of the lock path, asked once
// per grant of the node when a second local acquisition makes a pass
// possible: any other lock node in its reply, or the watch firing, ends
// the passing. Until that reply is in, no pass happens: one could
// overtake a client queued since the grant. A grant with no local waiter
// asks nothing, so an uncontended lock costs what it did.

// tokenPassBits is how many low bits of a fencing token number the local
// passes of one grant (see Lease.Token).
const tokenPassBits = 12

// maxCohortPasses is the most local passes one grant of a node may make:
// the pass numbers that fit in tokenPassBits.
const maxCohortPasses = 1<<tokenPassBits - 1

// CohortConfig bounds lock cohorting (see Request.Cohort): how long a node
// that this engine holds passes among its own waiters before it goes back
// to the other clients.
type CohortConfig struct {
	// StrictFIFO turns cohorting off: every acquisition queues a node of
	// its own on ZooKeeper and is granted in the order of the nodes, across
	// every client, at the cost of a ZooKeeper write for each handoff.
	StrictFIFO bool
	// MaxPasses bounds the local passes of one grant of a node (default
	// 1000, at most 4095, the pass numbers a token holds).
	MaxPasses int
	// MaxHold bounds the time, from the grant of the node, after which no
	// local pass starts (default 100ms). With no other client seen
	// waiting, the node goes back at whichever bound comes first; with one,
	// after the current holder. So another client waits for a node that
	// passes at most MaxHold and one holder's hold, however long the local
	// queue. Holders that hold for longer than MaxHold get no passes, and
	// lose nothing by it: next to such a hold, the handoff through
	// ZooKeeper that a pass saves is short.
	MaxHold time.Duration
}

// The bounds a zero CohortConfig takes. DefaultCohortHold is exported for
// what measures a wait against it (a client another engine keeps out waits
// at most MaxHold and one hold).
const (
	defaultCohortPasses = 1000
	DefaultCohortHold   = 100 * time.Millisecond
)

func (c *CohortConfig) withDefaults() error {
	switch {
	case c.MaxPasses < 0 || c.MaxHold < 0:
		return fmt.Errorf("%w: negative Cohort bound", ErrInvalidConfig)
	case c.MaxPasses > maxCohortPasses:
		return fmt.Errorf("%w: Cohort.MaxPasses %d above the most a token can number (%d)", ErrInvalidConfig, c.MaxPasses, maxCohortPasses)
	}
	if c.MaxPasses == 0 {
		c.MaxPasses = defaultCohortPasses
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultCohortHold
	}
	return nil
}

// CohortStats counts what cohorting did since Start.
type CohortStats struct {
	// Carriers counts grants of a node to a cohort.
	Carriers uint64
	// Passes counts leases passed from one holder to the next without a
	// ZooKeeper request.
	Passes uint64
	// Yielded counts grants that went back, local waiters still queued,
	// because another client was seen waiting; Bounded, those that went
	// back at MaxPasses or MaxHold (or lost the session's trust, or
	// made way for a downgrade).
	Yielded, Bounded uint64
	// Waiting is the acquisitions queued in cohorts now, behind a node of
	// this engine, without one of their own.
	Waiting int64
}

// CohortStats returns what cohorting did so far. It is safe to call from
// any goroutine.
func (e *Engine) CohortStats() CohortStats {
	s := &e.cohorts.stats
	return CohortStats{Carriers: s.carriers.Load(), Passes: s.passes.Load(), Yielded: s.yielded.Load(), Bounded: s.bounded.Load(),
		Waiting: s.waiting.Load()}
}

// cohorts is an engine's cohorts, by lock path. One mutex guards them all
// and every cohort's state: its critical sections are a few pointer moves,
// and one lock keeps the lock order simple (cohorts.mu before any lease's
// mu, and never before the watchdog's or the engine's).
type cohorts struct {
	mu sync.Mutex
	// byPath holds the cohorts by lock path as Acquire was given it
	// (relative to Config.Root); made on first use.
	byPath map[string][]*cohort
	// cancels watches the contexts of waiting acquisitions, one
	// context.AfterFunc per Done channel however many wait under it (as
	// the loop's cancel groups do): workers that share a context pay for
	// one. Made on first use.
	cancels map[<-chan struct{}]*cancelWatch
	seq     uint64 // numbers waiters, so a cancellation ends them in order

	stats struct {
		carriers, passes, yielded, bounded atomic.Uint64
		waiting                            atomic.Int64
	}
}

// cohort is the acquisitions of one engine that pass one lock among them.
// Between two operations it is in one of three states: idle (forgotten),
// a carrier acquisition pending with waiters, or a carrier held by holder
// with waiters or none.
type cohort struct {
	eng *Engine
	// req is what every member asked, validated, on the server's path;
	// path is its lock path as Acquire was given it.
	req  Request
	path string

	head, tail *waiter // FIFO
	waiting    int

	pending *carrierAttempt // the acquisition of the next node, in flight
	carrier *Lease          // the lease of the node, while held
	holder  *Lease          // the lease passed to the current holder (pass 0 too)
	passes  int             // local passes under carrier
	// grantedAt is when carrier was granted, on the watchdog's clock.
	grantedAt time.Duration
	// sealed: a node with this node's number is being made (a downgrade),
	// so the node may not pass on: the holder's release gives it back.
	sealed bool
	// watchAsked: the listing with a watch that tells whether another
	// client waits was asked for this grant; watchKnown: it was answered.
	// foreign: another client (or another recipe of this engine) waits on
	// the path, or may; watch fires when one comes.
	watchAsked, watchKnown bool
	foreign                bool
	watch                  <-chan zk.Event
	// parked: the holder's turn ended while the listing was in flight;
	// its answer chooses what follows (see watched).
	parked bool
}

// waiter is one acquisition waiting in a cohort.
type waiter struct {
	fut        *Future[*Lease]
	seq        uint64
	c          *cohort
	prev, next *waiter
	queued     bool         // in c's queue
	cancel     *cancelWatch // watches its context, while queued
}

// cancelWatch is the waiting acquisitions whose context ends when one Done
// channel closes.
type cancelWatch struct {
	ctx     context.Context
	waiters map[*waiter]struct{}
	stop    func() bool
}

// carrierAttempt is one acquisition of a node for a cohort.
type carrierAttempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	fut    *Future[*Lease]
	// listed: the recipe admitted the node on a listing (not on the
	// reply to a deletion, a local handoff), and others: that listing
	// held another lock node. Written by the Decider and read as the
	// grant resolves, both on the engine's loop.
	listed, others bool
}

// admits reports whether req may join a cohort.
func (cs *cohorts) admits(e *Engine, req Request) bool {
	return req.Cohort && !req.TryOnly && req.Seq == "" && !req.Revocable && !e.cfg.Cohort.StrictFIFO
}

// find returns the cohort of req, whose lock path as given is path, or,
// when there is none, a new one if create is set and nil if not. cs.mu is
// held.
func (cs *cohorts) find(e *Engine, path string, req Request, create bool) *cohort {
	for _, c := range cs.byPath[path] {
		if c.req.Kind == req.Kind && bytes.Equal(c.req.Data, req.Data) && c.req.FailOnExpiry == req.FailOnExpiry {
			return c
		}
	}
	if !create {
		return nil
	}
	if cs.byPath == nil {
		cs.byPath = map[string][]*cohort{}
	}
	c := &cohort{eng: e, req: req, path: path}
	cs.byPath[path] = append(cs.byPath[path], c)
	return c
}

// forgetIfIdle drops c once nothing of it is left. cs.mu is held.
func (cs *cohorts) forgetIfIdle(c *cohort) {
	if c.waiting > 0 || c.pending != nil || c.carrier != nil {
		return
	}
	list := cs.byPath[c.path]
	for i, o := range list {
		if o == c {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(cs.byPath, c.path)
	} else {
		cs.byPath[c.path] = list
	}
}

// acquire queues req in its cohort; path is its lock path as Acquire was
// given it. A req that was validated (and is on the server's path) makes
// the cohort if there is none. One that was not joins only a cohort that
// exists, whose members asked the same and were validated: then nothing of
// the request needs checking again, which a hot lock's acquisitions would
// otherwise pay for on every turn. Without such a cohort it returns nil.
func (cs *cohorts) acquire(e *Engine, ctx context.Context, path string, req Request, validated bool) *Future[*Lease] {
	cs.mu.Lock()
	c := cs.find(e, path, req, validated)
	if c == nil {
		cs.mu.Unlock()
		return nil
	}
	cs.seq++
	w := &waiter{fut: newFuture[*Lease](), seq: cs.seq}
	c.push(w)
	if done := ctx.Done(); done != nil {
		cs.watchCancel(e, ctx, done, w)
	}
	var start *carrierAttempt
	ask := false
	switch {
	case c.carrier == nil && c.pending == nil:
		start = c.attempt()
	case c.carrier != nil && !c.watchAsked:
		// A second acquisition under a held node: a pass is possible, so
		// learn whether another client waits.
		c.watchAsked, ask = true, true
	}
	carrier := c.carrier
	cs.mu.Unlock()
	if start != nil {
		c.start(start)
	}
	if ask {
		c.askWatch(carrier)
	}
	return w.fut
}

// watchCancel has w, queued, cancelled when ctx (whose Done is done)
// ends. cs.mu is held.
func (cs *cohorts) watchCancel(e *Engine, ctx context.Context, done <-chan struct{}, w *waiter) {
	g := cs.cancels[done]
	if g == nil {
		if cs.cancels == nil {
			cs.cancels = map[<-chan struct{}]*cancelWatch{}
		}
		g = &cancelWatch{ctx: ctx, waiters: map[*waiter]struct{}{}}
		cs.cancels[done] = g
		g.stop = e.rt.afterDone(ctx, func() { cs.cancelled(done) })
	}
	g.waiters[w] = struct{}{}
	w.cancel = g
}

// unwatchCancel: w leaves the queue; its context no longer matters. cs.mu
// is held.
func (cs *cohorts) unwatchCancel(w *waiter) {
	g := w.cancel
	if g == nil {
		return
	}
	w.cancel = nil
	delete(g.waiters, w)
	if len(g.waiters) == 0 {
		g.stop()
		if done := g.ctx.Done(); cs.cancels[done] == g {
			delete(cs.cancels, done)
		}
	}
}

// cancelled: the context whose Done is done ended. Its waiters leave their
// queues, in the order they came, and resolve with the context's cause; a
// waiter granted meanwhile keeps its lease, as the engine's own do. A node
// pending for a cohort nobody waits in any more is given up.
func (cs *cohorts) cancelled(done <-chan struct{}) {
	cs.mu.Lock()
	g := cs.cancels[done]
	if g == nil {
		cs.mu.Unlock()
		return
	}
	delete(cs.cancels, done)
	ws := slices.SortedFunc(maps.Keys(g.waiters), func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	var abandoned []*carrierAttempt
	for _, w := range ws {
		w.cancel = nil
		c := w.c
		c.remove(w)
		if c.waiting == 0 && c.pending != nil {
			abandoned = append(abandoned, c.pending)
			c.pending = nil
			cs.forgetIfIdle(c)
		}
	}
	cs.mu.Unlock()
	for _, a := range abandoned {
		a.cancel() // the engine removes its node
	}
	cause := context.Cause(g.ctx)
	for _, w := range ws {
		w.fut.resolve(nil, cause)
	}
}

// seal stops every cohort of path from passing its node on.
func (cs *cohorts) seal(path string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.byPath[path] {
		if c.carrier != nil {
			c.sealed = true
		}
	}
}

func (c *cohort) push(w *waiter) {
	w.c, w.queued = c, true
	w.prev, w.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = w
	} else {
		c.head = w
	}
	c.tail = w
	c.waiting++
	c.eng.cohorts.stats.waiting.Add(1)
}

func (c *cohort) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		c.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		c.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	c.waiting--
	c.eng.cohorts.stats.waiting.Add(-1)
	c.eng.cohorts.unwatchCancel(w)
}

// pop takes the first waiter.
func (c *cohort) pop() *waiter {
	w := c.head
	if w != nil {
		c.remove(w)
	}
	return w
}

// drain takes every waiter, for a failure that ends them all.
func (c *cohort) drain() []*waiter {
	var ws []*waiter
	for w := c.pop(); w != nil; w = c.pop() {
		ws = append(ws, w)
	}
	return ws
}

// attempt records a new acquisition of a node for c; start sends it, once
// cs.mu is released. cs.mu is held.
func (c *cohort) attempt() *carrierAttempt {
	ctx, cancel := context.WithCancel(context.Background())
	a := &carrierAttempt{ctx: ctx, cancel: cancel, fut: newFuture[*Lease]()}
	c.pending = a
	return a
}

func (c *cohort) start(a *carrierAttempt) {
	a.fut.onResolve(func(l *Lease, err error) { c.granted(a, l, err) })
	req := c.req
	decide := req.Decide
	req.Decide = func(l *queue.Listing, self string) queue.Decision {
		d := decide(l, self)
		if d.Holds {
			// An exclusive holder's listing: every other lock node waits
			// behind it.
			a.listed, a.others = true, len(l.Nodes()) > 1
		}
		return d
	}
	c.eng.acquire(a.ctx, req, a.fut)
}

// view is the lease passed to a holder under carrier, numbered pass.
func (c *cohort) view(carrier *Lease, pass int) *Lease {
	return &Lease{eng: carrier.eng, path: carrier.path, node: carrier.node, token: carrier.token,
		pass: pass, cohort: c, carrier: carrier}
}

// granted takes the outcome of the acquisition a. It runs on the engine's
// loop, as the future resolves.
func (c *cohort) granted(a *carrierAttempt, carrier *Lease, err error) {
	a.cancel() // a grant stands whatever becomes of its context
	cs := &c.eng.cohorts
	cs.mu.Lock()
	if c.pending != a {
		// Given up while in flight (every waiter left), yet granted.
		cs.mu.Unlock()
		if err == nil {
			carrier.ReleaseAsync()
		}
		return
	}
	c.pending = nil
	if err != nil {
		ws := c.drain()
		cs.forgetIfIdle(c)
		cs.mu.Unlock()
		for _, w := range ws {
			w.fut.resolve(nil, err)
		}
		return
	}
	if !carrier.followLoss(func(cause error) { c.lost(carrier, cause) }) {
		// Lost between the grant and now (the watchdog's timer): as if
		// lost while held, with no holder yet.
		cause, _ := lossCause(carrier.Err())
		failed, start := c.afterLoss(cause)
		cs.mu.Unlock()
		c.resume(failed, start, cause)
		return
	}
	w := c.pop()
	if w == nil {
		cs.forgetIfIdle(c)
		cs.mu.Unlock()
		carrier.ReleaseAsync()
		return
	}
	cs.stats.carriers.Add(1)
	c.carrier, c.holder = carrier, c.view(carrier, 0)
	c.passes, c.grantedAt, c.sealed = 0, c.eng.trust.clock(), false
	c.foreign, c.watch, c.watchKnown, c.parked = false, nil, false, false
	if a.listed && a.others {
		// The listing that granted the node shows another client waiting:
		// the node goes back after this holder, and nothing need be asked.
		c.foreign, c.watchKnown = true, true
	}
	c.watchAsked = c.waiting > 0 || c.watchKnown
	ask, holder := c.watchAsked && !c.watchKnown, c.holder
	cs.mu.Unlock()
	w.fut.resolve(holder, nil)
	if ask {
		c.askWatch(carrier)
	}
}

// release ends the holder v's turn. The lease passes to the next waiter,
// or the node goes back, and then v's release resolves with the node's
// deletion; or, while the listing that tells whether another client
// waits is in flight, the choice waits for it (see watched) and v's
// release returns at once, as for a pass.
func (c *cohort) release(v *Lease) *Future[struct{}] {
	e := c.eng
	trusted, now := e.trust.vouches(v.carrier) // never under cs.mu: it may close Lost channels
	cs := &e.cohorts
	cs.mu.Lock()
	if c.holder != v {
		// The node was lost, and v with it.
		cs.mu.Unlock()
		err := v.Err()
		if err == nil {
			err = ErrNotHeld
		}
		return resolvedFuture(struct{}{}, err)
	}
	c.holder = nil
	t := c.next(trusted, now)
	cs.mu.Unlock()
	if t.back == nil {
		v.end(nil)
		c.carry(t)
		return resolvedFuture(struct{}{}, nil)
	}
	done := c.carry(t)
	done.onResolve(func(_ struct{}, err error) {
		// A release that finds the node lost (the carrier's loss was marked
		// while this release, having taken the holder's place, gave the node
		// back, so its follower had no holder to tell) loses v too: Lost
		// and Err say what the release says, as for a lease of the loop.
		if cause, lost := lossCause(err); lost {
			v.markLost(cause)
			return
		}
		v.end(err)
	})
	return done
}

// lossCause is the cause of a lease's loss that err reports (a lost
// lease's Err, or the outcome of its release), and whether it reports one.
func lossCause(err error) (cause error, lost bool) {
	var l *lostError
	if !errors.As(err, &l) {
		return nil, false
	}
	return l.cause, true
}

// turn is what the end of a holder's turn leads to: a pass of lease to
// waiter, or the node given back (back, the carrier), with the next
// node's acquisition (start) if waiters remain; or nothing yet (parked).
type turn struct {
	waiter *waiter
	lease  *Lease
	back   *Lease
	start  *carrierAttempt
}

// next chooses what follows the holder's turn on c's node: trusted says
// whether the watchdog vouched for the carrier, now is the time. cs.mu is
// held, and c.holder is nil.
func (c *cohort) next(trusted bool, now time.Duration) turn {
	cs := &c.eng.cohorts
	carrier := c.carrier
	cfg := c.eng.cfg.Cohort
	switch {
	case c.waiting == 0:
	case !trusted || carrier.Err() != nil || c.sealed || c.passes >= cfg.MaxPasses || now-c.grantedAt >= cfg.MaxHold:
		cs.stats.bounded.Add(1)
	case !c.watchKnown:
		// Passing now could overtake a client queued before the waiter.
		c.parked = true
		return turn{}
	case c.othersWait():
		cs.stats.yielded.Add(1)
	default:
		c.passes++
		c.holder = c.view(carrier, c.passes)
		cs.stats.passes.Add(1)
		return turn{waiter: c.pop(), lease: c.holder}
	}
	c.carrier = nil
	t := turn{back: carrier}
	if c.waiting > 0 {
		t.start = c.attempt()
	} else {
		cs.forgetIfIdle(c)
	}
	return t
}

// carry does what next chose, once cs.mu is released, and returns the
// outcome of the node's deletion, if it goes back.
//
// The next waiter's node is asked for before the deletion of the node
// given back. Both reach the loop in that order and, when the loop takes
// them in one turn, leave in one multi request, create first: then
// whoever the deletion wakes (another client) finds the next node already
// queued, behind its own, in the listing that grants it, and gives the
// lock back after one holder without asking anything more. In separate
// turns they run on requests of their own, in either order (see
// groupcommit.go): the other client may then list before the create,
// see nobody, pass among its own, and learn better from its watch. Either
// order is safe; this one is only the fairer more often.
func (c *cohort) carry(t turn) *Future[struct{}] {
	if t.waiter != nil {
		t.waiter.fut.resolve(t.lease, nil)
	}
	if t.start != nil {
		c.start(t.start)
	}
	if t.back == nil {
		return nil
	}
	return t.back.ReleaseAsync()
}

// othersWait: another client is known to wait, or may. cs.mu is held.
func (c *cohort) othersWait() bool {
	if !c.foreign && c.watch != nil {
		select {
		case <-c.watch:
			c.foreign, c.watch = true, nil
		default:
		}
	}
	return c.foreign
}

// lost: the carrier was lost (cause is why); the holder's lease is lost
// with it, at once, and the waiters queue a node again, or fail with the
// carrier when the engine closes or the session's expiry fails waiters.
// It runs where the loss is marked: on the loop, or on the watchdog's
// goroutine under its lock.
func (c *cohort) lost(carrier *Lease, cause error) {
	cs := &c.eng.cohorts
	cs.mu.Lock()
	if c.carrier != carrier {
		cs.mu.Unlock()
		return // given back already
	}
	c.carrier, c.parked = nil, false
	if c.holder != nil {
		c.holder.markLost(cause)
		c.holder = nil
	}
	failed, start := c.afterLoss(cause)
	cs.mu.Unlock()
	c.resume(failed, start, cause)
}

// afterLoss decides what becomes of the waiters once the node is lost:
// they fail with the loss when the engine closes, or when the session
// expired and expiries fail waiters; else the next one queues a node.
// cs.mu is held.
func (c *cohort) afterLoss(cause error) (failed []*waiter, start *carrierAttempt) {
	switch {
	case c.waiting == 0:
	case errors.Is(cause, ErrClosed),
		errors.Is(cause, ErrSessionExpired) && (c.req.FailOnExpiry || c.eng.cfg.FailOnExpiry):
		failed = c.drain()
	default:
		start = c.attempt()
	}
	c.eng.cohorts.forgetIfIdle(c)
	return failed, start
}

// resume carries out afterLoss's choice, once cs.mu is released.
func (c *cohort) resume(failed []*waiter, start *carrierAttempt, cause error) {
	for _, w := range failed {
		w.fut.resolve(nil, cause)
	}
	if start != nil {
		c.start(start)
	}
}

// askWatch lists the lock path with a watch, once per grant of the node,
// on the engine's request seam: one request, counted as a children watch.
func (c *cohort) askWatch(carrier *Lease) {
	e := c.eng
	path, self := carrier.path, carrier.node[strings.LastIndexByte(carrier.node, '/')+1:]
	ok := e.spawn(func() {
		children, _, ch, err := e.conn.ChildrenW(path)
		c.watched(carrier, self, children, ch, err)
	})
	if ok {
		e.count.n[input.OpWatchChildren].Add(1)
	}
}

// watched takes the listing askWatch asked for: any lock node but the
// carrier's is another client's (or another recipe's of this engine)
// waiting, and so is any change the watch reports later. A failed read
// tells nothing, so it counts as one. A turn that waited for it goes on.
func (c *cohort) watched(carrier *Lease, self string, children []string, ch <-chan zk.Event, err error) {
	e := c.eng
	trusted, now := e.trust.vouches(carrier)
	cs := &e.cohorts
	cs.mu.Lock()
	if c.carrier != carrier {
		cs.mu.Unlock()
		return
	}
	c.watchKnown = true
	c.foreign = c.foreign || err != nil
	for _, name := range children {
		if _, ok := queue.Parse(name); ok && name != self {
			c.foreign = true
		}
	}
	if !c.foreign {
		c.watch = ch
	}
	if !c.parked {
		cs.mu.Unlock()
		return
	}
	c.parked = false
	t := c.next(trusted, now)
	cs.mu.Unlock()
	if done := c.carry(t); done != nil {
		done.onResolve(func(_ struct{}, err error) {
			if err != nil {
				e.log.Warn("lock cohort: giving back the node", "path", e.namespacePath(carrier.path), "err", err)
			}
		})
	}
}

// spawn runs f on the engine's request seam (a goroutine the engine
// counts, in production), unless the engine is closed.
func (e *Engine) spawn(f func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.rt.goroutine(f)
	return true
}

// vouches reports whether the watchdog holds l, admitted and not lost, in
// the session it trusts now, and the deadline has not passed: a local
// pass is a grant, and asks what a grant asks (see admit). A deadline
// passed unnoticed ends trust here, as in admit. now is the time it read.
func (t *sessionTrust) vouches(l *Lease) (ok bool, now time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.clock()
	if _, held := t.held[l]; !held || t.stopped || t.lapsed {
		return false, now
	}
	if now >= t.deadline() {
		t.lapse()
		return false, now
	}
	return true, now
}
