package engine

import (
	"context"
	"log/slog"

	"github.com/turnstile-go/turnstile/events"
)

// The core's contenders: the users' commands that make, release and close
// them, and the effects of their machines carried out on the core.

type acquireCmd struct {
	ctx context.Context
	req Request
	fut *Future[*Lease]
}

type releaseCmd struct {
	lease *Lease
	fut   *Future[struct{}]
}

type closeCmd struct{}

func (c *core) handleCommand(cmd any) {
	switch cmd := cmd.(type) {
	case acquireCmd:
		c.acquire(cmd)
	case cancelCmd:
		c.cancel(cmd)
	case releaseCmd:
		en := c.contenders[cmd.lease.id]
		if en == nil || en.lease != cmd.lease || en.c.phase != phaseHeld {
			c.notify(notice{kind: noteReleaseRefused, released: cmd.fut, lease: cmd.lease})
			return
		}
		en.released = cmd.fut
		c.stepContender(en, input{kind: inRelease})
	case closeCmd:
		c.closing = true
		c.closeTimer = c.after(c.cfg.CloseTimeout)
		for _, en := range c.byID() {
			c.stepContender(en, input{kind: inCancel, err: ErrClosed, closing: true})
		}
	}
}

func (c *core) acquire(cmd acquireCmd) {
	if c.closing {
		c.notify(notice{kind: noteAcquired, acquired: cmd.fut, err: ErrClosed})
		return
	}
	c.nextID++
	en := &entry{id: c.nextID, data: cmd.req.Data, revocable: cmd.req.Revocable, acquired: cmd.fut,
		c: *newContender(cmd.req.Path, cmd.req.Prefix, cmd.req.Decide, c.newID)}
	en.c.fixedSeq = cmd.req.Seq
	if en.c.fixedSeq != "" {
		c.borrowed[en.c.lockPath]++
	}
	en.c.tryOnly = cmd.req.TryOnly
	en.c.failExp = c.cfg.FailOnExpiry || cmd.req.FailOnExpiry
	en.c.connected = c.connected
	en.c.untrusted = c.untrusted
	c.contenders[en.id] = en
	c.report(en, events.Report{Kind: events.Acquiring, Path: cmd.req.Path})
	c.attach(en, cmd.ctx)
	c.stepContender(en, input{kind: inStart})
}

// stepContender feeds one input to a contender and carries out its effects.
func (c *core) stepContender(en *entry, in input) {
	before := en.c.node
	effs := en.c.step(in)
	if after := en.c.node; after != before {
		// Keep the index of our own nodes, which waiters of this engine
		// watch without asking the server.
		if before != "" {
			c.gone(en.c.lockPath + "/" + before)
		}
		if after != "" && en.c.phase != phaseDone {
			c.nodes[en.c.nodePath()] = en.id
		}
	}
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("step", "id", en.id, "path", en.c.lockPath, "input", in.kind, "phase", en.c.phase, "effects", effs)
	}
	for _, ef := range effs {
		c.apply(en, ef)
	}
}

