package core

import (
	"bytes"
	"path"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
)

// handleOpDone hands a request's reply to the contender, or contenders,
// that wait for it.
func (c *Core) handleOpDone(d input.OpDone) {
	in := contender.Input{Outcome: d.Outcome, Err: d.Err}
	switch d.Op {
	case input.OpList:
		if d.Contender != 0 {
			// Answered from what the core knows (see predictedListing).
			in.Kind, in.Children, in.Pzxid, in.Predicted = contender.Listed, d.Children, d.Pzxid, true
			in.Listing = c.parseListing(d.Path, d.Children)
			break
		}
		c.listed(d, in)
		return
	case input.OpPin, input.OpUnpin:
		c.pinAnswered(d, path.Dir(d.Path))
		return
	case input.OpCreate:
		in.Kind, in.Name = contender.Created, d.Name
		lockPath := path.Dir(d.Path)
		c.commit.createReturned(lockPath)
		c.createAnswered(d, lockPath)
		defer c.unverify(lockPath, d.Contender)
		c.createdFresh(d, lockPath, &in)
	case input.OpRecover:
		in.Kind, in.Children, in.Pzxid, in.Name, in.Foreign = contender.Listed, d.Children, d.Pzxid, d.Name, d.Foreign
	case input.OpWatch:
		// A revocation request writes a node's data too, moving its
		// version as a mark does: such a node is held, whatever its parity.
		in.Kind, in.Version, in.Revoked = contender.WatchSet, d.Version, bytes.Equal(d.Data, nodename.RevokeData)
	case input.OpWatchChildren:
		in.Kind, in.Children, in.Pzxid, in.ChildWatch = contender.WatchSet, d.Children, d.Pzxid, true
		in.Listing = c.parseListing(d.Path, d.Children)
	case input.OpRevokeWatch:
		c.revokeWatchDone(d)
		return
	case input.OpCohortWatch:
		c.cohortWatched(d)
		return
	case input.OpMark:
		c.marked(d)
		return
	case input.OpDelete:
		in.Kind = contender.Deleted
		c.deleteAnswered(d, path.Dir(d.Path))
		c.deletedPath(d, path.Dir(d.Path))
		// A holder's node deleted by our own request: the waiter next in
		// line behind it, if ours, is granted on this reply (see gone).
		en := c.contenders[d.Contender]
		c.deleted = deletion{path: d.Path, ok: in.Outcome == input.OK,
			held: en != nil && en.c.Granted() && en.c.NodePath() == d.Path, zxid: d.Zxid}
		defer func() { c.deleted = deletion{} }()
	}
	if en := c.contenders[d.Contender]; en != nil {
		c.stepContender(en, in)
		if in.Fresh && en.c.Phase() != contender.Listing {
			c.rd.Counts.Predicted++ // held (or let go) on its own node: no listing
		}
	}
}

// marked: the reply to a Mark or Unmark of a cohort's node. A write
// refused, or of unknown fate, leaves the parity of the node's data
// version saying nothing; so does one answered with the wrong parity,
// since another client wrote the node too (a revocation request does):
// either way the machine hears MarkFailed, and the node lingers no more.
func (c *Core) marked(d input.OpDone) {
	odd := false // what the write was to make the version: odd marks
	if cr := c.coh.carriers[d.Contender]; cr != nil && len(cr.marks) > 0 {
		odd = cr.marks[0]
		cr.marks = cr.marks[1:]
	}
	switch {
	case d.Outcome == input.NoNode:
	case d.Outcome == input.OK && contender.Lingering(d.Version) == odd:
	default:
		c.log(LevelDebug, "marking a cohort's node", "node", d.Path, "outcome", d.Outcome, "version", d.Version)
		c.stepCohorts(&cohort.Input{Kind: cohort.MarkFailed, Carrier: d.Contender})
	}
}
