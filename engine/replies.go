package engine

import (
	"path"

	"github.com/turnstile-go/turnstile/events"
)

// handleOpDone hands a request's reply to the contender, or contenders,
// that wait for it.
func (c *core) handleOpDone(d events.OpDone) {
	in := input{outcome: d.Outcome, err: d.Err}
	switch d.Op {
	case events.OpList:
		if d.Contender != 0 {
			// Answered from what the core knows (see predictedListing).
			in.kind, in.children, in.pzxid = inListed, d.Children, d.Pzxid
			in.listing = c.parseListing(d.Path, d.Children)
			break
		}
		c.listed(d, in)
		return
	case events.OpPin, events.OpUnpin:
		c.pinAnswered(d, path.Dir(d.Path))
		return
	case events.OpCreate:
		in.kind, in.name = inCreated, d.Name
		lockPath := path.Dir(d.Path)
		c.commit.createAnswered(lockPath)
		c.createAnswered(d, lockPath)
		defer c.unverify(lockPath, d.Contender)
	case events.OpCreateParents:
		// One creation serves every contender that found the path missing.
		in.kind = inParents
		waiting := c.parents[d.Path]
		delete(c.parents, d.Path)
		for _, id := range waiting {
			if en := c.contenders[id]; en != nil {
				c.stepContender(en, in)
			}
		}
		return
	case events.OpRecover:
		in.kind, in.children, in.pzxid, in.name, in.foreign = inListed, d.Children, d.Pzxid, d.Name, d.Foreign
	case events.OpWatch:
		in.kind = inWatchSet
	case events.OpWatchChildren:
		in.kind, in.children, in.pzxid, in.childWatch = inWatchSet, d.Children, d.Pzxid, true
		in.listing = c.parseListing(d.Path, d.Children)
	case events.OpRevokeWatch:
		c.revokeWatchDone(d)
		return
	case events.OpDelete:
		in.kind = inDeleted
		c.deleteAnswered(d, path.Dir(d.Path))
		// A holder's node deleted by our own request: the waiter next in
		// line behind it, if ours, is granted on this reply (see gone).
		en := c.contenders[d.Contender]
		c.deleted = deletion{path: d.Path, ok: in.outcome == outOK,
			held: en != nil && en.c.granted && en.c.full == d.Path, zxid: d.Zxid}
		defer func() { c.deleted = deletion{} }()
	}
	if en := c.contenders[d.Contender]; en != nil {
		c.stepContender(en, in)
	}
}