func (c *core) apply(en *entry, ef effect) {
	switch ef.kind {
	case effCreate:
		en.attempts = 0
		c.sendingCreate(en)
		c.commit.submit(&c.rd, op{kind: events.OpCreate, id: en.id, path: ef.path, data: en.data, fixed: en.c.fixedSeq != ""})
	case effCreateParents:
		waiting, inFlight := c.parents[ef.path]
		c.parents[ef.path] = append(waiting, en.id)
		if !inFlight {
			c.commit.submit(&c.rd, op{kind: events.OpCreateParents, path: ef.path})
		}
	case effList:
		c.requestListing(ef.path, en.id)
	case effRecover:
		c.commit.submit(&c.rd, op{kind: events.OpRecover, id: en.id, path: ef.path, find: ef.id})
	case effWatch:
		c.watch(en, ef)
	case effDelete:
		c.sendingChange(en.c.lockPath)
		o := op{kind: events.OpDelete, id: en.id, path: ef.path}
		if en.c.granted && c.localWatch[ef.path] != nil {
			// A holder lets go and a waiter of ours is next: the lock is
			// idle until this delete is answered, so it waits for nothing.
			c.commit.send(&c.rd, o)
			return
		}
		c.commit.submit(&c.rd, o)
	case effGrant:
		c.grant(en, ef)
	case effFail:
		c.detach(en)
		c.notify(notice{kind: noteAcquired, acquired: en.acquired, err: ef.err})
		kind := events.Failed
		if ef.err == context.Canceled || ef.err == context.DeadlineExceeded || ef.err == ErrClosed {
			kind = events.Cancelled
		}
		c.report(en, events.Report{Kind: kind, Path: en.c.lockPath, Err: ef.err})
	case effReleased:
		c.endLease(en, notice{kind: noteEnded, lease: en.lease, err: ef.err})
		if en.released != nil {
			c.notify(notice{kind: noteReleased, released: en.released, err: ef.err})
			en.released = nil
		}
		c.report(en, events.Report{Kind: events.Released, Path: en.c.lockPath, Token: en.lease.token})
	case effSuspend:
		c.notify(notice{kind: noteSuspended, lease: en.lease})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.lockPath})
	case effResume:
		c.notify(notice{kind: noteResumed, lease: en.lease})
		c.report(en, events.Report{Kind: events.Resumed, Path: en.c.lockPath})
	case effLost:
		c.trust.forget(en.lease)
		c.endLease(en, notice{kind: noteLost, lease: en.lease, err: ef.err})
		if en.released != nil {
			c.notify(notice{kind: noteReleased, released: en.released, lease: en.lease, fromLease: true})
			en.released = nil
		}
		c.report(en, events.Report{Kind: events.Lost, Path: en.c.lockPath, Token: en.lease.token, Err: ef.err})
	case effPark:
		if ef.err != nil {
			c.log.Warn("request refused; retrying", "path", en.c.lockPath, "err", ef.err)
		}
		c.park(en)
	case effDone:
		c.forget(en, ef.err)
	}
}

// grant hands a lease to a contender its recipe admits, if the session is
// trusted at this instant.
func (c *core) grant(en *entry, ef effect) {
	en.attempts = 0
	lease := c.newLease(en.id, en.c.lockPath, en.c.full, ef.token)
	if !c.trust.admit(lease, c.session) {
		// The watchdog found the session untrusted after the loop last
		// heard from it, or follows a session the loop has not heard of
		// yet: no one may be granted now.
		c.stepContender(en, input{kind: inRefused, sessionEnded: !c.trust.follows(c.session)})
		return
	}
	c.detach(en)
	en.lease = lease
	c.notify(notice{kind: noteAcquired, acquired: en.acquired, lease: lease})
	c.report(en, events.Report{Kind: events.Granted, Path: en.c.lockPath, Node: en.c.node, Token: ef.token})
	c.granted(en)
	if ef.suspended {
		c.notify(notice{kind: noteSuspended, lease: lease})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.lockPath})
	}
	if en.revocable {
		c.watchRevoke(en)
	}
}

// forget ends a contender: its machine is done. err is why its node, if
// any, was left to the session's end.
func (c *core) forget(en *entry, err error) {
	if err != nil {
		c.log.Error("node left until the session ends", "path", en.c.lockPath, "err", err)
	}
	c.unwatch(en)
	if en.c.node != "" {
		c.gone(en.c.nodePath()) // forgotten, whether or not it still exists
	}
	if en.revokeWatch {
		if node := en.lease.node; c.revokers[node] == en.id {
			delete(c.revokers, node)
		}
	}
	c.detach(en)
	if en.lease != nil {
		c.trust.forget(en.lease)
		c.endLease(en, notice{kind: noteEnded, lease: en.lease})
	}
	if en.released != nil {
		// A release that raced a loss ends with the loss.
		c.notify(notice{kind: noteReleased, released: en.released, lease: en.lease, fromLease: true})
		en.released = nil
	}
	if en.c.fixedSeq != "" {
		if c.borrowed[en.c.lockPath]--; c.borrowed[en.c.lockPath] == 0 {
			delete(c.borrowed, en.c.lockPath)
		}
	}
	delete(c.contenders, en.id)
}

// endLease tells a lease it ended (n: lost or ended), once.
func (c *core) endLease(en *entry, n notice) {
	if !en.ended {
		en.ended = true
		c.notify(n)
	}
}

// forceEnd ends a contender without its machine: only when closing.
func (c *core) forceEnd(en *entry, err error) {
	if !en.c.resolved {
		en.c.resolved = true
		c.notify(notice{kind: noteAcquired, acquired: en.acquired, err: err})
	}
	if en.lease != nil {
		c.endLease(en, notice{kind: noteLost, lease: en.lease, err: err})
	}
	en.c.phase = phaseDone
	c.forget(en, nil)
}
