package engine

import (
	"maps"
	"slices"
)

// What the cohort tests (cohort_test.go, package engine_test) read of a
// cohort's inside.

// CohortSeesOthers reports whether a cohort of path (relative to the root)
// knows that another client waits: the listing it asked for showed one, or
// its watch fired since.
func (e *Engine) CohortSeesOthers(path string) bool {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.byPath[path] {
		if c.carrier != nil && c.watchKnown && c.othersWait() {
			return true
		}
	}
	return false
}

// CohortListed reports whether every cohort of path holding a node
// has had the answer to the listing that tells whether another client
// waits.
func (e *Engine) CohortListed(path string) bool {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.byPath[path] {
		if c.carrier != nil && !c.watchKnown {
			return false
		}
	}
	return true
}

// CohortLeases are the leases held now by way of a cohort, one per cohort
// holding a node: the leases passed to holders, which Leases (the loop's
// own: a cohort's node is one carrier lease) does not list. In the order
// of their paths, then of their cohorts.
func (e *Engine) CohortLeases() []*Lease {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var leases []*Lease
	for _, p := range slices.Sorted(maps.Keys(cs.byPath)) {
		for _, c := range cs.byPath[p] {
			if c.holder != nil {
				leases = append(leases, c.holder)
			}
		}
	}
	return leases
}

// LapseTrust ends the watchdog's trust now, as its timer does at the
// deadline: every held lease is lost. Trust comes back at the next reply
// to a request sent in time.
func (e *Engine) LapseTrust() {
	e.trust.mu.Lock()
	defer e.trust.mu.Unlock()
	e.trust.lapse()
}

// CarrierLost reports whether l was passed in a cohort and the lease of
// its node is lost.
func (l *Lease) CarrierLost() bool { return l.carrier != nil && l.carrier.Err() != nil }
