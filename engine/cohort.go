package engine

import (
	"cmp"
	"context"
	"errors"
	"path"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/ctxgroups"
	"github.com/turnstile-go/turnstile/engine/internal/slots"
	"github.com/turnstile-go/turnstile/events"
)

// cohorts is lock cohorting's shell: the machine decides; this carries
// its effects out on the goroutine that steps it (an Acquire's caller, a
// holder's release, the loop at a node's grant or loss, the watchdog as
// trust lapses), under mu, so that a pass costs a few memory operations
// and no trip through the loop. mu comes after the watchdog's lock (asked,
// vouches, before mu is taken) and before any lease's: a holder's Lost
// closes under it (LoseHolder); a release racing the loss finds it lost.
type cohorts struct {
	mu     sync.Mutex
	m      *cohort.Machine
	nodes  slots.Table[node] // node acquisitions by attempt id, seated once granted
	groups ctxgroups.Groups  // the waiters' cancel groups
	last   uint64            // the last waiter id
}

// node is a cohort's node: its acquisition (attempt), then the lease
// that holds it, seated in slot from its grant until it goes; seen is
// noted on the loop (see cohort.Note). holder is the lease passed to the
// waiter the machine last handed it (holderID), nil once its turn ended.
type node struct {
	attempt, cohort uint64
	cancel          context.CancelFunc
	lease           *Lease
	slot            uint64
	holder          *Lease
	holderID        uint64
	watch           <-chan zk.Event // the cohort's watch of the lock path
	seen            cohort.Seen
	linger          timer // armed under mu; stopped as the node goes (else it keeps a closed engine)
}

// carrier is the lease of the node l, a passed lease, holds; nil once its turn ended.
func (cs *cohorts) carrier(l *Lease) *Lease {
	n := cs.nodes.Seated(l.id &^ passedIDs)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if n != nil && n.holder == l {
		return n.lease
	}
	return nil
}

// acquire queues req in its cohort (path as Acquire had it); only a checked
// req (valid, on the server's path) makes one: else nil if there is none.
func (cs *cohorts) acquire(e *Engine, ctx context.Context, path string, req Request, checked bool) *Future[*Lease] {
	fut := newFuture[*Lease]()
	in := cohort.Input{Kind: cohort.Join, Validated: checked, Data: fut, Try: req.TryOnly,
		Key: cohort.Key{Path: path, Kind: req.Kind, Data: req.Data, FailOnExpiry: req.FailOnExpiry}}
	if checked {
		r := req // boxed only here: a join of a cohort that exists allocates no copy
		in.Req = &r
	}
	cs.mu.Lock()
	cs.last++
	in.Waiter, in.Group = cs.last, cs.groups.Group(ctx)
	if _, joined := cs.step(e, &in, nil, nil); joined {
		return fut
	}
	return nil
}

// release ends the turn of l, a passed lease, on the node its slot names.
func (cs *cohorts) release(l *Lease) *Future[struct{}] {
	return cs.stepNode(l.eng, &cohort.Input{Kind: cohort.Release}, cs.nodes.Seated(l.id&^passedIDs), l, nil)
}

// stepNode steps in about n, a granted node read without mu (nil: none;
// gone: ignored), with whether the watchdog vouches for its lease (asked
// before mu: it may lose leases), whether that is lost, whether the watch
// (ch, if new) fired. For a Release, holder is the lease released, whose
// outcome is returned: no holder's if it holds n no more (lost, slot reused).
func (cs *cohorts) stepNode(e *Engine, in *cohort.Input, n *node, holder *Lease, ch <-chan zk.Event) *Future[struct{}] {
	if n != nil {
		in.Trusted, in.Now = e.trust.vouches(n.lease)
		in.CarrierLost = n.lease.Err() != nil
	}
	cs.mu.Lock()
	if n != nil && holder != nil && n.holder != holder {
		n = nil
	} else if n != nil && holder != nil {
		in.Cohort, in.Waiter = n.cohort, n.holderID
	}
	if n != nil {
		n.watch = cmp.Or(ch, n.watch)
		select {
		case <-n.watch: // nil: never
			in.Fired, n.watch = true, nil
		default:
		}
	}
	released, _ := cs.step(e, in, n, holder)
	return released
}

