package core

import (
	"errors"
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
)

// Lock cohorting, stepped by the core like its contenders: the cohort
// machine (engine/internal/cohort) decides who of this engine's
// acquisitions of one lock holds its node next; the core carries its
// effects out here. A cohort's node is a contender of the core, its
// carrier, made from the first member's request; the members are
// acquisitions with no contender of their own. A member's grant, whether
// the node was acquired for it or passed to it, is a grant like any
// other: its lease is admitted by the watchdog (so that a lapse of trust
// closes its Lost channel at once, whatever the loop is doing), and its
// notice resolves its acquisition. Ids are one space: an acquisition is
// named by its id whether it is a contender or a member, and a carrier's
// contender by its attempt's id (the core gives both).

// The engine configures cohorting, and reads what it did, in the
// machine's own terms.
type (
	CohortConfig = cohort.Config
	CohortStats  = cohort.Stats
)

// PassBits is how many low bits of a fencing token number the passes of
// one grant of a cohort's node (see Grant).
const PassBits = cohort.PassBits

// MaxCohortPasses is the most passes one grant of a cohort's node can
// number in a token.
const MaxCohortPasses = cohort.MaxPasses

// DefaultCohortHold is the bound on the time a cohort's node passes for
// while another client waits, when none is given.
const DefaultCohortHold = cohort.DefaultMaxHold

// cohorting is what the core keeps of lock cohorting beside the machine.
type cohorting struct {
	m *cohort.Machine
	// carriers are the contenders acquiring or holding cohorts' nodes, by
	// contender id (the attempt's).
	carriers map[uint64]*cohortNode
	// held are the members holding a node now, by acquisition id.
	held map[uint64]member
	// lingering are the timers armed for lingering nodes (timer id →
	// attempt).
	lingering map[uint64]uint64
	// watching are the attempts whose listing with a watch (AskWatch) of
	// the lock path waits for the server's notification, by lock path.
	watching map[string][]uint64
	// groups are the cancel groups the machine follows (see the core's
	// follow).
	groups map[uint64]struct{}
	// tries are tries held back on a lock path (see tryBesideLinger) until
	// the path's nodes given back are gone.
	tries map[string][]*Acquire
	// queue is the machine's effects not yet carried out: carrying one out
	// may step the machine again (a Vouch is answered at once), whose
	// effects follow the rest, in order.
	queue    []cohort.Effect
	draining bool
}

// cohortNode is a cohort's node as the core keeps it beside its contender.
type cohortNode struct {
	cohort uint64
	// seen is what the listing that granted the node showed (see
	// cohort.Note): noted as the carrier's recipe runs.
	seen cohort.Seen
	// holder is the member holding the node now (0: none); back, the
	// member whose release ends with the node's deletion (GiveBack).
	holder, back uint64
	// givenBack: the machine let the node go (its contender releases it,
	// or gives its acquisition up).
	givenBack bool
	// yield: the node goes back to another client waiting: its delete
	// leaves at once.
	yield bool
	// linger is the timer armed while the node lingers (0: none).
	linger uint64
	// suspended: the session is disconnected while the node is held.
	suspended bool
	// marks are the Marks (true) and Unmarks of the node awaiting their
	// replies, oldest first: the parity each is to leave the node's data
	// version with (see marked).
	marks []bool
}

// member is a member holding a node: its cohort, the node's attempt, and
// its lock path (for its reports).
type member struct {
	cohort, attempt uint64
	path            string
}

func newCohorts(cfg cohort.Config, failOnExpiry bool) cohorting {
	if d, err := cfg.WithDefaults(); err == nil { // zero bounds take their defaults; the engine checked them
		cfg = d
	}
	cfg.FailOnExpiry = failOnExpiry
	cfg.Closed, cfg.Expired, cfg.WouldBlock = contender.ErrClosed, contender.ErrSessionExpired, contender.ErrWouldBlock
	return cohorting{m: cohort.New(cfg), carriers: map[uint64]*cohortNode{}, held: map[uint64]member{},
		lingering: map[uint64]uint64{}, watching: map[string][]uint64{}, groups: map[uint64]struct{}{},
		tries: map[string][]*Acquire{}}
}

// CohortStats is what lock cohorting did so far.
func (c *Core) CohortStats() CohortStats { return c.coh.m.Stats() }

