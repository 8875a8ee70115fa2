package core

import (
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Cancel groups: an acquisition ends when its context does, before the
// grant. The acquisitions whose contexts end with one Done channel form
// one group, named by the runtime (Acquire.Cancel): the runtime follows
// each group's context once, however many acquisitions share it (a
// pipeline issuing thousands under one context pays for one), and posts a
// Cancel when it ends.

// Cancel: the contexts of cancel group Group have ended, for Cause.
type Cancel struct {
	Group uint64
	Cause error
}

// cancelGroup is every live acquisition of one cancel group.
type cancelGroup struct {
	ids map[uint64]struct{}
}

// attach has en cancelled when the contexts of group end.
func (c *Core) attach(en *entry, group uint64) {
	if group == 0 {
		return // never cancelled
	}
	g := c.cancels[group]
	if g == nil {
		g = &cancelGroup{ids: make(map[uint64]struct{})}
		c.cancels[group] = g
		c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: group})
	}
	g.ids[en.id] = struct{}{}
	en.cancelOn = group
}

// detach stops watching en's context: it was granted, or it ended.
func (c *Core) detach(en *entry) {
	if en.cancelOn == 0 {
		return
	}
	if g := c.cancels[en.cancelOn]; g != nil {
		delete(g.ids, en.id)
		if len(g.ids) == 0 {
			c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: en.cancelOn, Stop: true})
			delete(c.cancels, en.cancelOn)
		}
	}
	en.cancelOn = 0
}

// cancel ends every acquisition of a cancel group whose context ended.
func (c *Core) cancel(cmd *Cancel) {
	g := c.cancels[cmd.Group]
	if g == nil {
		return
	}
	delete(c.cancels, cmd.Group)
	// The runtime forgets the context it followed.
	c.rd.Contexts = append(c.rd.Contexts, ContextAction{Group: cmd.Group, Stop: true})
	for _, id := range slices.Sorted(maps.Keys(g.ids)) {
		if en := c.contenders[id]; en != nil {
			en.cancelOn = 0
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: cmd.Cause})
		}
	}
}
