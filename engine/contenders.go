package engine

import (
	"context"
	"log/slog"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/nodename"
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
		if en == nil || en.lease != cmd.lease || en.c.Phase() != contender.Held {
			c.notify(notice{kind: noteReleaseRefused, released: cmd.fut, lease: cmd.lease})
			return
		}
		en.released = cmd.fut
		c.stepContender(en, contender.Input{Kind: contender.Release})
	case closeCmd:
		c.closing = true
		c.closeTimer = c.after(c.cfg.CloseTimeout)
		for _, en := range c.byID() {
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: ErrClosed, Closing: true})
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
		c: contender.New(contender.Config{
			LockPath:     cmd.req.Path,
			Prefix:       nodename.Marker(cmd.req.Kind),
			Decide:       contender.Decider(cmd.req.Decide),
			NewID:        c.newID,
			Seq:          cmd.req.Seq,
			TryOnly:      cmd.req.TryOnly,
			FailOnExpiry: c.cfg.FailOnExpiry || cmd.req.FailOnExpiry,
			Connected:    c.connected,
			Untrusted:    c.untrusted,
		})}
	if en.c.Borrowed() {
		c.borrowed[cmd.req.Path]++
	}
	c.contenders[en.id] = en
	c.report(en, events.Report{Kind: events.Acquiring, Path: cmd.req.Path})
	c.attach(en, cmd.ctx)
	c.stepContender(en, contender.Input{Kind: contender.Start})
}

// stepContender feeds one input to a contender and carries out its effects.
func (c *core) stepContender(en *entry, in contender.Input) {
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
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("step", "id", en.id, "path", en.c.LockPath(), "input", in.Kind, "phase", en.c.Phase(), "effects", effs)
	}
	for _, ef := range effs {
		c.apply(en, ef)
	}
}

func (c *core) apply(en *entry, ef contender.Effect) {
	switch ef.Kind {
	case contender.Create:
		en.attempts = 0
		c.sendingCreate(en)
		c.commit.submit(&c.rd, op{kind: input.OpCreate, id: en.id, path: ef.Path, data: en.data, fixed: en.c.Borrowed()})
	case contender.CreateParents:
		waiting, inFlight := c.parents[ef.Path]
		c.parents[ef.Path] = append(waiting, en.id)
		if !inFlight {
			c.commit.submit(&c.rd, op{kind: input.OpCreateParents, path: ef.Path})
		}
	case contender.List:
		c.requestListing(ef.Path, en.id)
	case contender.Recover:
		c.commit.submit(&c.rd, op{kind: input.OpRecover, id: en.id, path: ef.Path, find: ef.ID})
	case contender.Watch:
		c.watch(en, ef)
	case contender.Delete:
		c.sendingChange(en.c.LockPath())
		o := op{kind: input.OpDelete, id: en.id, path: ef.Path}
		if en.c.Granted() && c.localWatch[ef.Path] != nil {
			// A holder lets go and a waiter of ours is next: the lock is
			// idle until this delete is answered, so it waits for nothing.
			c.commit.send(&c.rd, o)
			return
		}
		c.commit.submit(&c.rd, o)
	case contender.Grant:
		c.grant(en, ef)
	case contender.Fail:
		c.detach(en)
		c.notify(notice{kind: noteAcquired, acquired: en.acquired, err: ef.Err})
		kind := events.Failed
		if ef.Err == context.Canceled || ef.Err == context.DeadlineExceeded || ef.Err == ErrClosed {
			kind = events.Cancelled
		}
		c.report(en, events.Report{Kind: kind, Path: en.c.LockPath(), Err: ef.Err})
	case contender.Released:
		c.endLease(en, notice{kind: noteEnded, lease: en.lease, err: ef.Err})
		if en.released != nil {
			c.notify(notice{kind: noteReleased, released: en.released, err: ef.Err})
			en.released = nil
		}
		c.report(en, events.Report{Kind: events.Released, Path: en.c.LockPath(), Token: en.lease.token})
	case contender.Suspend:
		c.notify(notice{kind: noteSuspended, lease: en.lease})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.LockPath()})
	case contender.Resume:
		c.notify(notice{kind: noteResumed, lease: en.lease})
		c.report(en, events.Report{Kind: events.Resumed, Path: en.c.LockPath()})
	case contender.Lost:
		c.trust.forget(en.lease)
		c.endLease(en, notice{kind: noteLost, lease: en.lease, err: ef.Err})
		if en.released != nil {
			c.notify(notice{kind: noteReleased, released: en.released, lease: en.lease, fromLease: true})
			en.released = nil
		}
		c.report(en, events.Report{Kind: events.Lost, Path: en.c.LockPath(), Token: en.lease.token, Err: ef.Err})
	case contender.Park:
		if ef.Err != nil {
			c.log.Warn("request refused; retrying", "path", en.c.LockPath(), "err", ef.Err)
		}
		c.park(en)
	case contender.Forget:
		c.forget(en, ef.Err)
	}
}

// grant hands a lease to a contender its recipe admits, if the session is
// trusted at this instant.
func (c *core) grant(en *entry, ef contender.Effect) {
	en.attempts = 0
	lease := c.newLease(en.id, en.c.LockPath(), en.c.NodePath(), ef.Token)
	if !c.trust.admit(lease, c.session) {
		// The watchdog found the session untrusted after the loop last
		// heard from it, or follows a session the loop has not heard of
		// yet: no one may be granted now.
		c.stepContender(en, contender.Input{Kind: contender.GrantRefused, SessionEnded: !c.trust.follows(c.session)})
		return
	}
	c.detach(en)
	en.lease = lease
	c.notify(notice{kind: noteAcquired, acquired: en.acquired, lease: lease})
	c.report(en, events.Report{Kind: events.Granted, Path: en.c.LockPath(), Node: en.c.Node(), Token: ef.Token})
	c.granted(en)
	if ef.Suspended {
		c.notify(notice{kind: noteSuspended, lease: lease})
		c.report(en, events.Report{Kind: events.Suspended, Path: en.c.LockPath()})
	}
	if en.revocable {
		c.watchRevoke(en)
	}
}

// forget ends a contender: its machine is done. err is why its node, if
// any, was left to the session's end.
func (c *core) forget(en *entry, err error) {
	if err != nil {
		c.log.Error("node left until the session ends", "path", en.c.LockPath(), "err", err)
	}
	c.unwatch(en)
	if en.c.Node() != "" {
		c.gone(en.c.NodePath()) // forgotten, whether or not it still exists
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
	if en.c.Borrowed() {
		if c.borrowed[en.c.LockPath()]--; c.borrowed[en.c.LockPath()] == 0 {
			delete(c.borrowed, en.c.LockPath())
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
	if en.c.ForceEnd() {
		c.notify(notice{kind: noteAcquired, acquired: en.acquired, err: err})
	}
	if en.lease != nil {
		c.endLease(en, notice{kind: noteLost, lease: en.lease, err: err})
	}
	c.forget(en, nil)
}