// CohortKnown reports, of the cohorts of lockPath (the server's path)
// holding a node, whether each that asked the listing that tells whether
// another client waits has had its answer, and whether one knows that
// another does: for tests and diagnostics.
func (c *Core) CohortKnown(lockPath string) (listed, others bool) { return c.coh.m.Known(lockPath) }

// CohortHolders are the members holding a node now, in the order of
// their ids.
func (c *Core) CohortHolders() []uint64 {
	ids := make([]uint64, 0, len(c.coh.held))
	for id := range c.coh.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Lingering reports the nodes of lockPath that linger with no holder.
func (c *Core) Lingering(lockPath string) []string {
	var nodes []string
	for id, cr := range c.coh.carriers {
		en := c.contenders[id]
		if en != nil && !cr.givenBack && cr.holder == 0 && en.leased() && en.c.LockPath() == lockPath {
			nodes = append(nodes, en.node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// stepCohorts steps the machine and carries out what it decided.
func (c *Core) stepCohorts(in *cohort.Input) {
	c.coh.m.Step(in)
	c.carryOutCohorts(c.coh.m.Effects())
}

// carryOutCohorts carries out the machine's effects, after those of the
// steps still being carried out, if any.
func (c *Core) carryOutCohorts(effs []cohort.Effect) {
	c.coh.queue = append(c.coh.queue, effs...)
	if c.coh.draining {
		return
	}
	c.coh.draining = true
	for i := 0; i < len(c.coh.queue); i++ {
		c.cohortEffect(c.coh.queue[i])
	}
	c.coh.queue = c.coh.queue[:0]
	c.coh.draining = false
}

// verdict is what a step about attempt's node asks: whether the watchdog
// vouches for its lease, and its clock.
func (c *Core) verdict(in *cohort.Input) *cohort.Input {
	in.Trusted, in.Now = c.watchdog.Vouches(in.Carrier)
	return in
}

// joinCohort queues cmd in its cohort, if it may join one; false if not.
// A try joins only a node of its cohort lingering with nobody waiting, to
// be passed it (cohort.Join's Try).
func (c *Core) joinCohort(cmd *Acquire) bool {
	ask := cohort.Ask{Cohort: cmd.Cohort, TryOnly: cmd.TryOnly, Borrowed: cmd.Seq != "", Revocable: cmd.Revocable}
	try := false
	if !c.coh.m.Admits(ask) {
		ask.TryOnly = false
		if !cmd.TryOnly || c.cfg.Cohort.Linger == 0 || !c.coh.m.Admits(ask) {
			return false
		}
		try = true
	}
	c.coh.m.Step(&cohort.Input{Kind: cohort.Join, Waiter: cmd.ID, Group: cmd.Cancel, Validated: true, Req: cmd, Data: cmd, Try: try,
		Key: cohort.Key{Path: cmd.Path, Kind: cmd.Kind, Data: cmd.Data, FailOnExpiry: cmd.FailOnExpiry}})
	effs := c.coh.m.Effects()
	if slices.ContainsFunc(effs, func(f cohort.Effect) bool { return f.Kind == cohort.NotJoined }) {
		return false
	}
	c.memberReport(cmd.ID, events.Report{Kind: events.Acquiring, Path: cmd.Path, NodeKind: cmd.Kind})
	c.carryOutCohorts(effs)
	return true
}

// tryBesideLinger: a try of cmd.Path that is no cohort's member. A node
// this engine lingers on is held by no one, so it goes back first
// (cohort.Clear), and the try's node is made once the deletes are
// answered: the try never finds it in its way, and waits one delete for
// it. false: nothing lingers, the try goes on now.
func (c *Core) tryBesideLinger(cmd *Acquire) bool {
	if !cmd.TryOnly || c.cfg.Cohort.Linger == 0 {
		return false
	}
	c.stepCohorts(&cohort.Input{Kind: cohort.Clear, Path: cmd.Path})
	if !c.givingBack(cmd.Path) {
		return false
	}
	c.coh.tries[cmd.Path] = append(c.coh.tries[cmd.Path], cmd)
	c.report(&entry{id: cmd.ID}, events.Report{Kind: events.Acquiring, Path: cmd.Path, NodeKind: cmd.Kind})
	if cmd.Cancel != 0 {
		c.follow(cmd.Cancel)
	}
	return true
}

// cancelHeldTries ends the tries held back under a cancel group whose
// contexts ended.
func (c *Core) cancelHeldTries(cmd *Cancel) {
	for _, p := range slices.Sorted(maps.Keys(c.coh.tries)) {
		kept := c.coh.tries[p][:0]
		for _, try := range c.coh.tries[p] {
			if try.Cancel != cmd.Group {
				kept = append(kept, try)
				continue
			}
			c.notify(Notice{Kind: NoteAcquired, ID: try.ID, Ref: try.Ref, Err: cmd.Cause})
			c.report(&entry{id: try.ID}, events.Report{Kind: events.Cancelled, Path: try.Path, Err: cmd.Cause})
		}
		if len(kept) == 0 {
			delete(c.coh.tries, p)
		} else {
			c.coh.tries[p] = kept
		}
	}
}

// givingBack reports whether a node of lockPath is on its way back.
func (c *Core) givingBack(lockPath string) bool {
	for id, cr := range c.coh.carriers {
		if en := c.contenders[id]; cr.givenBack && en != nil && en.c.LockPath() == lockPath {
			return true
		}
	}
	return false
}

// memberReport tells the observer about member id.
func (c *Core) memberReport(id uint64, r events.Report) {
	if c.cfg.Observe {
		r.ID, r.Member = id, true
		c.notify(Notice{Kind: NoteReport, ID: id, Report: r})
	}
}

// cohortEffect carries out one of the machine's effects.
func (c *Core) cohortEffect(f cohort.Effect) {
	cr, en := c.coh.carriers[f.Carrier], c.contenders[f.Carrier]
	switch f.Kind {
	case cohort.Start:
		c.startCarrier(f)
	case cohort.Abandon:
		if en != nil {
			cr.givenBack = true
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: contender.ErrClosed})
		}
	case cohort.Hand:
		c.hand(f, cr, en)
	case cohort.Fail:
		cmd := f.Data.(*Acquire)
		c.notify(Notice{Kind: NoteAcquired, ID: f.Waiter, Ref: cmd.Ref, Err: f.Err})
		kind := events.Failed
		if errors.Is(f.Err, contender.ErrClosed) || slices.ContainsFunc(c.cfg.CancelErrs, func(e error) bool { return errors.Is(f.Err, e) }) {
			kind = events.Cancelled
		}
		c.memberReport(f.Waiter, events.Report{Kind: kind, Path: cmd.Path, Err: f.Err})
	case cohort.Ended:
		if h, ok := c.coh.held[f.Waiter]; ok {
			if cr := c.coh.carriers[h.attempt]; cr != nil && cr.holder == f.Waiter {
				cr.holder = 0 // a node lingering, or parked, is held by no one
			}
		}
		c.endMember(f.Waiter, nil)
	case cohort.NotHolder:
		c.notify(Notice{Kind: NoteReleaseRefused, ID: f.Waiter})
	case cohort.LoseHolder:
		if cr != nil && cr.holder == f.Waiter {
			cr.holder = 0
		}
		c.loseMember(f.Waiter, f.Err, false)
	case cohort.GiveBack:
		c.giveBack(f, cr, en)
	case cohort.AskWatch:
		// Not for a node given back since the effect was queued (its
		// first Hand refused): the listing would tell nothing.
		if en != nil && c.coh.m.Carries(f.Carrier) {
			p := en.c.LockPath()
			c.coh.watching[p] = append(c.coh.watching[p], f.Carrier)
			c.commit.send(&c.rd, Op{Kind: input.OpCohortWatch, ID: f.Carrier, Path: p})
		}
	case cohort.Follow:
		c.coh.groups[f.Group] = struct{}{}
		c.follow(f.Group)
	case cohort.Unfollow:
		if _, ok := c.coh.groups[f.Group]; ok {
			delete(c.coh.groups, f.Group)
			c.unfollow(f.Group)
		}
	case cohort.Linger:
		if cr != nil {
			cr.linger = c.after(f.After)
			c.coh.lingering[cr.linger] = f.Carrier
		}
	case cohort.Vouch:
		c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Wake, Carrier: f.Carrier}))
	case cohort.Mark, cohort.Unmark:
		if en != nil && en.leased() {
			if cr != nil {
				cr.marks = append(cr.marks, f.Kind == cohort.Mark)
			}
			c.commit.send(&c.rd, Op{Kind: input.OpMark, ID: f.Carrier, Path: en.node, Data: f.Req.(*Acquire).Data})
		}
	}
}

