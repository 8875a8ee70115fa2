package core

import (
	"fmt"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// The session as the core sees it: connected or not, the same one or a new
// one after an expiry, and trusted or not by the watchdog.

func (c *Core) handleSession(ev input.SessionChanged) {
	defer c.publishState()
	switch ev.State {
	case input.Connected:
		expired := c.session != 0 && ev.SessionID != c.session
		c.session = ev.SessionID
		c.connected = true
		if c.everReady {
			c.rd.Counts.Reconnects++
		} else {
			c.everReady = true
			c.publishState() // before Start returns
			c.rd.FirstSession = true
		}
		c.log(LevelInfo, "session connected", "session", fmt.Sprintf("%#x", ev.SessionID))
		if expired {
			c.expire()
		}
		for _, en := range c.byID() {
			c.stepContender(en, contender.Input{Kind: contender.Reconnected})
		}
		for _, id := range c.retryRevoke {
			if en := c.contenders[id]; en != nil {
				c.watchRevoke(en)
			}
		}
		c.retryRevoke = c.retryRevoke[:0]
	case input.Disconnected:
		if !c.connected {
			return
		}
		c.connected = false
		c.forgetViews(false)
		c.rd.Counts.Disconnects++
		c.log(LevelInfo, "session disconnected", "session", fmt.Sprintf("%#x", c.session))
		for _, en := range c.byID() {
			c.stepContender(en, contender.Input{Kind: contender.Disconnected})
		}
	case input.Expired:
		c.connected = false
		if c.session != 0 {
			c.expire()
		}
		c.session = 0
	}
}

// expire tells every contender that the session, and its nodes, are gone.
func (c *Core) expire() {
	c.log(LevelWarn, "session expired", "session", fmt.Sprintf("%#x", c.session))
	c.rd.Counts.Expirations++
	c.session = 0
	c.lapsed = false
	// Watches died with the session; the client already dropped them. Our
	// nodes died too.
	clear(c.watchers)
	clear(c.localWatch)
	clear(c.nodes)
	c.forgetViews(true)
	for _, en := range c.byID() {
		en.watching, en.local = "", false
		c.stepContender(en, contender.Input{Kind: contender.Expired})
	}
}

// handleTrust steps every contender as the watchdog saw the session: when
// it lapsed, held leases are already lost (the watchdog closed their Lost
// channels) and their machines park the deletion of their nodes; no waiter
// is granted until answers resume.
//
// A lapse the server's word caused (a handshake said the session expired)
// is that expiry, reported as one: the expiry is handled here, and the
// client's expiry event that follows finds the session already gone. A
// lapse by silence is reported as a lapse, its own state: the session may
// well live on, and answer again.
func (c *Core) handleTrust(ev input.TrustChanged) {
	defer c.publishState()
	c.untrusted = ev.Lapsed
	if ev.Lapsed {
		c.stopMargin = ev.Margin
	}
	c.lapsed = ev.Lapsed && !ev.Expired && c.session != 0
	kind := contender.Trusted
	switch {
	case ev.Lapsed && ev.Expired:
		kind = contender.Untrusted
	case ev.Lapsed:
		kind = contender.Untrusted
		c.rd.Counts.Untrusted++
		c.log(LevelWarn, "session trust lapsed: leases lost; the session may still live", "session", fmt.Sprintf("%#x", c.session))
	case c.everReady:
		c.log(LevelInfo, "session trusted again", "session", fmt.Sprintf("%#x", c.session))
	}
	for _, en := range c.byID() {
		c.stepContender(en, contender.Input{Kind: kind})
	}
	if ev.Lapsed && ev.Expired && c.session != 0 {
		c.connected = false
		c.expire()
	}
}
