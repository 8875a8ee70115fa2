package core

import (
	"slices"
	"strings"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// The core's contenders: the users' commands that make, release and close
// them, and the effects of their machines carried out on the core.
//
// Commands reach Step as input.Command payloads, by pointer: the runtime
// keeps each in the command it posted, so handing it over allocates
// nothing.

// Acquire starts acquisition ID on a valid request, on the server's
// path: a contender, or a member of a cohort (see cohorts.go). ID 0: the
// core names it, after every id it gave or was given.
type Acquire struct {
	ID           uint64
	Path         string
	Kind         queue.Kind
	Decide       contender.Decider
	Data         []byte
	Seq          string
	TryOnly      bool
	Revocable    bool
	FailOnExpiry bool
	// Cohort: the lease may pass among this engine's acquisitions of the
	// same lock (lock cohorting; engine.Request.Cohort).
	Cohort bool
	// Cancel is the acquisition's cancel group: every acquisition whose
	// context ends with one Done channel has the same (see cancel.go); 0
	// for a context that never ends.
	Cancel uint64
	// Ref is the runtime's, opaque to the core: whose acquisition this
	// is, echoed in its NoteAcquired so that the runtime finds it without
	// a lookup by ID.
	Ref any
}

// Release releases the lease of acquisition ID.
type Release struct {
	ID uint64
}

// Close closes the engine.
type Close struct{}

func (c *Core) handleCommand(cmd any) {
	switch cmd := cmd.(type) {
	case *Acquire:
		c.acquire(cmd)
	case *Cancel:
		c.cancel(cmd)
	case *Release:
		if c.releaseMember(cmd.ID) {
			return
		}
		en := c.contenders[cmd.ID]
		if en == nil || !en.leased() || en.c.Phase() != contender.Held {
			n := Notice{Kind: NoteReleaseRefused, ID: cmd.ID}
			if en != nil && en.leased() {
				n.Token = en.token
			}
			c.notify(n)
			return
		}
		en.releasing = true
		c.stepContender(en, contender.Input{Kind: contender.Release})
	case *Close:
		c.closing = true
		c.closeTimer = c.after(c.cfg.CloseTimeout)
		c.failHeldTries(contender.ErrClosed)
		for _, en := range c.byID() {
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: contender.ErrClosed, Closing: true})
		}
	}
}

func (c *Core) acquire(cmd *Acquire) {
	if cmd.ID == 0 {
		cmd.ID = c.newID()
	} else {
		c.lastID = max(c.lastID, cmd.ID)
	}
	if c.closing {
		c.notify(Notice{Kind: NoteAcquired, ID: cmd.ID, Ref: cmd.Ref, Err: contender.ErrClosed})
		return
	}
	if cmd.Seq != "" {
		// A node with a borrowed number takes the place of a held one of
		// this engine (a downgrade): that node may not pass on.
		c.stepCohorts(&cohort.Input{Kind: cohort.Seal, Path: cmd.Path})
	}
	if c.joinCohort(cmd) || c.tryBesideLinger(cmd) {
		return
	}
	c.newContender(cmd, false, false)
}

// newID names an acquisition, or a cohort's attempt: ids count up in the
// order the core takes them.
func (c *Core) newID() uint64 {
	c.lastID++
	return c.lastID
}

// newContender makes contender cmd.ID; carrier: it acquires a cohort's
// node (see cohorts.go); reported: its Acquiring was reported already (a
// try held back, see tryBesideLinger).
func (c *Core) newContender(cmd *Acquire, carrier, reported bool) {
	en := &entry{id: cmd.ID, req: cmd, revocable: cmd.Revocable, carrier: carrier,
		c: contender.New(contender.Config{
			LockPath:     cmd.Path,
			Prefix:       nodename.Marker(cmd.Kind),
			Decide:       cmd.Decide,
			NewID:        c.cfg.NewID,
			Seq:          cmd.Seq,
			Lender:       c.lender(cmd.Path, cmd.Seq),
			TryOnly:      cmd.TryOnly,
			FailOnExpiry: c.cfg.FailOnExpiry || cmd.FailOnExpiry,
			Connected:    c.connected,
			Untrusted:    c.untrusted,
		})}
	if en.c.Borrowed() {
		c.borrowed[cmd.Path]++
	}
	c.contenders[en.id] = en
	if !reported {
		c.report(en, events.Report{Kind: events.Acquiring, Path: cmd.Path, NodeKind: cmd.Kind})
	}
	c.attach(en, cmd.Cancel)
	c.stepContender(en, contender.Input{Kind: contender.Start})
}