// startCarrier makes the contender that acquires a cohort's node, as the
// attempt f names, with the request of the cohort's first member: no
// try, no cancel group (its members' contexts are the machine's), its
// recipe noting the listing that grants it.
func (c *Core) startCarrier(f cohort.Effect) {
	if c.closing {
		c.stepCohorts(&cohort.Input{Kind: cohort.Failed, Carrier: f.Carrier, Err: contender.ErrClosed})
		return
	}
	first := f.Req.(*Acquire)
	cr := &cohortNode{cohort: f.CohortID}
	a := *first
	a.ID, a.TryOnly, a.Cancel, a.Cohort, a.Ref = f.Carrier, false, 0, false, nil
	a.Decide = contender.Decider(cohort.Note(first.Decide, &cr.seen))
	c.coh.carriers[a.ID] = cr
	c.newContender(&a, true, false)
}

// hand has member f.Waiter hold the node of f.Carrier: a grant, admitted
// as any other, or refused back to the machine when the watchdog no
// longer vouches for the session.
func (c *Core) hand(f cohort.Effect, cr *cohortNode, en *entry) {
	cmd := f.Data.(*Acquire)
	if cr == nil || en == nil || !en.leased() ||
		!c.watchdog.Admit(Grant{ID: f.Waiter, Path: en.c.LockPath(), Node: en.node, Token: en.token, Pass: f.Pass, Carrier: f.Carrier}, c.session) {
		c.stepCohorts(&cohort.Input{Kind: cohort.Refused, Carrier: f.Carrier, Waiter: f.Waiter, Data: f.Data, Group: f.Group,
			Try: cmd.TryOnly})
		return
	}
	cr.holder = f.Waiter
	c.coh.held[f.Waiter] = member{cohort: f.CohortID, attempt: f.Carrier, path: cmd.Path}
	c.notify(Notice{Kind: NoteAcquired, ID: f.Waiter, Ref: cmd.Ref, Token: en.token})
	c.memberReport(f.Waiter, events.Report{Kind: events.Granted, Path: cmd.Path, Node: en.c.Node(), Token: en.token})
	if cr.suspended {
		c.notify(Notice{Kind: NoteSuspended, ID: f.Waiter, Token: en.token})
		c.memberReport(f.Waiter, events.Report{Kind: events.Suspended, Path: cmd.Path})
	}
}

