package core

import (
	"strings"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/queue"
)

// Local handoff: a holder of this engine lets go, and the waiter of this
// engine that its recipe found Next behind it is granted on the delete's
// reply, without listing the lock path again (see Decision.Next).

// deletion is the delete reply the core is handling, if any.
type deletion struct {
	path string
	ok   bool  // the request deleted the node
	held bool  // the node was a holder's
	zxid int64 // the greatest zxid read once the reply came
}

// gone tells the contenders of this engine that wait on node, a node of
// this engine, that it is gone (or no longer known). A waiter whose Decider
// found it Next behind a holder whose release deleted the node is granted
// at once, if the handoff rule allows (see Decision.Next): its token is the
// greatest zxid read so far, which is at least the deletion's (greater than
// any token the previous holder had) and less than the zxid of this
// waiter's own deletion, not yet made (so less than the next holder's).
// Every other waiter lists again.
func (c *Core) gone(node string) {
	delete(c.nodes, node)
	ids := c.localWatch[node]
	delete(c.localWatch, node)
	if len(ids) == 0 {
		return
	}
	handoff := c.deleted.path == node && c.deleted.ok && c.deleted.held && c.mayHandOff(node)
	for _, id := range ids {
		en := c.contenders[id]
		if en == nil {
			continue
		}
		en.watching, en.local = "", false
		if handoff && en.c.Next() && en.c.Phase() == contender.Waiting {
			c.stepContender(en, contender.Input{Kind: contender.Handoff, Pzxid: c.deleted.zxid})
			continue
		}
		c.stepContender(en, contender.Input{Kind: contender.WatchFired})
	}
}

// mayHandOff reports whether the departure of node, a holder's, may grant
// a waiter that is Next behind it without listing again: node is of an
// exclusive kind (a mutex, a writer, or an election's leader: one latch
// node leads at a time), and no node with a borrowed number of this engine
// may sit beside it unseen (see Decision.Next).
func (c *Core) mayHandOff(node string) bool {
	i := strings.LastIndexByte(node, '/')
	if i < 0 {
		return false
	}
	n, ok := queue.Parse(node[i+1:])
	exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch
	return ok && exclusive && c.borrowed[node[:i]] == 0
}
