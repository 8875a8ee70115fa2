package core

import (
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Cancel groups: an acquisition ends when its context does, before the
// grant. Three kinds of acquisition wait under them: contenders (kept
// here), cohorts' members (kept by the cohort machine) and tries held
// back behind a lingering node (cohorts.tries); the runtime follows a
// group while any of them has a member in it (follow, unfollow). The acquisitions whose contexts end with one Done channel form
// one group, named by the runtime (Acquire.Cancel): the runtime follows
// each group's context once, however many acquisitions share it (a
// pipeline issuing thousands under one context pays for one), and posts a
// Cancel when it ends. Who is in which group is kept by
// engine/internal/cancelgroup, as for the cohorts' waiters.

// Cancel: the contexts of cancel group Group have ended, for Cause.
type Cancel struct {
	Group uint64
	Cause error
}

// attach has en cancelled when the contexts of group end.
func (c *Core) attach(en *entry, group uint64) {
	if group == 0 {
		return // never cancelled
	}
	en.cancelOn = new(cancelgroup.Member[uint64])
	if c.cancels.Join(group, en.id, en.id, en.cancelOn) {
		c.follow(group)
	}
}

// detach stops watching en's context: it was granted, or it ended.
func (c *Core) detach(en *entry) {
	if en.cancelOn == nil {
		return
	}
	group := en.cancelOn.Group()
	if c.cancels.Leave(en.cancelOn) {
		c.unfollow(group)
	}
	en.cancelOn = nil
}

// cancel ends every acquisition of a cancel group whose context ended.
func (c *Core) cancel(cmd *Cancel) {
	if c.followers[cmd.Group] == 0 {
		return
	}
	// The runtime forgets the context it followed; the group's members
	// leave it below, and their leaving asks nothing more.
	delete(c.followers, cmd.Group)
	c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: cmd.Group, Stop: true})
	ids, _ := c.cancels.End(cmd.Group)
	for _, id := range ids {
		if en := c.contenders[id]; en != nil {
			en.cancelOn = nil // out of the group already
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: cmd.Cause})
		}
	}
	c.cancelMembers(cmd)
	c.cancelHeldTries(cmd)
}

// follow: one more of the kinds of acquisition has members in group;
// the runtime follows its contexts from the first.
func (c *Core) follow(group uint64) {
	if c.followers[group]++; c.followers[group] == 1 {
		c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: group})
	}
}

// unfollow: one kind has no member in group any more; the runtime lets
// go of its contexts after the last. A group that ended is let go of
// already.
func (c *Core) unfollow(group uint64) {
	n, ok := c.followers[group]
	if !ok {
		return
	}
	if n <= 1 {
		delete(c.followers, group)
		c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: group, Stop: true})
		return
	}
	c.followers[group] = n - 1
}
