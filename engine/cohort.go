package engine

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/internal/future"
)

// Lock cohorting's shell: the cohort machine (engine/internal/cohort)
// decides; this carries its effects out, on the goroutine of whoever steps
// it (an Acquire's caller, a holder's release, the loop as a node is
// granted or lost, the watchdog as trust lapses), under one mutex, so that
// a pass costs the releasing goroutine a few memory operations and no trip
// through the loop. The mutex comes after the watchdog's and before any
// lease's: the watchdog is asked (vouches) before it is taken, and a
// holder's Lost closes under it (LoseHolder), so that a release racing the
// loss finds its lease lost.

// passedIDs marks the ids of the leases passed inside cohorts, and
// numbers the waiters: above every contender id the loop gives, so that
// the two never meet. A passed lease's id is passedIDs and the slot of
// its node (see slots), so that a Lease holds no handle of the cohorts'.
const passedIDs = 1 << 63

// passed reports whether l was passed inside a cohort.
func passed(l *Lease) bool { return l.id&passedIDs != 0 }

// cohorts is the machine and what its ids name, all under mu.
type cohorts struct {
	mu      sync.Mutex
	m       *cohort.Machine
	nodes   map[uint64]*node  // node acquisitions, by attempt id
	byLease map[uint64]uint64 // carriers' attempts, by lease id
	slots   slots             // the nodes granted, by slot
	groups  contextGroups     // the waiters' cancel groups
	last    uint64            // the last waiter id
}

// node is one acquisition of a node for a cohort (attempt, of cohort),
// then the lease that holds it (from its grant to its end, in a slot;
// gone once forgotten); seen is noted on the loop (see cohort.Note).
// holder is the lease passed to the waiter the machine last handed the
// node (holderID), nil once its turn ended: one at a time, so kept here
// rather than in a map.
type node struct {
	attempt, cohort uint64
	cancel          context.CancelFunc
	lease           *Lease
	slot            uint64
	gone            bool
	holder          *Lease
	holderID        uint64
	watch           <-chan zk.Event // the cohort's watch of the lock path
	seen            cohort.Seen
}

// slots are the nodes granted, by slot (1 on; 0 is none), for a release
// to find its node's lease before it takes mu: it asks the watchdog
// first. A slot is freed when its node goes and may then name another
// node: what a lease finds there is only a hint, which mu's holder checks
// (the node is still there, and the lease its holder). Written under mu,
// read by anyone: a slot's node is set before the leases passed on it
// are handed out, which then read it.
type slots struct {
	table atomic.Pointer[[]atomic.Pointer[node]]
	free  []uint64
	used  uint64 // the slots given so far
}

// get is the node in slot i, or nil.
func (s *slots) get(i uint64) *node {
	if t := s.table.Load(); t != nil && i < uint64(len(*t)) {
		return (*t)[i].Load()
	}
	return nil
}

// put gives n a slot; mu is held. The table grows by copying, its
// readers go on with the one they read, whose nodes they check.
func (s *slots) put(n *node) {
	if k := len(s.free); k > 0 {
		n.slot, s.free = s.free[k-1], s.free[:k-1]
	} else {
		s.used++
		n.slot = s.used
	}
	t := s.table.Load()
	if t == nil || n.slot >= uint64(len(*t)) {
		grown := make([]atomic.Pointer[node], max(8, 2*n.slot))
		if t != nil {
			for i := range *t {
				grown[i].Store((*t)[i].Load())
			}
		}
		s.table.Store(&grown)
		t = &grown
	}
	(*t)[n.slot].Store(n)
}

// clear frees n's slot, if it has one; mu is held.
func (s *slots) clear(n *node) {
	if n == nil || n.slot == 0 {
		return
	}
	(*s.table.Load())[n.slot].Store(nil)
	s.free = append(s.free, n.slot)
	n.slot = 0
}

// holds reports whether l, a passed lease, holds n, which its slot
// named; mu is held.
func (cs *cohorts) holds(l *Lease, n *node) bool {
	return n != nil && !n.gone && n.holder == l
}

// carrier is the lease of the node l holds, l a passed lease; nil once
// l's turn ended.
func (cs *cohorts) carrier(l *Lease) *Lease {
	n := cs.slots.get(l.id &^ passedIDs)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.holds(l, n) {
		return n.lease
	}
	return nil
}

// forget drops attempt's node, and its slot; mu is held.
func (cs *cohorts) forget(attempt uint64) *node {
	n := cs.nodes[attempt]
	delete(cs.nodes, attempt)
	if n != nil {
		n.gone = true
		cs.slots.clear(n)
	}
	return n
}

// turn is what a step is about, as its caller knows it: attempt's node
// (nil if it has none, or none any more), looked up once; for a release,
// the holder's lease, and its outcome once the step says it: ended at
// once, or fut, made when the release waits for the node's deletion or
// fails.
type turn struct {
	attempt uint64
	node    *node
	holder  *Lease
	ended   bool
	fut     *Future[struct{}]
}

