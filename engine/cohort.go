package engine

import (
	"cmp"
	"context"
	"strings"
	"sync"
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

// passedIDs numbers the leases passed inside cohorts, each by the id of
// the waiter it was handed to: above every contender id the loop gives,
// so that the two never meet.
const passedIDs = 1 << 63

// cohorts is the machine and what its ids name, all under mu.
type cohorts struct {
	mu      sync.Mutex
	m       *cohort.Machine
	nodes   map[uint64]*node  // node acquisitions, by attempt id
	byLease map[uint64]uint64 // carriers' attempts, by lease id
	groups  contextGroups     // the waiters' cancel groups
	last    uint64            // the last waiter id
}

// passed is the shell's handle on a lease passed to a holder
// (Lease.passed): its node's lease, its cohort and node attempt.
type passed struct {
	carrier         *Lease
	cohort, attempt uint64
}

// node is one acquisition of a node for a cohort, then the lease that
// holds it; seen is noted on the loop (see cohort.Note). holder is the
// lease passed to the waiter the machine last handed the node (nil once
// its turn ended): one at a time, so kept here rather than in a map.
type node struct {
	cancel context.CancelFunc
	lease  *Lease
	holder *Lease
	watch  <-chan zk.Event // the cohort's watch of the lock path
	seen   cohort.Seen
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

// releasedNow is the outcome of every release that ends at once (a pass,
// a node that lingers, a turn that waits for the listing): one future,
// resolved once, that nothing resolves again and every caller may read.
var releasedNow = future.Resolved(struct{}{}, nil)

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

// release ends the turn of l, a lease passed in a cohort.
func (cs *cohorts) release(l *Lease) *Future[struct{}] {
	h, t := l.passed, turn{holder: l}
	cs.stepNode(l.eng, &cohort.Input{Kind: cohort.Release, Cohort: h.cohort, Waiter: l.id}, h.attempt, h.carrier, nil, &t)
	switch {
	case t.fut != nil:
		return t.fut
	case t.ended:
		return releasedNow
	}
	panic("lock cohort: a release the machine said nothing of")
}

// stepNode steps an input about carrier, the lease of attempt's node, with
// whether the watchdog vouches for it (asked outside mu: it may lose
// leases), whether it is lost, whether the watch (ch, if new) fired; t
// is the release's, if it is one, or nil.
func (cs *cohorts) stepNode(e *Engine, in *cohort.Input, attempt uint64, carrier *Lease, ch <-chan zk.Event, t *turn) {
	if carrier != nil {
		in.Trusted, in.Now = e.trust.vouches(carrier)
		in.CarrierLost = carrier.Err() != nil
	}
	if t == nil {
		t = &turn{}
	}
	cs.mu.Lock()
	if n := cs.nodes[attempt]; n != nil && n.lease == carrier && carrier != nil {
		t.attempt, t.node = attempt, n
		n.watch = cmp.Or(ch, n.watch)
		select {
		case <-n.watch: // nil: never
			in.Fired, n.watch = true, nil
		default:
		}
	}
	cs.step(e, in, t)
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
		delete(cs.nodes, attempt)
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
	n := cs.nodes[attempt]
	delete(cs.nodes, attempt)
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
	for _, f := range cs.m.Ready() {
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
				d.lease = n.lease.passTo(f.Waiter, f.Pass, passed{carrier: n.lease, cohort: f.Cohort, attempt: f.Attempt})
				n.holder = d.lease
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
			delete(cs.nodes, f.Attempt)
			delete(cs.byLease, d.node.lease.id)
		case cohort.Start:
			req, n := *f.Req.(*Request), &node{}
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
				cs.stepNode(e, &in, attempt, l, ch, nil)
				if ch != nil && e.cfg.Cohort.Linger > 0 { // a lingering node goes back once another client shows
					<-ch // fired, or closed with the session
					cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: attempt}, attempt, l, nil, nil)
				}
			})
		case cohort.Linger: // its wake, after a timer
			in, l := &cohort.Input{Kind: cohort.Wake, Attempt: d.attempt, Timer: true}, d.node.lease
			e.rt.afterFunc(d.after, func() { cs.stepNode(e, in, in.Attempt, l, nil, nil) })
		case cohort.Vouch: // its wake, at once, with the watchdog's verdict
			cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: d.attempt}, d.attempt, d.node.lease, nil, nil)
		}
	}
	return joined
}
