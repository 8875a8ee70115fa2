package core

import (
	"maps"
	"math"
	"path"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// The listing-free cycle. A contender's sequence number is the count of
// children its lock path ever had created when its create was applied
// (ZooKeeper's stored child version; a listing reports it as Cversion =
// 2×creates − children). So when the core knows a path's children and
// that count, as of some instant, and its own create comes back with
// exactly the number the count predicts, no other client created a child
// in between, and the children at the create are the known ones plus its
// own: the contender decides on them with no listing, and a repeated
// cycle on a path is a create and a delete, both batchable.
//
// What the number cannot show, and why it is still sound:
//   - Another client's delete leaves the count alone, so a known child may
//     be gone. A stale child only ever keeps the contender waiting: it
//     watches it, the watch finds it gone, and the contender lists the
//     path. Only a child missing from what is known could let a contender
//     in wrongly, and every child made since the known instant moved the
//     count.
//   - A container lock path that empties may be removed by the server and
//     made again, its count starting from zero, which could meet the
//     prediction by chance. So the core predicts only on a path it has
//     pinned: an ephemeral child of its own session (nodename.PinName) that
//     keeps the path from emptying. What is known must come from a listing
//     that shows the pin, answered while it was alive, and the pin is
//     deleted only once the path is idle.
//   - Order: the core predicts a create only when none of its own creates
//     or deletes on the path is in flight, and takes a listing as known
//     only when none was sent or in flight while it was (its requests run
//     on goroutines of their own, so the order they reach the server is
//     not the order the core sent them). A disconnection forgets what is
//     known; an expiry forgets the pins too.
//
// The grant's fencing token is the greatest zxid read once the create's
// reply came: at least the create's, so above the deletion of the node
// that held before (gone before the create, or the contender would not
// hold), and below the deletion of this contender's own node, sent later.
//
// A path is pinned at its second grant within Config.PinIdle, so a lock
// taken once costs no pin; a path no contender of the engine touched for
// PinIdle is unpinned. Config.NoPin turns all of it off.

// DefaultPinIdle is Config.PinIdle's default: how long a pinned lock path
// may go without a contender of this engine before its pin is deleted. A pin costs a create and a
// delete, so one is worth keeping only for a path cycled on again soon;
// two seconds keeps it across the gaps of a busy loop, and holds no
// container of an idle path for longer than a blink of the server's
// container reaping, which runs once a minute by default.
const DefaultPinIdle = 2 * time.Second

// maxPredictedCreates: past it, the count nears int32's end, where the
// server stops raising it and sequence numbers repeat; the core lists.
const maxPredictedCreates = math.MaxInt32 - 1<<16

type pinState uint8

const (
	pinNone      pinState = iota
	pinCreating           // its create is in flight
	pinAlive              // created, and not asked to go
	pinUncertain          // its create's reply was lost: it may exist
	pinDeleting           // its delete is in flight
)

// pathView is what the core knows of one lock path.
type pathView struct {
	pin pinState
	// pinName is the pin's name while pin is not pinNone. A fresh name per
	// pin, not the session's, so that a pin whose create the core sent
	// under a session that had already ended (the core hears of an expiry
	// after the fact), and that the server applied under the next one, is
	// never taken for the pin of a later view: its reply finds no view
	// naming it, and the core deletes it.
	pinName string
	grants  int  // grants on the path since the last sweep: the second pins it
	used    bool // a contender of this engine touched the path since the last sweep

	// known: children were exactly the path's children (pins and other
	// applications' names included), and creates the count of children
	// ever created under it, at one instant of the server.
	known    bool
	children []string
	creates  int64

	// expect is the contender whose create was sent with a prediction, and
	// its predicted number; verified the one whose create met it, whose
	// next listing the core answers, with token verifiedZxid.
	expect, verified uint64
	expectSeq        int64
	verifiedZxid     int64
}

// pinnable reports whether a contender's recipe may have its path pinned:
// the mutex and read-write locks, whose every client ignores or sorts last
// a child it cannot parse. Never a semaphore's lease path (Curator counts
// its children as leases) nor an election's.
func pinnable(prefix string) bool {
	return prefix == nodename.Mutex || prefix == nodename.Read || prefix == nodename.Write
}

// viewFor is the view of a lock path a contender of prefix works on,
// made if needed; nil when the path is not to be pinned.
func (c *Core) viewFor(path, prefix string) *pathView {
	if c.cfg.NoPin || !pinnable(prefix) {
		return nil
	}
	v := c.views[path]
	if v == nil {
		v = &pathView{}
		c.views[path] = v
		c.armPinTimer()
	}
	v.used = true
	return v
}

// sendingCreate notes a create of en's; with a prediction when one holds.
func (c *Core) sendingCreate(en *entry) {
	if v := c.viewFor(en.c.LockPath(), en.c.Prefix()); v != nil && v.known && c.changing[en.c.LockPath()] == 0 &&
		v.pin == pinAlive && !en.c.Borrowed() && v.creates < maxPredictedCreates {
		v.expect, v.expectSeq = en.id, v.creates
	}
	c.sendingChange(en.c.LockPath())
}

// sendingChange notes a create or delete of a child of path, sent now: a
// listing of path in flight may or may not show it.
func (c *Core) sendingChange(path string) {
	c.changing[path]++
	if l := c.listings[path]; l != nil {
		l.unordered = true
	}
}

// changeAnswered notes the reply to a create or delete of a child of path.
func (c *Core) changeAnswered(path string) {
	if c.changing[path]--; c.changing[path] <= 0 {
		delete(c.changing, path)
	}
}

// createAnswered updates the view with a create's reply, before the
// contender steps on it.
func (c *Core) createAnswered(d input.OpDone, lockPath string) {
	c.changeAnswered(lockPath)
	v := c.views[lockPath]
	if v == nil {
		return
	}
	predicted := v.expect == d.Contender
	v.expect = 0
	if d.Outcome != input.OK || !predicted || !v.known {
		v.known = false
		return
	}
	n, ok := queue.Parse(d.Name)
	if !ok || n.Seq != v.expectSeq {
		// Another client created a child since the known instant.
		v.known = false
		return
	}
	v.children = append(v.children, d.Name)
	v.creates = n.Seq + 1
	v.verified, v.verifiedZxid = d.Contender, d.Zxid
}

// unverify ends a verified create's claim once its contender stepped on
// the reply: only the listing asked right then is answered from the view.
func (c *Core) unverify(lockPath string, id uint64) {
	if v := c.views[lockPath]; v != nil && v.verified == id {
		v.verified = 0
	}
}

// deleteAnswered updates the view with the reply to the delete of one of
// this engine's nodes: gone, it is no longer among the children.
func (c *Core) deleteAnswered(d input.OpDone, lockPath string) {
	c.changeAnswered(lockPath)
	v := c.views[lockPath]
	if v == nil {
		return
	}
	if d.Outcome != input.OK {
		v.known = false
		return
	}
	name := d.Path[len(lockPath)+1:]
	if i := slices.Index(v.children, name); i >= 0 {
		v.children = slices.Delete(v.children, i, i+1)
	}
}

// listingAnswered takes the reply to listing l as known when no create or
// delete of this engine on the path was in flight or sent while it was,
// and the pin shows in it.
func (c *Core) listingAnswered(d input.OpDone, l *listing) {
	v := c.views[d.Path]
	if v == nil {
		return
	}
	v.known = d.Outcome == input.OK && !l.unordered && c.changing[d.Path] == 0 && v.pin == pinAlive &&
		slices.Contains(d.Children, v.pinName) && (int64(d.Cversion)+int64(len(d.Children)))%2 == 0
	if v.known {
		v.children = slices.Clone(d.Children)
		v.creates = (int64(d.Cversion) + int64(len(d.Children))) / 2
	}
}

// predictedListing answers the listing a contender asks for right after
// its create met the prediction: the known children, as a reply addressed
// to it alone. False when there is none to give.
func (c *Core) predictedListing(path string, id uint64) bool {
	v := c.views[path]
	if v == nil || v.verified != id || !v.known {
		return false
	}
	v.verified = 0
	c.rd.Counts.Predicted++
	c.rd.Loopback = append(c.rd.Loopback, input.OpDone{Op: input.OpList, Contender: id, Path: path,
		Children: slices.Clone(v.children), Pzxid: v.verifiedZxid, Outcome: input.OK})
	return true
}

// countGrant counts a grant on a path: the second within PinIdle pins it.
func (c *Core) countGrant(en *entry) {
	v := c.views[en.c.LockPath()]
	if v == nil {
		return
	}
	v.grants++
	if v.grants >= 2 && v.pin == pinNone && c.connected && !c.closing && c.session != 0 {
		v.pin, v.pinName = pinCreating, nodename.PinName(c.cfg.NewID())
		c.sendingChange(en.c.LockPath())
		c.commit.submit(&c.rd, Op{Kind: input.OpPin, Path: en.c.LockPath() + "/" + v.pinName})
	}
}

// pinAnswered takes the reply to a pin's create or delete.
func (c *Core) pinAnswered(d input.OpDone, path string) {
	c.changeAnswered(path)
	v := c.views[path]
	if v == nil || v.pin == pinNone || d.Path != path+"/"+v.pinName {
		c.strayAnswered(d)
		return
	}
	v.known = false // its place among other clients' changes is unknown
	switch {
	case d.Op == input.OpUnpin && d.Outcome != input.OK && d.Outcome != input.NoNode:
		// Not known to be deleted (the connection dropped with the delete
		// in flight): the next sweep deletes it again.
		v.pin = pinUncertain
	case d.Op == input.OpUnpin:
		v.pin, v.pinName = pinNone, ""
		if !v.used {
			delete(c.views, path)
		}
	case d.Outcome == input.OK, d.Outcome == input.NodeExists:
		v.pin = pinAlive
	case d.Outcome == input.ConnLoss:
		v.pin = pinUncertain
	default:
		v.pin, v.pinName = pinNone, ""
	}
}

// strayAnswered takes the reply to a pin's create or delete that no view
// names: a pin of a view an expiry forgot. Made, or perhaps made (the
// reply was lost), under the next session, it is deleted, not kept, and
// deleted again until a delete is answered: nothing else would ever
// remove it while the session lives.
func (c *Core) strayAnswered(d input.OpDone) {
	switch {
	case d.Op == input.OpPin && (d.Outcome == input.OK || d.Outcome == input.NodeExists || d.Outcome == input.ConnLoss):
		c.strayPins[d.Path] = false
		c.unpinStray(d.Path)
	case d.Op == input.OpUnpin && (d.Outcome == input.OK || d.Outcome == input.NoNode):
		delete(c.strayPins, d.Path)
	case d.Op == input.OpUnpin:
		if _, ok := c.strayPins[d.Path]; ok {
			c.strayPins[d.Path] = false // the sweep asks again
		}
	}
	c.armPinTimer()
}

// unpinStray sends the deletion of a stray pin, unless one is in flight
// or the connection is down (then the sweep does).
func (c *Core) unpinStray(pin string) {
	if c.strayPins[pin] || !c.connected {
		return
	}
	c.strayPins[pin] = true
	c.sendingChange(path.Dir(pin))
	c.commit.submit(&c.rd, Op{Kind: input.OpUnpin, Path: pin})
}

// armPinTimer has the sweep run while there is something to sweep.
func (c *Core) armPinTimer() {
	if c.pinTimer == 0 && !c.closing && (len(c.views) > 0 || len(c.strayPins) > 0) {
		c.pinTimer = c.after(c.cfg.PinIdle)
	}
}

// sweepPins runs every PinIdle while views or stray pins exist: a path no
// contender touched since the last sweep loses its pin, then its view; a
// stray pin is deleted again.
func (c *Core) sweepPins() {
	c.pinTimer = 0
	for _, pin := range slices.Sorted(maps.Keys(c.strayPins)) {
		c.unpinStray(pin)
	}
	for _, path := range slices.Sorted(maps.Keys(c.views)) {
		v := c.views[path]
		switch {
		case v.used:
			v.used, v.grants = false, 0
		case (v.pin == pinAlive || v.pin == pinUncertain) && c.connected:
			v.pin = pinDeleting
			v.known = false
			c.sendingChange(path)
			c.commit.submit(&c.rd, Op{Kind: input.OpUnpin, Path: path + "/" + v.pinName})
		case v.pin == pinNone:
			delete(c.views, path)
		}
	}
	c.armPinTimer()
}

// forgetViews: the connection dropped, so replies in flight may be lost
// and what was known may have changed unseen. With expired, the session's
// pins are gone too.
func (c *Core) forgetViews(expired bool) {
	if expired {
		clear(c.views)
		return
	}
	for _, v := range c.views {
		v.known, v.expect, v.verified = false, 0, 0
	}
}
