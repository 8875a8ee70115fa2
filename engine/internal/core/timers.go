package core

import (
	"maps"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
)

// Timers: the core names a timer by an id and a duration; the runtime arms
// it on its clock and posts TimerFired with the id. Two kinds exist: the
// close deadline, a parked contender's retry after a backoff, and the
// margin a lost holder has to stop before its node goes.

// after arms a timer and returns its id.
func (c *Core) after(d time.Duration) uint64 {
	c.nextTimer++
	id := c.nextTimer
	c.timers[id] = struct{}{}
	c.rd.Timers = append(c.rd.Timers, TimerAction{ID: id, After: d})
	return id
}

func (c *Core) handleTimer(id uint64) {
	if _, ok := c.timers[id]; !ok {
		return // stopped
	}
	delete(c.timers, id)
	switch id {
	case c.closeTimer:
		c.closeTimer = 0
		for _, en := range c.byID() {
			c.forceEnd(en, contender.ErrClosed)
		}
	case c.pinTimer:
		c.sweepPins()
	default:
		if c.cohortTimer(id) {
			return
		}
		if cid, ok := c.stopAt[id]; ok {
			delete(c.stopAt, id)
			if en := c.contenders[cid]; en != nil {
				c.stepContender(en, contender.Input{Kind: contender.Stopped})
			}
			return
		}
		cid, ok := c.retryAt[id]
		delete(c.retryAt, id)
		if en := c.contenders[cid]; ok && en != nil {
			c.stepContender(en, contender.Input{Kind: contender.Retry})
		}
	}
}

// Retry backoff of a parked contender while the connection seems up: the
// n-th consecutive park waits n×retryStep, at most retryMax. A refusal
// that is not a connection loss is rare (a node or path removed under
// us), so the first retry is quick; a refusal that repeats is likely to
// repeat again, so the wait grows, but stays short enough that a waiter
// is not left long behind a condition that cleared.
const (
	retryStep = 50 * time.Millisecond
	retryMax  = time.Second
)

// park schedules a retry: at the next reconnect, or after a backoff when
// the connection seems up (the loss may not have been reported yet, or the
// server moved the session).
func (c *Core) park(en *entry) {
	if c.closing && !c.connected {
		// Nothing can be sent; closing the session removes the node.
		c.forceEnd(en, contender.ErrClosed)
		return
	}
	if !c.connected {
		return // handleSession retries every parked contender
	}
	if en.attempts < 20 {
		en.attempts++
	}
	c.retryAt[c.after(min(time.Duration(en.attempts)*retryStep, retryMax))] = en.id
}

// stopTimers stops every armed timer, in the order they were armed: the
// core exits.
func (c *Core) stopTimers() {
	for _, id := range slices.Sorted(maps.Keys(c.timers)) {
		c.rd.Timers = append(c.rd.Timers, TimerAction{ID: id, Stop: true})
		delete(c.timers, id)
	}
}
