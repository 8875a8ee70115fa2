package core

import (
	"slices"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Watches: a waiter watches the one node whose departure may let it in.
// A node of this engine is watched without asking the server (its owner
// reports its departure: localWatch); any other node with a data watch,
// or a lock path with a children watch, on the server (watchers).

// watch carries out a machine's Watch effect.
func (c *Core) watch(en *entry, ef contender.Effect) {
	c.unwatch(en)
	en.watching = ef.Path
	if owner, ok := c.nodes[ef.Path]; ok && owner != en.id && !ef.Children {
		// The node is our own: its owner tells us when it goes, so no
		// watch is asked of the server. The reply is made up here. The
		// owner's copy of the path is shared: a queue of thousands keeps
		// one string per node.
		if o := c.contenders[owner]; o != nil {
			shared := o.c.NodePath()
			en.c.ShareWatch(shared)
			ef.Path, en.watching = shared, shared
		}
		en.local = true
		c.localWatch[ef.Path] = append(c.localWatch[ef.Path], en.id)
		c.rd.Counts.LocalWatches++
		c.rd.Loopback = append(c.rd.Loopback, input.OpDone{Op: input.OpWatch, Contender: en.id, Path: ef.Path})
		return
	}
	c.watchers[ef.Path] = append(c.watchers[ef.Path], en.id)
	kind := input.OpWatch
	if ef.Children {
		kind = input.OpWatchChildren
	}
	c.commit.submit(&c.rd, Op{Kind: kind, ID: en.id, Path: ef.Path})
}

// watchFired hands a watch notification to the contenders watching its
// node, and to the revocable holder of that node, if any.
func (c *Core) watchFired(ev input.WatchFired) {
	if id, ok := c.revokers[ev.Path]; ok {
		delete(c.revokers, ev.Path)
		if en := c.contenders[id]; en != nil && ev.Type == input.NodeDataChanged {
			c.watchRevoke(en)
		}
	}
	c.cohortWatchFired(ev.Path)
	ids := c.watchers[ev.Path]
	delete(c.watchers, ev.Path)
	for _, id := range ids {
		if en := c.contenders[id]; en != nil {
			en.watching = ""
			c.stepContender(en, contender.Input{Kind: contender.WatchFired})
		}
	}
}

func (c *Core) unwatch(en *entry) {
	if en.watching == "" {
		return
	}
	watchers := c.watchers
	if en.local {
		watchers = c.localWatch
	}
	ids := slices.DeleteFunc(watchers[en.watching], func(id uint64) bool { return id == en.id })
	if len(ids) == 0 {
		delete(watchers, en.watching)
	} else {
		watchers[en.watching] = ids
	}
	en.watching, en.local = "", false
}
