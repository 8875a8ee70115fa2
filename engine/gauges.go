package engine

import (
	"sync/atomic"

	"github.com/turnstile-go/turnstile/engine/internal/core"
)

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
	// Untrusted counts lapses of trust (StateLapsed): no server answered
	// the session for so long that the engine stopped trusting it (see
	// Config.LostMargin), and every lease held then was lost, before the
	// server could expire the session. The session may have lived on; a
	// lapse is not counted as an expiry.
	Untrusted uint64
	// Expirations counts sessions that ended under the engine because the
	// server said they expired (StateExpired), and every lease they held
	// was lost with their nodes.
	Expirations uint64
}

// Sessions returns what happened to the engine's session so far. It is safe
// to call from any goroutine while the engine runs.
func (e *Engine) Sessions() SessionStats {
	e = e.or()
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
func (e *Engine) InFlight() int { return int(e.or().gauges.inFlight.Load()) }

// CohortStats counts what cohorting did since Start.
type CohortStats struct {
	// Carriers counts grants of a node to a cohort.
	Carriers uint64
	// Passes counts leases passed from one holder to the next without a
	// ZooKeeper request.
	Passes uint64
	// Yielded counts grants that went back, local waiters still queued
	// (under CohortConfig.YieldToOthers) or the node lingering
	// (CohortConfig.Linger), because another client was seen waiting;
	// Bounded, those that went
	// back at MaxPasses or MaxHold (or lost the session's trust, or
	// made way for a downgrade); Renewed, those that passed on past
	// MaxHold, nobody else known to wait (see CohortConfig.MaxHold).
	Yielded, Bounded, Renewed uint64
	// Waiting is the acquisitions queued in cohorts now, behind a node of
	// this engine, without one of their own.
	Waiting int64
}

// CohortStats returns what cohorting did so far, as the loop last stored
// it: an acquisition Acquire just returned for may not be queued yet. It
// is safe to call from any goroutine.
func (e *Engine) CohortStats() CohortStats {
	if e.unstarted() {
		return CohortStats{}
	}
	g := &e.cohortStats
	return CohortStats{Carriers: g.carriers.Load(), Passes: g.passes.Load(), Yielded: g.yielded.Load(), Bounded: g.bounded.Load(),
		Renewed: g.renewed.Load(), Waiting: g.waiting.Load()}
}

// cohortGauges are the cohort machine's counts, as the loop last stored
// them at the end of a turn: read from any goroutine, each on its own.
type cohortGauges struct {
	carriers, passes, yielded, bounded, renewed atomic.Uint64
	waiting                                     atomic.Int64
	last                                        core.CohortStats // the loop's: what it stored last
}

// store keeps s, on the loop.
func (g *cohortGauges) store(s core.CohortStats) {
	if s == g.last {
		return
	}
	g.last = s
	g.carriers.Store(s.Carriers)
	g.passes.Store(s.Passes)
	g.yielded.Store(s.Yielded)
	g.bounded.Store(s.Bounded)
	g.renewed.Store(s.Renewed)
	g.waiting.Store(s.Waiting)
}