// lender is the name of this engine's held exclusive node on lockPath
// numbered seq (a downgrade's writer), whose place a node of that borrowed number
// takes; "" if there is none, or no seq. A downgrade is rare: a scan of
// the engine's nodes costs it nothing worth a map of its own.
func (c *Core) lender(lockPath, seq string) string {
	if seq == "" {
		return ""
	}
	for node, id := range c.nodes {
		i := strings.LastIndexByte(node, '/')
		if node[:i] != lockPath {
			continue
		}
		n, ok := queue.Parse(node[i+1:])
		en := c.contenders[id]
		if ok && n.Kind != queue.KindRead && nodename.FormatSeq(n.Seq) == seq && en != nil && en.leased() && en.c.Phase() == contender.Held {
			return n.Name
		}
	}
	return ""
}

// stepContender feeds one input to a contender and carries out its effects.
func (c *Core) stepContender(en *entry, in contender.Input) {
	before := en.c.Node()
	effs := en.c.Step(in)
	if after := en.c.Node(); after != before {
		// Keep the index of our own nodes, which waiters of this engine
		// watch without asking the server.
		if before != "" {
			c.gone(en.c.LockPath() + "/" + before)
		}
		if after != "" && en.c.Phase() != contender.Done {
			c.nodes[en.c.NodePath()] = en.id
		}
	}
	if c.debug() {
		c.log(LevelDebug, "step", "id", en.id, "path", en.c.LockPath(), "input", in.Kind, "phase", en.c.Phase(), "effects", effs)
	}
	for _, ef := range effs {
		c.apply(en, ef)
	}
}

func (c *Core) apply(en *entry, ef contender.Effect) {
	switch ef.Kind {
	case contender.Create:
		en.attempts = 0
		// Asked before sendingCreate, which makes the path's view. A node
		// with a borrowed number is made only beside its lender's, so its
		// path exists (and must not be made again if gone).
		cold := !en.c.Borrowed() && (ef.Cold || c.cold(en.c.LockPath()))
		delete(c.made, en.id)
		c.sendingCreate(en)
		c.commit.submit(&c.rd, Op{Kind: input.OpCreate, ID: en.id, Path: ef.Path, Data: en.req.Data, Fixed: en.c.Borrowed(), Cold: cold})
	case contender.List:
		c.requestListing(ef.Path, en.id)
	case contender.Recover:
		c.commit.submit(&c.rd, Op{Kind: input.OpRecover, ID: en.id, Path: ef.Path, Find: ef.ID})
	case contender.Watch:
		c.watch(en, ef)
	case contender.Delete:
		prune := c.prunes(en, ef.Path)
		c.sendingChange(en.c.LockPath())
		o := Op{Kind: input.OpDelete, ID: en.id, Path: ef.Path, Prune: prune}
		if en.c.Granted() && (c.localWatch[ef.Path] != nil || en.carrier && c.coh.carriers[en.id].yield) {
			// A holder lets go and a waiter of ours is next, or a cohort's
			// node goes back to another client waiting for it: the lock is
			// idle until this delete is answered, so it waits for nothing.
			c.commit.send(&c.rd, o)
			return
		}
		c.commit.submit(&c.rd, o)
	case contender.Grant:
		c.grant(en, ef)
	case contender.Fail:
		c.detach(en)
		if en.carrier {
			c.carrierFailed(en, ef.Err)
		} else {
			c.notify(Notice{Kind: NoteAcquired, ID: en.id, Ref: en.req.Ref, Err: ef.Err})
		}
		kind := events.Failed
		if ef.Err == contender.ErrClosed || slices.Contains(c.cfg.CancelErrs, ef.Err) {
			kind = events.Cancelled
		}
		c.report(en, events.Report{Kind: kind, Path: en.c.LockPath(), Err: ef.Err})
	case contender.Released:
		c.endLease(en, Notice{Kind: NoteEnded, ID: en.id, Token: en.token, Err: ef.Err})
		if en.carrier {
			c.carrierReleased(en, ef.Err)
		}
		if en.releasing {
			c.notify(Notice{Kind: NoteReleased, ID: en.id, Err: ef.Err})
			en.releasing = false
		}
		c.report(en, events.Report{Kind: events.Released, Path: en.c.LockPath(), Token: en.token})
	case contender.Suspend:
		c.notify(Notice{Kind: NoteSuspended, ID: en.id, Token: en.token})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.LockPath()})
		if en.carrier {
			c.carrierSuspended(en, true)
		}
	case contender.Resume:
		c.notify(Notice{Kind: NoteResumed, ID: en.id, Token: en.token})
		c.report(en, events.Report{Kind: events.Resumed, Path: en.c.LockPath()})
		if en.carrier {
			c.carrierSuspended(en, false)
		}
	case contender.Lost:
		c.watchdog.Forget(en.id)
		c.endLease(en, Notice{Kind: NoteLost, ID: en.id, Token: en.token, Err: ef.Err})
		if en.releasing {
			c.notify(Notice{Kind: NoteReleased, ID: en.id, Token: en.token, FromLease: true})
			en.releasing = false
		}
		c.report(en, events.Report{Kind: events.Lost, Path: en.c.LockPath(), Token: en.token, Err: ef.Err})
		if en.carrier {
			c.carrierLost(en, ef.Err)
		}
	case contender.Park:
		if ef.Err != nil {
			c.log(LevelWarn, "request refused; retrying", "path", en.c.LockPath(), "err", ef.Err)
		}
		c.park(en)
	case contender.AwaitStop:
		c.stopAt[c.after(c.stopMargin)] = en.id
	case contender.Forget:
		c.forget(en, ef.Err)
	}
}