// endMember ends the turn of member id, err its release's outcome.
func (c *Core) endMember(id uint64, err error) {
	h, token, ok := c.dropMember(id)
	if !ok {
		return
	}
	c.notify(Notice{Kind: NoteEnded, ID: id, Token: token, Err: err})
	// FromLease: a lease the watchdog lost meanwhile reports its loss.
	c.notify(Notice{Kind: NoteReleased, ID: id, Token: token, Err: err, FromLease: true})
	c.memberReport(id, events.Report{Kind: events.Released, Path: h.path, Token: token})
	c.notify(Notice{Kind: NoteDropped, ID: id})
}

// loseMember: member id's lease is lost with its node, for err; releasing,
// its release waited for the node's deletion, and ends with the loss.
func (c *Core) loseMember(id uint64, err error, releasing bool) {
	h, token, ok := c.dropMember(id)
	if !ok {
		return
	}
	c.notify(Notice{Kind: NoteLost, ID: id, Token: token, Err: err})
	if releasing {
		c.notify(Notice{Kind: NoteReleased, ID: id, Token: token, FromLease: true})
	}
	c.memberReport(id, events.Report{Kind: events.Lost, Path: h.path, Token: token, Err: err})
	c.notify(Notice{Kind: NoteDropped, ID: id})
}

// dropMember forgets member id, holding a node no more, and has the
// watchdog forget its lease; token is the node's. false: id held none.
func (c *Core) dropMember(id uint64) (h member, token int64, ok bool) {
	if h, ok = c.coh.held[id]; !ok {
		return h, 0, false
	}
	delete(c.coh.held, id)
	c.watchdog.Forget(id)
	return h, c.contenders[h.attempt].tokenOr(), true
}

// tokenOr is en's token; 0 for no entry.
func (en *entry) tokenOr() int64 {
	if en == nil {
		return 0
	}
	return en.token
}

