package engine

import (
	"bytes"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/nodename"
)

// Revocation: a revocable holder reads its own node with a data watch; the
// reply, and every change after it, is checked for the revocation request (nodename.RevokeData).

// watchRevoke sends a revocable holder's revocation watch.
func (c *core) watchRevoke(en *entry) {
	if en.c.Phase() != contender.Held || en.revoked {
		return
	}
	path := en.c.NodePath()
	en.revokeWatch = true
	c.revokers[path] = en.id
	c.commit.submit(&c.rd, op{kind: input.OpRevokeWatch, id: en.id, path: path})
}

func (c *core) revokeWatchDone(d input.OpDone) {
	en := c.contenders[d.Contender]
	if en == nil || en.lease == nil || en.c.Phase() != contender.Held || en.c.NodePath() != d.Path {
		return
	}
	switch {
	case d.Outcome == input.OK && bytes.Equal(d.Data, nodename.RevokeData):
		delete(c.revokers, d.Path)
		en.revoked = true
		c.notify(notice{kind: noteRevoked, lease: en.lease})
		c.report(en, events.Report{Kind: events.Revoked, Path: en.c.LockPath(), Node: en.c.Node()})
	case d.Outcome == input.ConnLoss:
		// The watch may not be set; look again once connected.
		delete(c.revokers, d.Path)
		c.retryRevoke = append(c.retryRevoke, en.id)
	}
}
