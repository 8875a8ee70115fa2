package engine

import "sync/atomic"

// gauges are the figures the engine keeps for monitoring beyond Stats. A
// metrics exporter reads them while the loop runs, so each is an atomic:
// the loop (or, for inFlight, an executor goroutine) changes it, any
// goroutine may read it.
type gauges struct {
	inFlight    atomic.Int64 // requests started by the executor and not yet answered
	reconnects  atomic.Uint64
	disconnects atomic.Uint64
	expirations atomic.Uint64
	untrusted   atomic.Uint64
}

// SessionStats counts what happened to the engine's ZooKeeper session
// since Start.
type SessionStats struct {
	// Disconnects counts connections to a server that dropped while the
	// session was in use.
	Disconnects uint64
	// Reconnects counts connections made again after a disconnect, to the
	// same session or, after an expiry, to a new one. The first connection
	// is not one.
	Reconnects uint64
	// Untrusted counts disconnections that lasted so long that the engine
	// stopped trusting the session (see Config.LostMargin): every lease held
	// then was lost, before the server could expire the session.
	Untrusted uint64
	// Expirations counts sessions that ended under the engine: the server
	// expired them, and every lease they held was lost with their nodes.
	Expirations uint64
}

// Sessions returns what happened to the engine's session so far. It is safe
// to call from any goroutine while the engine runs.
func (e *Engine) Sessions() SessionStats {
	return SessionStats{
		Disconnects: e.gauges.disconnects.Load(),
		Reconnects:  e.gauges.reconnects.Load(),
		Untrusted:   e.gauges.untrusted.Load(),
		Expirations: e.gauges.expirations.Load(),
	}
}

// InFlight is the number of ZooKeeper requests the engine has sent and not
// yet had answered (a multi request counts once), at most
// Config.MaxInFlight. Reads made through Children, Data and SetData are not
// counted. It is safe to call from any goroutine while the engine runs.
func (e *Engine) InFlight() int { return int(e.gauges.inFlight.Load()) }
