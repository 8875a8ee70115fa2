package core

import (
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// Cold lock paths: a key locked once (a job id, an order id) has no lock
// path until its first acquisition makes one. The create of a node on a
// path the engine has no sign of is sent cold (Op.Cold): one multi makes
// the path, as a container, and then the node. Two facts of that one
// transaction let the contender hold without listing: the container's
// create succeeded, so the path did not exist an instant before, and no
// other client's request runs inside a multi, so the node was the path's
// only child when it was made (the runtime reports it Fresh, numbered 0).
// Any holder before on the same path had its node under a znode that is
// gone, so it was gone too. A guess wrong the other way (the path exists:
// another client's key, or one made by this engine longer ago than the
// engine remembers) makes the server refuse the multi, and the runtime
// sends it again without the container: one round trip, never a wrong
// grant; the contender then lists as usual. A path is never made without
// the node in the same transaction, so a path of ours always had a child,
// and the server reaps it once empty: an acquisition cancelled meanwhile
// leaves nothing else behind. DESIGN.md, "Cold keys", says it in full.

// warmPaths bounds the lock paths the core remembers to exist: a FIFO
// of the last paths a create of its own was made on. A path forgotten is
// only guessed cold, at the cost of one round trip.
const warmPaths = 4096

// warmSet is the lock paths known to have existed lately.
type warmSet struct {
	has  map[string]struct{}
	ring []string
	next int
}

func (w *warmSet) contains(p string) bool {
	_, ok := w.has[p]
	return ok
}

// remove forgets p; its slot in the ring goes when its turn comes.
func (w *warmSet) remove(p string) { delete(w.has, p) }

func (w *warmSet) add(p string) {
	if w.contains(p) {
		return
	}
	if w.has == nil {
		w.has = make(map[string]struct{})
		w.ring = make([]string, warmPaths)
	}
	if old := w.ring[w.next]; old != "" {
		delete(w.has, old)
	}
	w.ring[w.next] = p
	w.has[p] = struct{}{}
	w.next = (w.next + 1) % len(w.ring)
}

// cold reports whether a create on lockPath goes with its lock path: the
// engine has no sign the path exists. A create answered there lately is
// one, and so is anything of the engine's on the path now (a create or
// delete in flight, a listing).
func (c *Core) cold(lockPath string) bool {
	return !c.warm.contains(lockPath) && c.changing[lockPath] == 0 && c.listings[lockPath] == nil
}

// prunes reports whether the delete of en's node deletes its lock path
// too (Op.Prune): the node was made with the path, so the path is a
// container of this engine's making that the server would reap once empty
// anyway; deleting it in the node's own request spares the server that
// reaping, a transaction of its own per key. Only while nothing else of
// the engine is on the path: no waiter of its own behind the node, no
// create, delete or listing in flight, no pin, and no earlier grant on it
// lately (a path cycled on is kept, and pinned at its second grant).
// Another client's node there makes the server refuse it, and the runtime
// sends the delete again alone. Only with Config.Prune, which the engine
// leaves off: kazoo's locks fail an acquire on a path gone since they
// made sure of it (see Config.Prune).
func (c *Core) prunes(en *entry, node string) bool {
	lockPath := en.c.LockPath()
	if _, made := c.made[en.id]; !made || !c.cfg.Prune || c.localWatch[node] != nil || c.changing[lockPath] > 0 || c.listings[lockPath] != nil {
		return false
	}
	if v := c.views[lockPath]; v != nil && (v.pin != pinNone || v.grants > 1) {
		return false
	}
	return true
}

// deletedPath notes a delete's reply: a lock path deleted with the node
// is made again by the next create.
func (c *Core) deletedPath(d input.OpDone, lockPath string) {
	if d.Pruned {
		c.warm.remove(lockPath)
	}
}

// createdFresh notes a create's reply before its contender steps on it:
// the path exists; a node made with its path, numbered 0, was the path's
// only child (in.Fresh: the machine holds on it without a listing, unless
// an expiry came between), and its delete may take the path (prunes).
func (c *Core) createdFresh(d input.OpDone, lockPath string, in *contender.Input) {
	if d.Outcome != input.OK {
		return
	}
	c.warm.add(lockPath)
	if n, ok := queue.Parse(d.Name); ok && d.Fresh && n.Seq == 0 {
		in.Fresh, in.Pzxid = true, d.Zxid
		if c.made == nil {
			c.made = make(map[uint64]struct{})
		}
		c.made[d.Contender] = struct{}{}
	}
}
