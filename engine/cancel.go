package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Cancel groups: an acquisition ends when its context does, before the
// grant. The runtime follows each context once, however many acquisitions
// share it, and posts a cancelCmd when it ends.

// cancelCmd: the contexts whose Done channel is done have ended, for
// cause.
type cancelCmd struct {
	done  <-chan struct{}
	cause error
}

// cancelGroup is every live acquisition whose context ends when one Done
// channel closes: one context.AfterFunc per context, however many
// acquisitions share it (a pipeline issuing thousands under one context
// pays for one).
type cancelGroup struct {
	ids map[uint64]struct{}
}

// attach has en cancelled when ctx ends.
func (c *core) attach(en *entry, ctx context.Context) {
	done := ctx.Done()
	if done == nil {
		return // never cancelled
	}
	g := c.cancels[done]
	if g == nil {
		g = &cancelGroup{ids: make(map[uint64]struct{})}
		c.cancels[done] = g
		c.rd.Contexts = append(c.rd.Contexts, contextAction{ctx: ctx, done: done})
	}
	g.ids[en.id] = struct{}{}
	en.cancelOn = done
}

// detach stops watching en's context: it was granted, or it ended.
func (c *core) detach(en *entry) {
	if en.cancelOn == nil {
		return
	}
	if g := c.cancels[en.cancelOn]; g != nil {
		delete(g.ids, en.id)
		if len(g.ids) == 0 {
			c.rd.Contexts = append(c.rd.Contexts, contextAction{done: en.cancelOn, stop: true})
			delete(c.cancels, en.cancelOn)
		}
	}
	en.cancelOn = nil
}

// cancel ends every acquisition of a context that ended.
func (c *core) cancel(cmd cancelCmd) {
	g := c.cancels[cmd.done]
	if g == nil {
		return
	}
	delete(c.cancels, cmd.done)
	// The runtime forgets the context it followed.
	c.rd.Contexts = append(c.rd.Contexts, contextAction{done: cmd.done, stop: true})
	for _, id := range slices.Sorted(maps.Keys(g.ids)) {
		if en := c.contenders[id]; en != nil {
			en.cancelOn = nil
			c.stepContender(en, contender.Input{Kind: contender.Cancel, Err: cmd.cause})
		}
	}
}