func (cs *cohorts) init(cfg cohort.Config) {
	cs.m, cs.last = cohort.New(cfg), passedIDs
	cs.nodes, cs.byLease = map[uint64]*node{}, map[uint64]uint64{}
}

// acquire queues req in its cohort; path is its lock path as Acquire was
// given it. A checked req (valid, on the server's path) makes the cohort
// if there is none; an unchecked one only joins one: nil if none.
func (cs *cohorts) acquire(e *Engine, ctx context.Context, path string, req Request, checked bool) *Future[*Lease] {
	fut := future.Make[*Lease]()
	in := cohort.Input{Kind: cohort.Join, Validated: checked, Data: fut, Try: req.TryOnly,
		Key: cohort.Key{Path: path, Kind: req.Kind, Data: req.Data, FailOnExpiry: req.FailOnExpiry}}
	if checked {
		r := req // boxed only here: a join of a cohort that exists allocates no copy
		in.Req = &r
	}
	cs.mu.Lock()
	cs.last++
	in.Waiter, in.Group = cs.last, cs.groups.group(ctx)
	if !cs.step(e, &in, &turn{}) {
		return nil
	}
	return fut
}

// release ends the turn of l, a lease passed in a cohort. Its slot names
// its node, whose lease the watchdog is asked about; under mu, a lease
// that no longer holds that node (it was lost with it, and the slot went
// to another) is released as no holder (Waiter 0): the machine says
// NotHolder.
func (cs *cohorts) release(l *Lease) *Future[struct{}] {
	e, t, in := l.eng, turn{holder: l}, cohort.Input{Kind: cohort.Release}
	n := cs.slots.get(l.id &^ passedIDs)
	if n != nil {
		in.Trusted, in.Now = e.trust.vouches(n.lease)
		in.CarrierLost = n.lease.Err() != nil
	}
	cs.mu.Lock()
	if cs.holds(l, n) {
		in.Cohort, in.Waiter, t.attempt, t.node = n.cohort, n.holderID, n.attempt, n
		fired(n, nil, &in)
	}
	cs.step(e, &in, &t)
	switch {
	case t.fut != nil:
		return t.fut
	case t.ended:
		return future.Resolved(struct{}{}, nil)
	}
	panic("lock cohort: a release the machine said nothing of")
}

// fired notes in in whether n's watch (ch, if new) fired; mu is held.
func fired(n *node, ch <-chan zk.Event, in *cohort.Input) {
	n.watch = cmp.Or(ch, n.watch)
	select {
	case <-n.watch: // nil: never
		in.Fired, n.watch = true, nil
	default:
	}
}

// stepNode steps an input about carrier, the lease of attempt's node, with
// whether the watchdog vouches for it (asked outside mu: it may lose
// leases), whether it is lost, whether the watch (ch, if new) fired.
func (cs *cohorts) stepNode(e *Engine, in *cohort.Input, attempt uint64, carrier *Lease, ch <-chan zk.Event) {
	if carrier != nil {
		in.Trusted, in.Now = e.trust.vouches(carrier)
		in.CarrierLost = carrier.Err() != nil
	}
	t := turn{}
	cs.mu.Lock()
	if n := cs.nodes[attempt]; n != nil && n.lease == carrier && carrier != nil {
		t.attempt, t.node = attempt, n
		fired(n, ch, in)
	}
	cs.step(e, in, &t)
}

// granted takes the outcome of a node's acquisition, on the loop.
func (cs *cohorts) granted(e *Engine, attempt uint64, l *Lease, err error) {
	in := cohort.Input{Kind: cohort.Failed, Attempt: attempt, Now: e.trust.clock(), Err: err}
	cs.mu.Lock()
	n := cs.nodes[attempt]
	n.cancel() // a grant stands whatever becomes of its context
	in.Seen = n.seen
	if err == nil {
		in.Kind, n.lease, cs.byLease[l.id] = cohort.Granted, l, attempt
		if cause, lost := lossCause(l.Err()); lost { // lost before its cohort followed it
			delete(cs.byLease, l.id)
			in.Lost, in.Err = true, cause
		}
	}
	if in.Err != nil {
		cs.forget(attempt)
	} else {
		cs.slots.put(n)
	}
	cs.step(e, &in, &turn{attempt: attempt, node: n})
}

// lost: l was lost, for cause; if it holds a cohort's node, the cohort
// hears of it now, where the loss is marked (on the loop, or on the
// watchdog's goroutine under its lock).
func (cs *cohorts) lost(l *Lease, cause error) {
	cs.mu.Lock()
	attempt, ok := cs.byLease[l.id]
	if !ok {
		cs.mu.Unlock()
		return
	}
	delete(cs.byLease, l.id)
	n := cs.forget(attempt)
	cs.step(l.eng, &cohort.Input{Kind: cohort.Lost, Attempt: attempt, Err: cause}, &turn{attempt: attempt, node: n})
}

// seal: a node with a borrowed number is made on path (a downgrade).
func (cs *cohorts) seal(e *Engine, path string) {
	cs.mu.Lock()
	cs.step(e, &cohort.Input{Kind: cohort.Seal, Path: path}, &turn{})
}