// giveBack releases a cohort's node: f.Waiter, if not 0, is the member
// whose release ends with its deletion, and keeps its lease until then.
func (c *Core) giveBack(f cohort.Effect, cr *cohortNode, en *entry) {
	if cr == nil || en == nil {
		c.endMember(f.Waiter, nil)
		return
	}
	cr.givenBack, cr.back, cr.yield = true, f.Waiter, f.Yield
	if cr.holder == f.Waiter {
		cr.holder = 0
	}
	c.stopCohortTimer(cr)
	c.unwatchCohort(en)
	if en.leased() && en.c.Phase() == contender.Held {
		// The node's own lease ends here, as a holder's at its release:
		// nothing more is granted under it.
		c.endLease(en, Notice{Kind: NoteEnded, ID: en.id, Token: en.token})
		c.stepContender(en, contender.Input{Kind: contender.Release})
		return
	}
	c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: contender.ErrClosed})
}

func (c *Core) stopCohortTimer(cr *cohortNode) {
	if cr.linger == 0 {
		return
	}
	delete(c.coh.lingering, cr.linger)
	if _, armed := c.timers[cr.linger]; armed {
		delete(c.timers, cr.linger)
		c.rd.Timers = append(c.rd.Timers, TimerAction{ID: cr.linger, Stop: true})
	}
	cr.linger = 0
}

// unwatchCohort forgets the cohort watch of en's node, if any.
func (c *Core) unwatchCohort(en *entry) {
	p := en.c.LockPath()
	ids := slices.DeleteFunc(c.coh.watching[p], func(id uint64) bool { return id == en.id })
	if len(ids) == 0 {
		delete(c.coh.watching, p)
	} else {
		c.coh.watching[p] = ids
	}
}

// cohortWatched takes the reply to an AskWatch listing.
func (c *Core) cohortWatched(d input.OpDone) {
	en := c.contenders[d.Contender]
	if en == nil || c.coh.carriers[d.Contender] == nil {
		return
	}
	if d.Outcome != input.OK {
		c.unwatchCohort(en)
	}
	c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Watched, Carrier: d.Contender, Self: en.c.Node(),
		Children: d.Children, Failed: d.Outcome != input.OK}))
}

// cohortWatchFired: the watch of lockPath fired; every cohort that asked
// it now knows another client may wait.
func (c *Core) cohortWatchFired(lockPath string) {
	ids := c.coh.watching[lockPath]
	if len(ids) == 0 {
		return
	}
	delete(c.coh.watching, lockPath)
	for _, id := range ids {
		c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Wake, Carrier: id, Fired: true}))
	}
}

// cohortTimer: a lingering node's timer fired; false: not one.
func (c *Core) cohortTimer(id uint64) bool {
	a, ok := c.coh.lingering[id]
	if !ok {
		return false
	}
	delete(c.coh.lingering, id)
	if cr := c.coh.carriers[a]; cr != nil && cr.linger == id {
		cr.linger = 0
	}
	c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Wake, Carrier: a, Timer: true}))
	return true
}

// releaseMember ends the turn of member id, holding a node by cohort;
// false: id holds none that way.
func (c *Core) releaseMember(id uint64) bool {
	h, ok := c.coh.held[id]
	if !ok {
		return false
	}
	c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Release, CohortID: h.cohort, Waiter: id, Carrier: h.attempt}))
	return true
}

// cancelMembers ends the members of a cancel group whose contexts ended;
// false: the machine does not follow it.
func (c *Core) cancelMembers(cmd *Cancel) bool {
	if _, ok := c.coh.groups[cmd.Group]; !ok {
		return false
	}
	delete(c.coh.groups, cmd.Group) // let go of already: see cancel
	c.stepCohorts(&cohort.Input{Kind: cohort.Cancel, Group: cmd.Group, Err: cmd.Cause})
	return true
}

// A carrier's contender's effects, where they differ from another
// contender's: its grant is the machine's to hand on, its outcome and its
// node's loss are the machine's inputs, and what its release ends is the
// member's turn it was given back at.

// carrierGranted: the carrier's node was granted and admitted.
func (c *Core) carrierGranted(en *entry, suspended bool) {
	cr := c.coh.carriers[en.id]
	cr.suspended = suspended
	c.stepCohorts(c.verdict(&cohort.Input{Kind: cohort.Granted, Carrier: en.id, Seen: cr.seen}))
}