// granted takes the outcome of a node's acquisition, on the loop.
func (cs *cohorts) granted(e *Engine, attempt uint64, l *Lease, err error) {
	in := cohort.Input{Kind: cohort.Failed, Attempt: attempt, Now: e.trust.clock(), Err: err}
	cs.mu.Lock()
	n := cs.nodes.Get(attempt)
	n.cancel() // a grant stands whatever becomes of its context
	in.Seen = n.seen
	if err == nil {
		in.Kind, n.lease = cohort.Granted, l
		if cause, lost := lossCause(l.Err()); lost { // before lost could follow it
			in.Lost, in.Err = true, cause
		}
	}
	if in.Err != nil {
		cs.nodes.Take(attempt)
	} else {
		n.slot = cs.nodes.Seat(attempt)
	}
	cs.step(e, &in, n, nil)
}

// lost: l, a cohort node's lease, was lost, for cause, where the loss is
// marked (the loop, or the watchdog under its lock); nothing if the node
// went back, or is not granted yet (granted finds it lost). Its holder,
// if any, is lost with it (LoseHolder), and its linger's timer stopped.
func (cs *cohorts) lost(l *Lease, cause error) {
	attempt := l.id &^ carrierIDs
	cs.mu.Lock()
	if n := cs.nodes.Get(attempt); n == nil || n.lease != l {
		cs.mu.Unlock()
		return
	}
	n := cs.nodes.Take(attempt)
	stopTimer(n.linger)
	cs.step(l.eng, &cohort.Input{Kind: cohort.Lost, Attempt: attempt, Err: cause}, n, nil)
}

// report is a member's report about n's node, Kind of waiter's turn.
func (n *node) report(kind events.ReportKind, waiter uint64, err error) events.Report {
	l := n.lease
	return events.Report{Kind: kind, ID: waiter, Path: l.eng.namespacePath(l.path), Node: path.Base(l.node),
		Token: l.token >> cohort.PassBits, Err: err}
}

// reportMember has the loop hand the observer a cohort member's report
// (events.Report.Member): the loop runs the observer. Posted under the
// cohorts' mutex, a member's reports reach it in the order they happened.
func (e *Engine) reportMember(r events.Report) {
	if e.cfg.Observer == nil {
		return
	}
	m := r // made here, so that an engine with no observer allocates nothing
	m.Member = true
	if !e.post(&m) {
		e.mu.Lock()
		if e.late != nil { // the loop drains its inbox: see shutdown
			e.late = append(e.late, m)
		}
		e.mu.Unlock()
	}
}

// clear sends back path's nodes that linger (cohort.Clear): the future
// resolves once their deletes are answered; nil if none lingers.
func (cs *cohorts) clear(e *Engine, path string) *Future[struct{}] {
	cs.mu.Lock()
	gone, _ := cs.step(e, &cohort.Input{Kind: cohort.Clear, Path: path}, nil, nil)
	return gone
}

// seal: a node with a borrowed number is made on path (a downgrade).
func (cs *cohorts) seal(e *Engine, path string) {
	cs.mu.Lock()
	cs.step(e, &cohort.Input{Kind: cohort.Seal, Path: path}, nil, nil)
}

// deed is an effect to carry out once mu is released, with what it took
// under mu: its node, the lease a Hand passes, the command a Start sends.
type deed struct {
	cohort.Effect
	node  *node
	lease *Lease
	cmd   *acquireCmd
}

