package core

import (
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Cancel groups: an acquisition ends when its context does, before the
// grant. The acquisitions whose contexts end with one Done channel form
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
	if c.cancels.Join(group, en.id, en.id, en.cancelOn) && !c.cohortFollows(group) {
		c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: group})
	}
}

// detach stops watching en's context: it was granted, or it ended.
func (c *Core) detach(en *entry) {
	if en.cancelOn == nil {
		return
	}
	group := en.cancelOn.Group()
	if c.cancels.Leave(en.cancelOn) && !c.cohortFollows(group) {
		c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: group, Stop: true})
	}
	en.cancelOn = nil
}

// cancel ends every acquisition of a cancel group whose context ended.
func (c *Core) cancel(cmd *Cancel) {
	ids, ok := c.cancels.End(cmd.Group)
	if !ok && !c.cohortFollows(cmd.Group) {
		return
	}
	// The runtime forgets the context it followed.
	c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: cmd.Group, Stop: true})
	for _, id := range ids {
		if en := c.contenders[id]; en != nil {
			en.cancelOn = nil // out of the group already
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: cmd.Cause})
		}
	}
	c.cancelMembers(cmd)
}

// cohortFollows reports whether the cohorts' machine follows group.
func (c *Core) cohortFollows(group uint64) bool {
	_, ok := c.coh.groups[group]
	return ok
}
