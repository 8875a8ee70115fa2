package engine

import (
	"cmp"
	"slices"
)

// What the cohort tests (cohort_test.go, package engine_test) read of the
// core's cohorts, on the loop.

// CohortSeesOthers reports whether a cohort of path (relative to the root)
// knows that another client waits: the listing it asked for showed one, or
// its watch fired since.
func (e *Engine) CohortSeesOthers(path string) (others bool) {
	full, _ := e.serverPath(path)
	e.onLoop(func() { _, others = e.core.CohortKnown(full) })
	return others
}

// CohortListed reports whether every cohort of path holding a node that
// asked the listing that tells whether another client waits (under
// YieldToOthers, or lingering) has had its answer.
func (e *Engine) CohortListed(path string) (listed bool) {
	full, _ := e.serverPath(path)
	e.onLoop(func() { listed, _ = e.core.CohortKnown(full) })
	return listed
}

// CohortLeases are the leases held now by way of a cohort, one per cohort
// holding a node: the leases passed to holders, which Leases (the loop's
// own: a cohort's node is one carrier lease) does not list. In the order
// of their paths, then of their passing.
func (e *Engine) CohortLeases() (leases []*Lease) {
	e.onLoop(func() {
		for _, id := range e.core.CohortHolders() {
			leases = append(leases, e.leases[id])
		}
	})
	slices.SortStableFunc(leases, func(a, b *Lease) int { return cmp.Compare(a.path, b.path) })
	return leases
}

// LapseTrust ends the watchdog's trust now, as its timer does at the
// deadline: every held lease is lost. Trust comes back at the next reply
// to a request sent in time.
func (e *Engine) LapseTrust() {
	e.watchdog.mu.Lock()
	defer e.watchdog.mu.Unlock()
	e.watchdog.lapse(ErrLost)
}

// HoldLoop holds the loop still between two events until the returned
// release is called: no event is taken meanwhile.
func (e *Engine) HoldLoop() (release func()) {
	held, gate := make(chan struct{}), make(chan struct{})
	go e.onLoop(func() { close(held); <-gate })
	<-held
	return func() { close(gate) }
}