// step steps the machine with in (mu held) and does what it decided, the
// records under mu and the rest after; n is the node found, if any, holder
// a Release's lease, whose outcome is returned (for a Clear, the deletions
// of the nodes it sent back); joined: false if no cohort.
func (cs *cohorts) step(e *Engine, in *cohort.Input, n *node, holder *Lease) (released *Future[struct{}], joined bool) {
	cs.m.Step(in)
	buf, joined := make([]deed, 0, 4), true
	effects := cs.m.Ready()
	if in.Kind == cohort.Join && e.cfg.Observer != nil && !slices.ContainsFunc(effects, func(f cohort.Effect) bool { return f.Kind == cohort.NotJoined }) {
		e.reportMember(events.Report{Kind: events.Acquiring, ID: in.Waiter, Path: in.Key.Path, NodeKind: in.Key.Kind})
	}
	for _, f := range effects {
		d := deed{Effect: f}
		if d.node = n; f.Attempt != 0 && (n == nil || n.attempt != f.Attempt) {
			d.node = cs.nodes.Get(f.Attempt)
		}
		switch f.Kind {
		case cohort.NotJoined:
			cs.groups.ForgetIdle(f.Group)
			joined = false
			continue
		case cohort.Hand:
			d.lease = d.node.lease.passTo(passedIDs|d.node.slot, f.Pass)
			d.node.holder, d.node.holderID = d.lease, f.Waiter
			e.reportMember(d.node.report(events.Granted, f.Waiter, nil))
		case cohort.LoseHolder:
			d.node.holder.markLost(f.Err)
			d.node.holder = nil
			e.reportMember(d.node.report(events.Lost, f.Waiter, f.Err))
			continue
		case cohort.Ended: // of holder, whose node is n
			n.holder = nil
			e.reportMember(n.report(events.Released, f.Waiter, nil))
		case cohort.Fail:
			kind := events.Failed
			if errors.Is(f.Err, context.Canceled) || errors.Is(f.Err, context.DeadlineExceeded) || errors.Is(f.Err, ErrClosed) {
				kind = events.Cancelled
			}
			e.reportMember(events.Report{Kind: kind, ID: f.Waiter, Path: f.Path, Err: f.Err})
		case cohort.GiveBack:
			cs.nodes.Take(f.Attempt)
			d.node.holder = nil
			stopTimer(d.node.linger)
			if f.Waiter != 0 { // its turn ends with the deletion
				e.reportMember(d.node.report(events.Released, f.Waiter, nil))
			}
		case cohort.Start:
			ctx, cancel := context.WithCancel(context.Background())
			req, started := *f.Req.(*Request), &node{attempt: f.Attempt, cohort: f.Cohort, cancel: cancel}
			req.Decide = cohort.Note(req.Decide, &started.seen)
			cs.nodes.Add(f.Attempt, started)
			d.cmd = &acquireCmd{ctx: ctx, node: f.Attempt, req: coreAcquire(req)}
		case cohort.Follow:
			cs.groups.Follow(f.Group, e.rt.afterDone, func(g uint64, cause error) {
				cs.mu.Lock()
				cs.step(e, &cohort.Input{Kind: cohort.Cancel, Group: g, Err: cause}, nil, nil)
			})
			continue
		case cohort.Unfollow:
			cs.groups.Drop(f.Group)
			continue
		case cohort.Linger: // its wake, after a timer
			wake, lingering := &cohort.Input{Kind: cohort.Wake, Attempt: f.Attempt, Timer: true}, d.node
			lingering.linger = e.rt.afterFunc(f.After, func() { cs.stepNode(e, wake, lingering, nil, nil) })
			continue
		}
		buf = append(buf, d)
	}
	cs.mu.Unlock()
	for _, d := range buf {
		switch d.Kind {
		case cohort.Hand, cohort.Fail:
			resolveFuture(d.Data.(*Future[*Lease]), d.lease, d.Err)
		case cohort.Ended:
			holder.end(nil)
			released = resolvedFuture(struct{}{}, nil)
		case cohort.NotHolder: // its node was lost, and it with it
			released = resolvedFuture(struct{}{}, cmp.Or(holder.Err(), ErrNotHeld))
		case cohort.GiveBack: // Waiter, if any, is whose release ends with the deletion
			back := &releaseCmd{lease: d.node.lease, req: core.Release{Sent: d.Yield}}
			if d.Waiter != 0 {
				back.passed, back.fut = holder, newFuture[struct{}]()
			}
			if in.Kind == cohort.Clear { // the try waits for every node sent back
				back.fut = newFuture[struct{}]()
				released = both(released, e.release(back))
				continue
			}
			released = cmp.Or(e.release(back), released)
		case cohort.Start:
			e.acquire(d.cmd)
		case cohort.Abandon:
			d.node.cancel() // the loop removes its node
		case cohort.AskWatch: // a lingering node goes back once another client shows
			n, l := d.node, d.node.lease
			e.watchChildren(l.path, n.attempt, func(children []string, ch <-chan zk.Event, err error) func() {
				in := cohort.Input{Kind: cohort.Watched, Attempt: n.attempt, Self: path.Base(l.node), Children: children, Failed: err != nil}
				cs.stepNode(e, &in, n, nil, ch)
				if e.cfg.Cohort.Linger == 0 {
					return nil
				}
				return func() { cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: n.attempt, Fired: true}, n, nil, nil) }
			})
		case cohort.Mark, cohort.Unmark:
			e.markNode(d.node.lease.node, d.Req.(*Request).Data)
		case cohort.Vouch: // its wake, at once, with the watchdog's verdict
			cs.stepNode(e, &cohort.Input{Kind: cohort.Wake, Attempt: d.Attempt}, d.node, nil, nil)
		}
	}
	return released, joined
}