// deed is an effect, as much of it as the shell reads once mu is
// released, with what it took for it under mu.
type deed struct {
	kind    cohort.EffectKind
	waiter  uint64
	attempt uint64
	after   time.Duration
	err     error
	lease   *Lease
	fut     *Future[*Lease]
	cmd     *acquireCmd
	node    *node
}

// step steps the machine with in (mu is held) and does what it decided:
// the maps and the holders' losses under mu, the rest (futures, requests)
// once mu is released. t is what the caller knew of the step (see turn),
// and takes a release's outcome; false if a Join found no cohort.
func (cs *cohorts) step(e *Engine, in *cohort.Input, t *turn) (joined bool) {
	cs.m.Step(in)
	var deeds [4]deed
	buf, joined := deeds[:0], true
	ready := cs.m.Ready()
	for i := range ready {
		f := &ready[i] // read in place: the slice is valid until the next step, under mu
		d := deed{kind: f.Kind, waiter: f.Waiter, attempt: f.Attempt, after: f.After, err: f.Err}
		switch f.Attempt {
		case 0: // no attempt is 0
		case t.attempt:
			d.node = t.node
		default:
			d.node = cs.nodes[f.Attempt]
		}
		switch f.Kind {
		case cohort.NotJoined:
			cs.groups.forgetIdle(f.Group)
			joined = false
			continue
		case cohort.Hand, cohort.Fail:
			d.fut = f.Data.(*Future[*Lease])
			if n := d.node; f.Kind == cohort.Hand {
				d.lease = n.lease.passTo(passedIDs|n.slot, f.Pass)
				n.holder, n.holderID = d.lease, f.Waiter
			}
		case cohort.LoseHolder:
			d.node.holder.markLost(f.Err)
			d.node.holder = nil
			continue
		case cohort.Ended:
			if n := t.node; n != nil && n.holder == t.holder {
				n.holder = nil
			}
		case cohort.GiveBack:
			cs.forget(f.Attempt)
			delete(cs.byLease, d.node.lease.id)
		case cohort.Start:
			req, n := *f.Req.(*Request), &node{attempt: f.Attempt, cohort: f.Cohort}
			req.Decide = cohort.Note(req.Decide, &n.seen)
			var ctx context.Context
			ctx, n.cancel = context.WithCancel(context.Background())
			cs.nodes[f.Attempt] = n
			d.cmd = &acquireCmd{ctx: ctx, node: f.Attempt, req: coreAcquire(req)}
		case cohort.Follow:
			cs.groups.follow(f.Group, e.rt.afterDone, func(g uint64, cause error) {
				cs.mu.Lock()
				cs.step(e, &cohort.Input{Kind: cohort.Cancel, Group: g, Err: cause}, &turn{})
			})
			continue
		case cohort.Unfollow:
			cs.groups.drop(f.Group)
			continue
		}
		buf = append(buf, d)
	}
	cs.mu.Unlock()
	for _, d := range buf {
		switch d.kind {
		case cohort.Hand:
			future.Resolve(d.fut, d.lease, nil)
		case cohort.Fail:
			future.Resolve(d.fut, nil, d.err)
		case cohort.Ended:
			t.holder.end(nil)
			t.ended = true
		case cohort.NotHolder: // its node was lost, and it with it
			t.fut = future.Resolved(struct{}{}, cmp.Or(t.holder.Err(), ErrNotHeld))
		case cohort.GiveBack:
			back := &releaseCmd{lease: d.node.lease, fut: future.Make[struct{}]()}
			if d.waiter != 0 { // whose release ends with the deletion
				back.passed, t.fut = t.holder, back.fut
			} else {
				back.fut.Then(func(_ struct{}, err error) {
					if err != nil {
						e.log.Warn("lock cohort: giving back the node", "node", e.namespacePath(back.lease.node), "err", err)
					}
				})
			}
			e.release(back)
		case cohort.Start:
			e.acquire(d.cmd)
		case cohort.Abandon:
			d.node.cancel() // the loop removes its node
		case cohort.AskWatch:
			l, attempt := d.node.lease, d.attempt
			e.watchChildren(l.path, func(children []string, ch <-chan zk.Event, err error) {
				in := cohort.Input{Kind: cohort.Watched, Attempt: attempt, Self: l.node[strings.LastIndexByte(l.node, '/')+1:], Children: children, Failed: err != nil}
				cs.stepNode(e, &in, attempt, l, ch)
				if ch != nil && e.cfg.Cohort.Linger > 0 { // a lingering node goes back once another client shows
					<-ch // fired, or closed with the session
					cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: attempt}, attempt, l, nil)
				}
			})
		case cohort.Linger: // its wake, after a timer
			in, l := &cohort.Input{Kind: cohort.Wake, Attempt: d.attempt, Timer: true}, d.node.lease
			e.rt.afterFunc(d.after, func() { cs.stepNode(e, in, in.Attempt, l, nil) })
		case cohort.Vouch: // its wake, at once, with the watchdog's verdict
			cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: d.attempt}, d.attempt, d.node.lease, nil)
		}
	}
	return joined
}