// carrierFailed: the carrier's acquisition ended with err, no grant.
func (c *Core) carrierFailed(en *entry, err error) {
	if cr := c.coh.carriers[en.id]; cr != nil && !cr.givenBack {
		c.stepCohorts(&cohort.Input{Kind: cohort.Failed, Carrier: en.id, Err: err})
	}
}

// carrierReleased: the carrier's node was deleted (err: how its release
// ended). The member given back with it ends; a node the machine did not
// give back (the engine closes) is lost to it.
func (c *Core) carrierReleased(en *entry, err error) {
	cr := c.coh.carriers[en.id]
	if cr.back != 0 {
		c.endMember(cr.back, err)
		cr.back = 0
	}
	c.carrierGone(en.id, cr, contender.ErrClosed)
}

// carrierLost: the carrier's node was lost, for err.
func (c *Core) carrierLost(en *entry, err error) {
	cr := c.coh.carriers[en.id]
	c.stopCohortTimer(cr)
	c.unwatchCohort(en)
	if cr.back != 0 {
		c.loseMember(cr.back, err, true)
		cr.back = 0
	}
	c.carrierGone(en.id, cr, err)
}

// carrierGone tells the machine, once, that the node of attempt is gone
// for err, unless the machine gave it back itself.
func (c *Core) carrierGone(attempt uint64, cr *cohortNode, err error) {
	if !cr.givenBack {
		cr.givenBack = true
		c.stepCohorts(&cohort.Input{Kind: cohort.Lost, Carrier: attempt, Err: err})
	}
}

// carrierSuspended: the session of the carrier's node is disconnected
// (on), or back; its holder is told.
func (c *Core) carrierSuspended(en *entry, on bool) {
	cr := c.coh.carriers[en.id]
	cr.suspended = on
	h, ok := c.coh.held[cr.holder]
	if cr.holder == 0 || !ok {
		return
	}
	kind, report := NoteResumed, events.Resumed
	if on {
		kind, report = NoteSuspended, events.Suspended
	}
	c.notify(Notice{Kind: kind, ID: cr.holder, Token: en.token})
	c.memberReport(cr.holder, events.Report{Kind: report, Path: h.path})
}

// carrierForgotten: the carrier's contender is gone. Tries held back
// on its path go on once no node of the path is on its way back.
func (c *Core) carrierForgotten(en *entry) {
	cr := c.coh.carriers[en.id]
	if cr.back != 0 {
		c.loseMember(cr.back, contender.ErrClosed, true)
	}
	c.carrierGone(en.id, cr, contender.ErrClosed)
	c.stopCohortTimer(cr)
	delete(c.coh.carriers, en.id)
	p := en.c.LockPath()
	if tries := c.coh.tries[p]; len(tries) > 0 && !c.givingBack(p) {
		delete(c.coh.tries, p)
		for _, cmd := range tries {
			c.newContender(cmd, false, true) // follows its group itself
			if cmd.Cancel != 0 {
				c.unfollow(cmd.Cancel)
			}
		}
	}
}

// failHeldTries fails the tries held back (the engine closes).
func (c *Core) failHeldTries(err error) {
	for _, p := range slices.Sorted(maps.Keys(c.coh.tries)) {
		for _, cmd := range c.coh.tries[p] {
			c.notify(Notice{Kind: NoteAcquired, ID: cmd.ID, Ref: cmd.Ref, Err: err})
			c.report(&entry{id: cmd.ID}, events.Report{Kind: events.Cancelled, Path: cmd.Path, Err: err})
			if cmd.Cancel != 0 {
				c.unfollow(cmd.Cancel)
			}
		}
		delete(c.coh.tries, p)
	}
}

// CohortWatching are the attempts whose watch of lockPath waits for a
// notification, for the simulator's check of linger.
func (c *Core) CohortWatching(lockPath string) []uint64 {
	return slices.Clone(c.coh.watching[lockPath])
}

// Unheld names the node of the first of attempts that is still held by
// this engine for a cohort with no holder; "" if none is.
func (c *Core) Unheld(attempts []uint64) string {
	for _, a := range attempts {
		cr, en := c.coh.carriers[a], c.contenders[a]
		if cr != nil && en != nil && !cr.givenBack && cr.holder == 0 && en.leased() {
			return en.node
		}
	}
	return ""
}
