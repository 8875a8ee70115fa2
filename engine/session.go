package engine

import (
	"fmt"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// The session as the core sees it: connected or not, the same one or a new
// one after an expiry, and trusted or not by the watchdog.

func (c *core) handleSession(ev input.SessionChanged) {
	defer c.publishState()
	switch ev.State {
	case input.Connected:
		expired := c.session != 0 && ev.SessionID != c.session
		c.session = ev.SessionID
		c.connected = true
		if c.everReady {
			c.gauges.reconnects.Add(1)
		} else {
			c.everReady = true
			c.publishState() // before Start returns
			c.rd.FirstSession = true
		}
		c.log.Info("session connected", "session", fmt.Sprintf("%#x", ev.SessionID))
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
		c.gauges.disconnects.Add(1)
		c.log.Info("session disconnected", "session", fmt.Sprintf("%#x", c.session))
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
func (c *core) expire() {
	c.log.Warn("session expired", "session", fmt.Sprintf("%#x", c.session))
	c.gauges.expirations.Add(1)
	c.session = 0
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
func (c *core) handleTrust(ev input.TrustChanged) {
	defer c.publishState()
	c.untrusted = ev.Lapsed
	kind := contender.Trusted
	if ev.Lapsed {
		kind = contender.Untrusted
		c.gauges.untrusted.Add(1)
		c.log.Warn("session no longer trusted: leases lost", "session", fmt.Sprintf("%#x", c.session))
	} else if c.everReady {
		c.log.Info("session trusted again", "session", fmt.Sprintf("%#x", c.session))
	}
	for _, en := range c.byID() {
		c.stepContender(en, contender.Input{Kind: kind})
	}
}
