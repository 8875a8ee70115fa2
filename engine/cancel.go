package engine

import (
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Cancel groups: an acquisition ends when its context does, before the
// grant. The acquisitions whose contexts end with one Done channel form
// one group, named by the runtime (coreAcquire.Cancel): the runtime follows
// each group's context once, however many acquisitions share it (a
// pipeline issuing thousands under one context pays for one), and posts a
// coreCancel when it ends.

// coreCancel: the contexts of cancel group Group have ended, for Cause.
type coreCancel struct {
	Group uint64
	Cause error
}

// cancelGroup is every live acquisition of one cancel group.
type cancelGroup struct {
	ids map[uint64]struct{}
}

// attach has en cancelled when the contexts of group end.
func (c *core) attach(en *entry, group uint64) {
	if group == 0 {
		return // never cancelled
	}
	g := c.cancels[group]
	if g == nil {
		g = &cancelGroup{ids: make(map[uint64]struct{})}
		c.cancels[group] = g
		c.rd.Contexts = append(c.rd.Contexts, contextAction{Group: group})
	}
	g.ids[en.id] = struct{}{}
	en.cancelOn = group
}

// detach stops watching en's context: it was granted, or it ended.
func (c *core) detach(en *entry) {
	if en.cancelOn == 0 {
		return
	}
	if g := c.cancels[en.cancelOn]; g != nil {
		delete(g.ids, en.id)
		if len(g.ids) == 0 {
			c.rd.Contexts = append(c.rd.Contexts, contextAction{Group: en.cancelOn, Stop: true})
			delete(c.cancels, en.cancelOn)
		}
	}
	en.cancelOn = 0
}

// cancel ends every acquisition of a cancel group whose context ended.
func (c *core) cancel(cmd *coreCancel) {
	g := c.cancels[cmd.Group]
	if g == nil {
		return
	}
	delete(c.cancels, cmd.Group)
	// The runtime forgets the context it followed.
	c.rd.Contexts = append(c.rd.Contexts, contextAction{Group: cmd.Group, Stop: true})
	for _, id := range slices.Sorted(maps.Keys(g.ids)) {
		if en := c.contenders[id]; en != nil {
			en.cancelOn = 0
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: cmd.Cause})
		}
	}
}