// grant hands a lease to a contender its recipe admits, if the session is
// trusted at this instant.
func (c *Core) grant(en *entry, ef contender.Effect) {
	en.attempts = 0
	if !c.watchdog.Admit(Grant{ID: en.id, Path: en.c.LockPath(), Node: en.c.NodePath(), Token: ef.Token}, c.session) {
		// The watchdog found the session untrusted after the loop last
		// heard from it, or follows a session the loop has not heard of
		// yet: no one may be granted now.
		c.stepContender(en, contender.Input{Kind: contender.GrantRefused, SessionEnded: !c.watchdog.Follows(c.session)})
		return
	}
	c.detach(en)
	en.node, en.token = en.c.NodePath(), ef.Token
	if !en.carrier {
		c.notify(Notice{Kind: NoteAcquired, ID: en.id, Ref: en.req.Ref, Token: ef.Token})
	}
	c.report(en, events.Report{Kind: events.Granted, Path: en.c.LockPath(), Node: en.c.Node(), Token: ef.Token})
	c.countGrant(en)
	if en.carrier {
		c.carrierGranted(en, ef.Suspended)
		return
	}
	if ef.Suspended {
		c.notify(Notice{Kind: NoteSuspended, ID: en.id, Token: en.token})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.LockPath()})
	}
	if en.revocable {
		c.watchRevoke(en)
	}
}

// forget ends a contender: its machine is done. err is why its node, if
// any, was left to the session's end.
func (c *Core) forget(en *entry, err error) {
	if err != nil {
		c.log(LevelError, "node left until the session ends", "path", en.c.LockPath(), "err", err)
	}
	c.unwatch(en)
	if en.c.Node() != "" {
		c.gone(en.c.NodePath()) // forgotten, whether or not it still exists
	}
	if en.revokeWatch {
		if c.revokers[en.node] == en.id {
			delete(c.revokers, en.node)
		}
	}
	c.detach(en)
	delete(c.made, en.id)
	if en.leased() {
		c.watchdog.Forget(en.id)
		c.endLease(en, Notice{Kind: NoteEnded, ID: en.id, Token: en.token})
	}
	if en.releasing {
		// A release that raced a loss ends with the loss.
		n := Notice{Kind: NoteReleased, ID: en.id, FromLease: true}
		if en.leased() {
			n.Token = en.token
		}
		c.notify(n)
		en.releasing = false
	}
	if en.c.Borrowed() {
		if c.borrowed[en.c.LockPath()]--; c.borrowed[en.c.LockPath()] == 0 {
			delete(c.borrowed, en.c.LockPath())
		}
	}
	if en.leased() {
		c.notify(Notice{Kind: NoteDropped, ID: en.id})
	}
	delete(c.contenders, en.id)
	if en.carrier {
		c.carrierForgotten(en)
	}
}

// endLease tells a lease it ended (n: lost or ended), once.
func (c *Core) endLease(en *entry, n Notice) {
	if !en.ended {
		en.ended = true
		c.notify(n)
	}
}

// forceEnd ends a contender without its machine: only when closing.
func (c *Core) forceEnd(en *entry, err error) {
	if en.c.ForceEnd() {
		if en.carrier {
			c.carrierFailed(en, err)
		} else {
			c.notify(Notice{Kind: NoteAcquired, ID: en.id, Ref: en.req.Ref, Err: err})
		}
	}
	if en.leased() {
		c.endLease(en, Notice{Kind: NoteLost, ID: en.id, Token: en.token, Err: err})
		if en.carrier {
			c.carrierLost(en, err)
		}
	}
	c.forget(en, nil)
}
